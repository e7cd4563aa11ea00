#!/usr/bin/env python3
"""Writes the ONNX backend node tests of the installed `onnx` package to a folder.

The onnx wheel ships the test case definitions (onnx.backend.test.case.node) but
not their data files; this script materializes them in the backend test layout
that `kiln conformance` reads: <out>/<test>/model.onnx and
<out>/<test>/test_data_set_N/{input,output}_K.pb.

Usage: generate_node_tests.py OUTPUT_DIR
A stamp file (OUTPUT_DIR/.onnx-version) makes reruns with the same onnx a no-op.
"""
import os
import shutil
import sys

import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node as node_cases


def write_value(path, value, value_info):
    kind = value_info.type.WhichOneof("value")
    if kind == "sequence_type":
        proto = numpy_helper.from_list(value, value_info.name)
    elif kind == "optional_type":
        proto = numpy_helper.from_optional(value, value_info.name)
    elif kind == "map_type":
        proto = numpy_helper.from_dict(value, value_info.name)
    elif isinstance(value, onnx.TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(value, value_info.name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def main():
    out = sys.argv[1]
    stamp = os.path.join(out, ".onnx-version")
    if os.path.exists(stamp) and open(stamp).read().strip() == onnx.__version__:
        print(f"node tests of onnx {onnx.__version__} already in {out}")
        return
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    count = 0
    for case in node_cases.collect_testcases():
        test_dir = os.path.join(out, case.name)
        os.makedirs(test_dir, exist_ok=True)
        with open(os.path.join(test_dir, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        graph = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            data_dir = os.path.join(test_dir, f"test_data_set_{i}")
            os.makedirs(data_dir)
            for j, value in enumerate(inputs):
                write_value(os.path.join(data_dir, f"input_{j}.pb"), value, graph.input[j])
            for j, value in enumerate(outputs):
                write_value(os.path.join(data_dir, f"output_{j}.pb"), value, graph.output[j])
        count += 1
    with open(stamp, "w") as f:
        f.write(onnx.__version__)
    print(f"wrote {count} node tests of onnx {onnx.__version__} to {out}")


if __name__ == "__main__":
    main()
