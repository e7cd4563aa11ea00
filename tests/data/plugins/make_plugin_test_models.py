#!/usr/bin/env python3
"""Writes the models tests/cli/test_plugins.sh runs against libkiln_test_plugins.so:
one Faulty node (domain kiln.test) per fault, input x float32 [3, 4] -> output y.

Run from the repository root:  .venv/bin/python tests/data/plugins/make_plugin_test_models.py
"""
import os

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))

for fault in ("throw_execute", "fail_execute", "rank9", "none"):
    node = helper.make_node("Faulty", ["x"], ["y"], name="faulty", domain="kiln.test", fault=fault)
    graph = helper.make_graph([node], "faulty_" + fault,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("kiln.test", 1)])
    model.ir_version = 8
    onnx.save(model, os.path.join(HERE, f"faulty_{fault}.onnx"))
