#!/usr/bin/env bash
# INT8 calibration of a model with several inputs (a transformer's input_ids and
# attention_mask, in miniature): `kiln calibrate` reads DIR/<input name>/ for each input,
# the k-th files together; `kiln build --int8 --accuracy-data DIR` reads the same layout;
# unequal sample counts, a missing subfolder and a wrong --input give one line each.
# Usage: test_calibrate_inputs.sh KILN PYTHON. Exits 77 (skipped), saying why, when
# PYTHON lacks onnx and numpy (it writes the model and the samples).
set -u
kiln="$1"; python="$2"
if ! "$python" -c "import onnx, numpy" 2>/dev/null; then
  echo "SKIPPED: $python cannot import onnx and numpy"
  exit 77
fi
source "$(dirname "$0")/cli_test_support.sh"
# y = Relu(MatMul(x + bias_of(m), W)): two float inputs of different ranges, so each
# range in the cache shows which folder fed it.
"$python" - "$work" <<'PY'
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
work = sys.argv[1]
rng = np.random.default_rng(3)
w = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "w")
graph = helper.make_graph(
    [helper.make_node("Add", ["x", "m"], ["s"], name="add"),
     helper.make_node("MatMul", ["s", "w"], ["p"], name="proj"),
     helper.make_node("Relu", ["p"], ["y"], name="relu")],
    "two_inputs",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 16]),
     helper.make_tensor_value_info("m", TensorProto.FLOAT, ["n", 16])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 8])], [w])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(work, "two.onnx"))
for name, scale in (("x", 1.0), ("m", 0.01)):
    os.makedirs(os.path.join(work, "data", name))
    for k in range(6):
        np.save(os.path.join(work, "data", name, f"s{k}.npy"),
                (scale * rng.uniform(-1, 1, (16,))).astype(np.float32))
PY
check "write the model and the samples" test -f "$work/two.onnx"
model="$work/two.onnx"; data="$work/data"
shapes=(--min-shapes x:1x16,m:1x16 --opt-shapes x:4x16,m:4x16 --max-shapes x:8x16,m:8x16)

check "calibrate from one subfolder per input" "$kiln" calibrate "$model" --data "$data" \
  -o "$work/two.cache" --method minmax --batch 4 --backend cpu --quiet
range_of() { awk -v t="$1" '$1 == "tensor" && $2 == t { print $3 }' "$work/two.cache"; }
check "ranges of both inputs and the sum" bash -c \
  "'$python' -c 'import sys; x, m = float(sys.argv[1]), float(sys.argv[2]); \
     sys.exit(0 if 0.5 < x <= 1.0 and 0 < m <= 0.01 else 1)' '$(range_of x)' '$(range_of m)' && \
   [ -n '$(range_of s)' ]"
out=$("$kiln" build "$model" -o "$work/two.kiln" --int8 --calib-cache "$work/two.cache" \
  "${shapes[@]}" --accuracy-data "$data" 2>&1)
[[ $? -eq 0 && "$out" == *"cosine 0.99"* ]]; check_rc "INT8 build, accuracy on both inputs' data" $? "$out"

mkdir -p "$work/uneven/x" "$work/uneven/m"
cp "$data"/x/s*.npy "$work/uneven/x/"; cp "$data"/m/s0.npy "$work/uneven/m/"
expect_error "unequal sample counts" "unlike the first input's" \
  "$kiln" calibrate "$model" --data "$work/uneven" -o "$work/x.cache" --batch 1 --backend cpu
expect_error "no subfolder per input: name one, or give them" "one subfolder per input" \
  "$kiln" calibrate "$model" --data "$data/x" -o "$work/x.cache" --backend cpu
expect_error "--input that the model lacks" "no input 'ids'" \
  "$kiln" calibrate "$model" --data "$data/x" -o "$work/x.cache" --input ids --backend cpu
finish
