#!/usr/bin/env python3
"""Writes tiny_bert.onnx: one BERT-style encoder layer (embedding Gather, attention
with dynamic batch and sequence, LayerNormalization, GELU as Div/Erf/Add/Mul/Mul)
with random weights, for the builder's optimization-profile tests. Committed;
rerun by hand only to change it.

Usage: make_builder_models.py OUT_DIR   (needs onnx and numpy)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, HEADS, VOCAB, FFN = 32, 2, 16, 64


def tiny_bert():
    rng = np.random.default_rng(7)
    inits, nodes = [], []

    def weight(name, shape, scale=0.2):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(name, values, dtype=np.int64):
        if any(i.name == name for i in inits):
            return name
        inits.append(numpy_helper.from_array(np.array(values, dtype), name))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def linear(x, name, n_in, n_out):
        y = node("MatMul", [x, weight(name + ".w", (n_in, n_out))], name + "_matmul")
        return node("Add", [y, weight(name + ".b", (n_out,))], name + "_bias")

    def layer_norm(x, name):
        return node("LayerNormalization",
                    [x, weight(name + ".g", (HIDDEN,), 1.0), weight(name + ".b", (HIDDEN,))],
                    name, axis=-1, epsilon=1e-5)

    def heads(x, name):  # [b, s, H] -> [b, heads, s, d]
        r = node("Reshape", [x, const("shape_heads", [0, 0, HEADS, HIDDEN // HEADS])], name + "_reshape")
        return node("Transpose", [r], name + "_transpose", perm=[0, 2, 1, 3])

    emb = node("Gather", [weight("embedding", (VOCAB, HIDDEN), 1.0), "input_ids"], "embed")
    x = layer_norm(emb, "ln_embed")
    q = heads(linear(x, "q", HIDDEN, HIDDEN), "q")
    k = heads(linear(x, "k", HIDDEN, HIDDEN), "k")
    v = heads(linear(x, "v", HIDDEN, HIDDEN), "v")
    kt = node("Transpose", [k], "k_t", perm=[0, 1, 3, 2])
    scores = node("MatMul", [q, kt], "scores")
    scaled = node("Div", [scores, const("sqrt_d", np.sqrt(HIDDEN // HEADS), np.float32)], "scale")
    probs = node("Softmax", [scaled], "softmax", axis=-1)
    ctx = node("MatMul", [probs, v], "context")
    ctx = node("Transpose", [ctx], "context_t", perm=[0, 2, 1, 3])
    ctx = node("Reshape", [ctx, const("shape_merge", [0, 0, HIDDEN])], "context_merge")
    attn = linear(ctx, "attn_out", HIDDEN, HIDDEN)
    x = layer_norm(node("Add", [x, attn], "residual_1"), "ln_attn")
    h = linear(x, "ffn_in", HIDDEN, FFN)
    g = node("Div", [h, const("sqrt2", 1.4142135, np.float32)], "gelu_div")
    g = node("Erf", [g], "gelu_erf")
    g = node("Add", [g, const("one", 1.0, np.float32)], "gelu_add")
    g = node("Mul", [h, g], "gelu_mul")
    g = node("Mul", [g, const("half", 0.5, np.float32)], "gelu_half")
    f = linear(g, "ffn_out", FFN, HIDDEN)
    y = layer_norm(node("Add", [x, f], "residual_2"), "ln_out")
    nodes.append(helper.make_node("Identity", [y], ["hidden"], name="output"))
    graph = helper.make_graph(
        nodes, "tiny_bert",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "seq", HIDDEN])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="kiln-tests")
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    onnx.save(tiny_bert(), os.path.join(out, "tiny_bert.onnx"))
