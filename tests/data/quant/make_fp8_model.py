#!/usr/bin/env python3
"""Writes the FP8 (float8e4m3fn) test fixture (committed; rerun by hand only when it
changes):

  fp8_mlp.onnx        a two-layer MLP in explicit FP8 quantization (ONNX opset 19):
                        x [N, 20] -> Q/DQ(fp8, sx1) -> MatMul(DQ(w1 fp8 [20, 24], sw1))
                          -> Add(b1) -> Relu -> Q/DQ(fp8, sx2)
                          -> Gemm(DQ(w2 fp8 [10, 24], sw2), b2, transB = 1) -> y [N, 10]
                      per-tensor scales, zero points 0 of type float8e4m3fn, saturate = 1;
                      K = 20 and 24, N = 24 and 10 (none of K a multiple of 16: the
                      CUDA tactic pads). Random weights (seed below).
  fp8_input.npy       a batch of 5 inputs
  fp8_expected.npy    ONNX Runtime's output of fp8_mlp.onnx on fp8_input.npy, operator by
                      operator (graph optimizations off: ONNX Runtime 1.32's extended
                      QDQ fusions change this FP8 graph's result by up to 3.0, while the
                      unoptimized session and a numpy/ml_dtypes simulation agree exactly)

Usage: make_fp8_model.py OUT_DIR   (needs onnx, numpy, ml_dtypes and onnxruntime)
"""
import os
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(20261127)
FP8 = TensorProto.FLOAT8E4M3FN


def fp8_weights(name, shape, std):
    """Float weights quantized per tensor to E4M3 with scale amax / 448."""
    w = RNG.normal(0.0, std, shape).astype(np.float32)
    scale = np.float32(np.abs(w).max() / 448.0)
    codes = (w / scale).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    return [helper.make_tensor(name, FP8, list(shape), codes.tobytes(), raw=True),
            numpy_helper.from_array(np.array(scale, np.float32), name + "_scale")]


def scalar(name, value):
    return numpy_helper.from_array(np.array(value, np.float32), name)


def fp8_zero(name):
    return helper.make_tensor(name, FP8, [], [0.0])


def qdq(x, scale, zero, name):
    """x -> QuantizeLinear -> DequantizeLinear; returns (nodes, dequantized name)."""
    q = helper.make_node("QuantizeLinear", [x, scale, zero], [name + "_q"], name="q_" + name)
    dq = helper.make_node("DequantizeLinear", [name + "_q", scale, zero], [name + "_dq"],
                          name="dq_" + name)
    return [q, dq], name + "_dq"


def fp8_mlp():
    inits = fp8_weights("w1", (20, 24), 0.3) + fp8_weights("w2", (10, 24), 0.3)
    inits += [scalar("sx1", 2.5 / 448), scalar("sx2", 4.0 / 448), fp8_zero("zero"),
              numpy_helper.from_array(RNG.normal(0, 0.2, 24).astype(np.float32), "b1"),
              numpy_helper.from_array(RNG.normal(0, 0.2, 10).astype(np.float32), "b2")]
    nodes, x1 = qdq("x", "sx1", "zero", "x")
    nodes += [
        helper.make_node("DequantizeLinear", ["w1", "w1_scale"], ["w1_dq"], name="dq_w1"),
        helper.make_node("MatMul", [x1, "w1_dq"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="fc1_bias"),
        helper.make_node("Relu", ["hb"], ["hr"], name="relu1"),
    ]
    more, x2 = qdq("hr", "sx2", "zero", "hr")
    nodes += more
    nodes += [
        helper.make_node("DequantizeLinear", ["w2", "w2_scale"], ["w2_dq"], name="dq_w2"),
        helper.make_node("Gemm", [x2, "w2_dq", "b2"], ["y"], name="fc2", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "fp8_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 20])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    model = fp8_mlp()
    path = os.path.join(out, "fp8_mlp.onnx")
    onnx.save(model, path)
    x = RNG.normal(0.0, 1.0, (5, 20)).astype(np.float32)
    np.save(os.path.join(out, "fp8_input.npy"), x)
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    np.save(os.path.join(out, "fp8_expected.npy"), session.run(None, {"x": x})[0])


if __name__ == "__main__":
    main()
