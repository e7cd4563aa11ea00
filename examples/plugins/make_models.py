#!/usr/bin/env python3
"""Writes the example plugins' ONNX models and their expected outputs.

Each model goes to models/<name>/model.onnx with test_data_set_N/input_K.pb and
output_K.pb, the layout of ONNX backend node tests, so `kiln --plugins
libkiln_example_plugins.so conformance examples/plugins/models` checks them. The
expected outputs are computed here with numpy, independently of the plugin code.

Run from the repository root:  .venv/bin/python examples/plugins/make_models.py
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "models")
DOMAIN = "kiln.examples"  # the plugins' namespace: nodes of this domain map to them
OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)]


def write_case(name, graph, data_sets):
    folder = os.path.join(MODELS, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    model = helper.make_model(graph, opset_imports=OPSETS, producer_name="kiln examples")
    model.ir_version = 8
    onnx.save(model, os.path.join(folder, "model.onnx"))
    for index, (inputs, outputs) in enumerate(data_sets):
        data = os.path.join(folder, f"test_data_set_{index}")
        os.makedirs(data)
        for kind, tensors, values in (("input", graph.input, inputs), ("output", graph.output, outputs)):
            for k, (info, array) in enumerate(zip(tensors, values)):
                tensor = numpy_helper.from_array(array, info.name)
                with open(os.path.join(data, f"{kind}_{k}.pb"), "wb") as f:
                    f.write(tensor.SerializeToString())


def uniform(rng, shape):
    """Random non-zero-mean float32 data in [-1, 1] shifted by 0.25."""
    return (rng.uniform(-1.0, 1.0, size=shape) + 0.25).astype(np.float32)


def copy_concat(rng):
    """A' = A * 2; (copy, concat) = CopyConcat(A', B); out = Relu(concat).

    Dynamic first dimensions a and b: the plugin's output 1 has a + b rows."""
    two = numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")
    nodes = [
        helper.make_node("Mul", ["A", "two"], ["A2"], name="scale_A"),
        helper.make_node("CopyConcat", ["A2", "B"], ["copy", "concat"], name="copy_concat",
                         domain=DOMAIN),
        helper.make_node("Relu", ["concat"], ["relu"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes, "copy_concat",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["a", 4]),
         helper.make_tensor_value_info("B", TensorProto.FLOAT, ["b", 4])],
        [helper.make_tensor_value_info("copy", TensorProto.FLOAT, ["b", 4]),
         helper.make_tensor_value_info("relu", TensorProto.FLOAT, ["a_plus_b", 4])],
        initializer=[two])
    data = []
    for a, b in ((3, 5), (6, 2)):
        A, B = uniform(rng, (a, 4)), uniform(rng, (b, 4))
        concat = np.concatenate([A * np.float32(2.0), B], axis=0)
        data.append(([A, B], [B.copy(), np.maximum(concat, np.float32(0))]))
    write_case("copy_concat", graph, data)


def quantize(x, scale):
    """ONNX QuantizeLinear to int8 with zero point 0 (round half to even, saturate)."""
    return np.clip(np.rint(x / np.float32(scale)), -128, 127).astype(np.int8)


def pool(x, kernel, strides, mode):
    """2-D pooling of NCHW `x` (no padding); average divides the window sum in float32."""
    n, c, h, w = x.shape
    oh, ow = (h - kernel[0]) // strides[0] + 1, (w - kernel[1]) // strides[1] + 1
    out = np.empty((n, c, oh, ow), dtype=np.float32)
    for y in range(oh):
        for z in range(ow):
            window = x[:, :, y * strides[0]:y * strides[0] + kernel[0],
                       z * strides[1]:z * strides[1] + kernel[1]].astype(np.float32)
            if mode == "max":
                out[:, :, y, z] = window.max(axis=(2, 3))
            else:
                out[:, :, y, z] = window.sum(axis=(2, 3)) / np.float32(kernel[0] * kernel[1])
    return out


def quantized_pool(rng, name, kernel, strides, mode, in_scale, out_scale):
    """Y = DequantizeLinear(QuantizedPool(QuantizeLinear(X))): INT8 I/O with scales."""
    inits = [numpy_helper.from_array(np.array(in_scale, dtype=np.float32), "x_scale"),
             numpy_helper.from_array(np.array(out_scale, dtype=np.float32), "y_scale"),
             numpy_helper.from_array(np.array(0, dtype=np.int8), "zero")]
    nodes = [
        helper.make_node("QuantizeLinear", ["X", "x_scale", "zero"], ["xq"], name="quantize"),
        helper.make_node("QuantizedPool", ["xq"], ["yq"], name="pool", domain=DOMAIN,
                         kernel_shape=kernel, strides=strides, mode=mode),
        helper.make_node("DequantizeLinear", ["yq", "y_scale", "zero"], ["Y"], name="dequantize"),
    ]
    oh, ow = (8 - kernel[0]) // strides[0] + 1, (8 - kernel[1]) // strides[1] + 1
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["n", 4, 8, 8])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["n", 4, oh, ow])],
        initializer=inits)
    data = []
    for n in (1, 3):
        X = uniform(rng, (n, 4, 8, 8)) * np.float32(2.0)
        pooled = pool(quantize(X, in_scale), kernel, strides, mode)
        requantized = np.clip(np.rint(pooled * np.float32(in_scale) / np.float32(out_scale)),
                              -128, 127).astype(np.int8)
        data.append(([X], [requantized.astype(np.float32) * np.float32(out_scale)]))
    write_case(name, graph, data)


def float_pool(rng):
    """QuantizedPool on float32 I/O (no scales needed): average 2x2, stride 2."""
    node = helper.make_node("QuantizedPool", ["X"], ["Y"], name="pool", domain=DOMAIN,
                            kernel_shape=[2, 2], mode="average")
    graph = helper.make_graph(
        [node], "quantized_pool_float",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["n", 3, 6, 10])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["n", 3, 3, 5])])
    data = []
    for n in (2,):
        X = uniform(rng, (n, 3, 6, 10))
        data.append(([X], [pool(X, [2, 2], [2, 2], "average")]))
    write_case("quantized_pool_float", graph, data)


def main():
    rng = np.random.default_rng(20261124)
    copy_concat(rng)
    quantized_pool(rng, "quantized_pool_max", [2, 2], [2, 2], "max", 0.02, 0.02)
    quantized_pool(rng, "quantized_pool_average", [3, 3], [2, 2], "average", 0.02, 0.01)
    float_pool(rng)
    for name in sorted(os.listdir(MODELS)):
        onnx.checker.check_model(os.path.join(MODELS, name, "model.onnx"))
    print("wrote", ", ".join(sorted(os.listdir(MODELS))), "under", MODELS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
