#!/usr/bin/env python3
"""Writes the quantization test fixtures (committed; rerun by hand only when a fixture
changes):

  small_cnn.onnx       a float CNN with random weights: Conv+BN+Relu, MaxPool, a residual
                       block, a strided conv, a depthwise conv, GlobalAveragePool, Flatten,
                       Gemm (10 classes); input "input" [N, 3, 16, 16]
  calib/sample_*.npy   8 calibration samples [3, 16, 16]
  small_cnn_qdq.onnx   small_cnn quantized by onnxruntime.quantization.quantize_static
                       (QDQ format, int8 activations and per-channel int8 weights)
  qdq_input.npy        a batch of 4 held-out inputs
  qdq_expected.npy     ONNX Runtime's output of small_cnn_qdq.onnx on qdq_input.npy

Usage: make_quant_models.py OUT_DIR   (needs onnx, numpy and onnxruntime)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(20260124)


def conv_weights(name, out_ch, in_ch, k):
    fan_in = in_ch * k * k
    w = RNG.normal(0.0, np.sqrt(2.0 / fan_in), (out_ch, in_ch, k, k)).astype(np.float32)
    b = RNG.normal(0.0, 0.1, out_ch).astype(np.float32)
    return [numpy_helper.from_array(w, name + "_w"), numpy_helper.from_array(b, name + "_b")]


def conv(name, x, y, out_ch, in_ch, k, stride=1, group=1, inits=None):
    inits.extend(conv_weights(name, out_ch, in_ch // group, k))
    return helper.make_node("Conv", [x, name + "_w", name + "_b"], [y], name=name,
                            kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride, stride],
                            group=group)


def small_cnn():
    inits, nodes = [], []
    nodes.append(conv("conv0", "input", "c0", 8, 3, 3, inits=inits))
    bn = [RNG.uniform(0.5, 1.5, 8), RNG.normal(0, 0.1, 8), RNG.normal(0, 0.1, 8),
          RNG.uniform(0.5, 1.5, 8)]
    for name, value in zip(["bn_scale", "bn_bias", "bn_mean", "bn_var"], bn):
        inits.append(numpy_helper.from_array(value.astype(np.float32), name))
    nodes.append(helper.make_node("BatchNormalization",
                                  ["c0", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["b0"],
                                  name="bn0"))
    nodes.append(helper.make_node("Relu", ["b0"], ["r0"], name="relu0"))
    nodes.append(helper.make_node("MaxPool", ["r0"], ["p0"], name="pool0", kernel_shape=[2, 2],
                                  strides=[2, 2]))
    nodes.append(conv("conv1", "p0", "c1", 8, 8, 3, inits=inits))
    nodes.append(helper.make_node("Relu", ["c1"], ["r1"], name="relu1"))
    nodes.append(conv("conv2", "r1", "c2", 8, 8, 3, inits=inits))
    nodes.append(helper.make_node("Add", ["c2", "p0"], ["a2"], name="add2"))
    nodes.append(helper.make_node("Relu", ["a2"], ["r2"], name="relu2"))
    nodes.append(conv("conv3", "r2", "c3", 16, 8, 3, stride=2, inits=inits))
    nodes.append(helper.make_node("Relu", ["c3"], ["r3"], name="relu3"))
    nodes.append(conv("dwconv4", "r3", "c4", 16, 16, 3, group=16, inits=inits))
    nodes.append(helper.make_node("Relu", ["c4"], ["r4"], name="relu4"))
    nodes.append(helper.make_node("GlobalAveragePool", ["r4"], ["g5"], name="gap5"))
    nodes.append(helper.make_node("Flatten", ["g5"], ["f5"], name="flatten5"))
    fc_w = RNG.normal(0, np.sqrt(1.0 / 16), (10, 16)).astype(np.float32)
    fc_b = RNG.normal(0, 0.1, 10).astype(np.float32)
    inits += [numpy_helper.from_array(fc_w, "fc_w"), numpy_helper.from_array(fc_b, "fc_b")]
    nodes.append(helper.make_node("Gemm", ["f5", "fc_w", "fc_b"], ["logits"], name="fc6",
                                  transB=1))
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="kiln-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def samples(count):
    # Image-like inputs: normalized pixels with a per-channel offset.
    return [(RNG.uniform(0, 1, (3, 16, 16)) - 0.45) / 0.25 for _ in range(count)]


def main(out):
    os.makedirs(os.path.join(out, "calib"), exist_ok=True)
    model = small_cnn()
    float_path = os.path.join(out, "small_cnn.onnx")
    onnx.save(model, float_path)
    calib = [s.astype(np.float32) for s in samples(8)]
    for i, s in enumerate(calib):
        np.save(os.path.join(out, "calib", "sample_%02d.npy" % i), s)

    from onnxruntime import InferenceSession
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter([{"input": s[None]} for s in calib])

        def get_next(self):
            return next(self.items, None)

    # ONNX Runtime's recommended pre-processing folds the BatchNormalization into conv0.
    from onnxruntime.quantization.shape_inference import quant_pre_process
    prepared_path = os.path.join(out, "small_cnn_prepared.onnx")
    quant_pre_process(float_path, prepared_path, skip_symbolic_shape=True)
    qdq_path = os.path.join(out, "small_cnn_qdq.onnx")
    quantize_static(prepared_path, qdq_path, Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8)
    os.remove(prepared_path)
    held_out = np.stack(samples(4)).astype(np.float32)
    np.save(os.path.join(out, "qdq_input.npy"), held_out)
    session = InferenceSession(qdq_path, providers=["CPUExecutionProvider"])
    expected = session.run(None, {"input": held_out})[0]
    np.save(os.path.join(out, "qdq_expected.npy"), expected.astype(np.float32))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
