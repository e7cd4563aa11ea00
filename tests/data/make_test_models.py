#!/usr/bin/env python3
"""Writes the small ONNX files the importer and CLI tests use (committed; rerun by
hand only when a fixture changes): valid models exercising import features and
hostile/broken files that must fail with a clear one-line error.

Usage: make_test_models.py OUT_DIR   (needs onnx and numpy)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, out, name):
    onnx.save(model, os.path.join(out, name))


def add_model(opset=17):
    """y = x + w, x: float32 [batch, 3] (symbolic batch), w an initializer."""
    w = numpy_helper.from_array(np.array([1.5, -2.0, 0.25], np.float32), "w")
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add0")
    graph = helper.make_graph(
        [node], "add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="kiln-tests")


def external_model(location):
    """Same as add_model, with w stored as external data at `location`."""
    model = add_model()
    w = model.graph.initializer[0]
    w.ClearField("raw_data")
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "12")):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    return model


def unsorted_model():
    """z = relu(x) * 2 with the nodes listed consumer first."""
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    mul = helper.make_node("Mul", ["r", "two"], ["z"], name="mul_first")
    relu = helper.make_node("Relu", ["x"], ["r"], name="relu_second")
    graph = helper.make_graph(
        [mul, relu], "unsorted",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 2])], [two])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def unknown_ops_model():
    """Two unknown ops (FooBar, custom.Baz) among known ones: both must be listed."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="ok_relu"),
        helper.make_node("FooBar", ["a"], ["b"], name="mystery_1"),
        helper.make_node("Baz", ["b"], ["y"], name="mystery_2", domain="com.example"),
    ]
    graph = helper.make_graph(
        nodes, "unknown",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])


def shape_subgraph_model():
    """Shape -> Gather -> Concat -> Reshape: flattens x [batch, 4, 5] to [batch, 20]."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Constant", [], ["i0"], value=numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node("Gather", ["s", "i0"], ["b"], name="gather", axis=0),
        helper.make_node("Constant", [], ["m1"], value=numpy_helper.from_array(np.array([-1], np.int64))),
        helper.make_node("Concat", ["b", "m1"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ]
    graph = helper.make_graph(
        nodes, "shape_subgraph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def if_model():
    """y = cond ? x + 1 : x - 1, branches reading x from the outer scope."""
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    out = helper.make_tensor_value_info("r", TensorProto.FLOAT, [3])
    then_g = helper.make_graph([helper.make_node("Add", ["x", "one"], ["r"])], "then", [], [out])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "one"], ["r"])], "else", [], [out])
    node = helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_g, else_branch=else_g)
    graph = helper.make_graph(
        [node], "if_model",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], [one])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def huge_claim_model():
    """add_model whose weight claims 2^39 float32 elements and holds 12 bytes: the
    importer must refuse it before allocating."""
    model = add_model()
    w = model.graph.initializer[0]
    del w.dims[:]
    w.dims.extend([1 << 20, 1 << 19])
    return model


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    save(add_model(), out, "add.onnx")
    save(add_model(opset=7), out, "add_opset7.onnx")
    model_bytes = add_model().SerializeToString()
    with open(os.path.join(out, "truncated.onnx"), "wb") as f:
        f.write(model_bytes[: len(model_bytes) // 2])
    rng = np.random.default_rng(7)
    with open(os.path.join(out, "random_bytes.onnx"), "wb") as f:
        f.write(rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())
    save(external_model("add_weights.bin"), out, "external_ok.onnx")
    with open(os.path.join(out, "add_weights.bin"), "wb") as f:
        f.write(np.array([1.5, -2.0, 0.25], np.float32).tobytes())
    save(external_model("missing_weights.bin"), out, "external_missing.onnx")
    save(external_model("../../../etc/passwd"), out, "external_escape.onnx")
    save(external_model("/etc/passwd"), out, "external_absolute.onnx")
    save(unsorted_model(), out, "unsorted.onnx")
    save(unknown_ops_model(), out, "unknown_ops.onnx")
    save(shape_subgraph_model(), out, "shape_subgraph.onnx")
    save(if_model(), out, "if_outer_scope.onnx")
    save(huge_claim_model(), out, "huge_claim.onnx")
    np.save(os.path.join(out, "x_2x3.npy"), np.arange(6, dtype=np.float32).reshape(2, 3) + 1)
    np.save(os.path.join(out, "x_wrong_shape_2x4.npy"), np.ones((2, 4), np.float32))
    np.save(os.path.join(out, "x_wrong_dtype_int32.npy"), np.ones((2, 3), np.int32))


if __name__ == "__main__":
    main()
