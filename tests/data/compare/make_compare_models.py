#!/usr/bin/env python3
"""Writes the models of the compare and debug tests (tests/cli/test_compare_flow.sh).
Committed; rerun by hand only to change them.

  small_cnn.onnx            Conv+Relu x3, MaxPool, GlobalAveragePool, Flatten, Gemm -> 10
                            logits (input x: 1x3x16x16); random weights
  small_cnn_perturbed.onnx  the same with one weight of conv2 changed by +0.5
  fp16_overflow.onnx        a 12-node MLP (input x: 4x16) whose node 'wide_proj' (MatMul)
                            has weights of magnitude ~2e5, past float16's 65504: in fp16
                            they become inf and the outputs NaN; every other node is fine
                            in fp16 (its input is scaled by 1e-3, so its outputs stay small)

Usage: make_compare_models.py OUT_DIR   (needs onnx and numpy)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(nodes, inits, inputs, outputs, path):
    graph = helper.make_graph(nodes, os.path.basename(path)[:-5], inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="kiln-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def small_cnn(perturb):
    rng = np.random.default_rng(11)
    inits, nodes = [], []

    def weight(name, shape, scale):
        w = (rng.standard_normal(shape) * scale).astype(np.float32)
        if perturb and name == "conv2.w":
            w[0, 0, 1, 1] += 0.5
        inits.append(numpy_helper.from_array(w, name))
        return name

    def conv(x, name, c_in, c_out):
        y = name
        nodes.append(helper.make_node("Conv", [x, weight(name + ".w", (c_out, c_in, 3, 3), 0.3),
                                               weight(name + ".b", (c_out,), 0.1)], [y],
                                      name=name, pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [y], [name + "_relu"], name=name + "_relu"))
        return name + "_relu"

    x = conv("x", "conv1", 3, 8)
    x = conv(x, "conv2", 8, 8)
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], name="pool", kernel_shape=[2, 2],
                                  strides=[2, 2]))
    x = conv("pool", "conv3", 8, 16)
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flat"))
    nodes.append(helper.make_node("Gemm", ["flat", weight("fc.w", (10, 16), 0.5),
                                           weight("fc.b", (10,), 0.1)], ["logits"],
                                  name="classifier", transB=1))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])]
    return nodes, inits, inputs, outputs


def fp16_overflow():
    rng = np.random.default_rng(5)
    inits, nodes = [], []

    def weight(name, shape, scale):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    x = node("MatMul", ["x", weight("fc1.w", (16, 16), 0.3)], "fc1")
    x = node("Relu", [x], "relu1")
    x = node("MatMul", [x, weight("fc2.w", (16, 16), 0.3)], "fc2")
    x = node("Tanh", [x], "tanh2")
    inits.append(numpy_helper.from_array(np.array(1e-3, np.float32), "shrink.k"))
    x = node("Mul", [x, "shrink.k"], "shrink")
    # Weights ~ +-2e5: overflow float16; the product with the shrunk input is ~ +-1e3.
    inits.append(numpy_helper.from_array(
        (np.sign(rng.standard_normal((16, 16))) * rng.uniform(1.2e5, 2.5e5, (16, 16)))
        .astype(np.float32), "wide_proj.w"))
    x = node("MatMul", [x, "wide_proj.w"], "wide_proj")
    # Per row, not a scalar or one factor per column: fold_scale_into_matmul would fold
    # those into wide_proj's weights (and so remove the overflow this model is for).
    inits.append(numpy_helper.from_array(np.full((4, 1), 1e-3, np.float32), "expand.k"))
    x = node("Mul", [x, "expand.k"], "rescale")
    x = node("Tanh", [x], "tanh3")
    x = node("MatMul", [x, weight("fc4.w", (16, 16), 0.3)], "fc4")
    x = node("Sigmoid", [x], "sigmoid4")
    x = node("MatMul", [x, weight("fc5.w", (16, 8), 0.3)], "fc5")
    node("Softmax", [x], "probs", axis=-1)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])]
    outputs = [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [4, 8])]
    return nodes, inits, inputs, outputs


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    save(*small_cnn(False), os.path.join(out, "small_cnn.onnx"))
    save(*small_cnn(True), os.path.join(out, "small_cnn_perturbed.onnx"))
    save(*fp16_overflow(), os.path.join(out, "fp16_overflow.onnx"))


if __name__ == "__main__":
    main()
