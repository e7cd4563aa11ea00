#!/usr/bin/env bash
# kiln ops: every operator with its opset ranges, its CUDA kernel, and from the op table
# (kiln/op_table.h) its kind and TensorRT's layer type, in text and JSON; com.microsoft
# QuickGelu (the op table's three-file demo) among them.
# Usage: test_ops.sh KILN
set -u
kiln=$(realpath "$1")
source "$(dirname "$0")/cli_test_support.sh"

"$kiln" ops > "$work/ops.txt"
check "a row shows its kind and TensorRT layer type" \
  grep -qE '^  Reshape +opset .*Shape / data movement \(TensorRT Shuffle\)$' "$work/ops.txt"
check "an op without a TensorRT layer type shows its kind alone" \
  grep -qE '^  Mish +opset .* Activation$' "$work/ops.txt"
"$kiln" ops --json > "$work/ops.json"
check "the JSON carries the rows' fields, QuickGelu in its own domain" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
relu = d["ai.onnx"]["Relu"][0]
assert relu["kind"] == "Activation" and relu["tensorrt_layer"] == "Activation", relu
assert relu["positionwise"] is True, relu
quick = d["com.microsoft"]["QuickGelu"][0]
assert quick["kind"] == "Activation" and quick["since"] == 1, quick
assert d["ai.onnx"]["Less"][0]["positionwise"] is False
' "$work/ops.json"
finish
