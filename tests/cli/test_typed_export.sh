#!/usr/bin/env bash
# The strongly typed ONNX export (issue 24, TensorRT 11): kiln export-onnx from a
# constraints file and from a plan, checked by onnx.checker (full check) and ONNX
# Runtime (CPU) against the FP32 model within an FP16 tolerance, the FP32 island
# checked in the exported types; kiln build --strongly-typed of the export gives the
# source plan's per-node precisions; kiln debug precision's island on a model that
# overflows in fp16; INT8 Q/DQ from a calibration cache within the Kiln INT8 plan's own
# error on ONNX Runtime; the errors. Usage: test_typed_export.sh KILN PYTHON DATA_DIR
# Exits 77 (CTest: skipped), saying why, when PYTHON lacks onnx or onnxruntime.
set -u
kiln="$1"; python="$2"; data="$3"
helper="$(dirname "$0")/typed_export_check.py"
if ! "$python" -c "import onnx, onnxruntime, numpy" 2>/dev/null; then
  echo "SKIPPED: $python cannot import onnx, onnxruntime and numpy" \
       "(make test installs packaging/requirements-test.txt into .venv)"
  exit 77
fi
source "$(dirname "$0")/cli_test_support.sh"
py() { "$python" "$helper" "$@"; }

py make "$work" || { echo "FAIL: could not write the test model"; exit 1; }
model="$work/chain.onnx"; island="$work/island.json"
shapes=(--min-shapes x:1x3x6x6 --opt-shapes x:2x3x6x6 --max-shapes x:4x3x6x6)

# From the constraints file: '*' fp16, the MatMul pinned to fp32.
check "export-onnx --constraints" "$kiln" export-onnx "$model" -o "$work/c.onnx" \
  --constraints "$island"
check "constraints export: checker, island fp32, fp16 elsewhere, ORT within tolerance" \
  py check "$model" "$work/c.onnx" --island matmul --reduced conv --reduced layer_norm \
  --reduced softmax
py check "$model" "$work/c.onnx" --island matmul --reduced conv
check "export-onnx --keep-io-types" "$kiln" export-onnx "$model" -o "$work/k.onnx" \
  --constraints "$island" --keep-io-types
check "keep-io-types export: float32 interface, island fp32, ORT within tolerance" \
  py check "$model" "$work/k.onnx" --island matmul --reduced conv --keep-io-types
check "export-onnx --precision bf16" "$kiln" export-onnx "$model" -o "$work/b.onnx" \
  --constraints "$island" --precision bf16 --keep-io-types
check "bf16 export passes the full check (Conv stays fp32: bf16 from opset 22)" \
  py check "$model" "$work/b.onnx" --island matmul --island conv --reduced layer_norm \
  --reduced softmax --keep-io-types --dtype bf16
"$kiln" export-onnx "$model" -o "$work/j.onnx" --constraints "$island" --json > "$work/j.json"
check "--json names the float32 nodes" "$python" -c "import json,sys; \
  d=json.load(open(sys.argv[1])); sys.exit(0 if 'matmul' in d['float32_nodes'] and \
  d['casts_inserted'] > 0 and d['reduced_nodes'] > 0 else 1)" "$work/j.json"

# From a plan built with the same constraints (CPU backend), and back in strongly typed.
check "build the source plan" "$kiln" build "$model" -o "$work/src.kiln" --constraints "$island" \
  "${shapes[@]}" --quiet
"$kiln" build "$model" -o "$work/src2.kiln" --constraints "$island" "${shapes[@]}" \
  --optimization-level 0 > "$work/build.txt"
check "build prints the TensorRT 11 command lines" grep -q \
  "TensorRT 11 (strongly typed): kiln export-onnx .* --from .* && trtexec --onnx=.*strongly_typed.onnx .*--stronglyTyped" \
  "$work/build.txt"
check "export-onnx --from PLAN" "$kiln" export-onnx "$model" -o "$work/p.onnx" \
  --from "$work/src.kiln" --keep-io-types
check "plan export: checker, island fp32, ORT within tolerance" \
  py check "$model" "$work/p.onnx" --island matmul --reduced conv --keep-io-types
check "kiln build --strongly-typed of the export" "$kiln" build "$work/p.onnx" \
  -o "$work/typed.kiln" --strongly-typed "${shapes[@]}" --quiet
check "the strongly typed plan's summary counts its FP16 layers" bash -c \
  "'$kiln' inspect '$work/typed.kiln' | grep -q '^precisions: FP16 [0-9]* FP32 [0-9]*'"
"$kiln" inspect "$work/src.kiln" --json > "$work/src.json"
"$kiln" inspect "$work/typed.kiln" --json > "$work/typed.json"
check "strongly typed rebuild: same per-node precisions as the source plan" \
  py tables "$work/src.json" "$work/typed.json"
py tables "$work/src.json" "$work/typed.json"
check "the strongly typed plan runs on the CPU backend" "$kiln" run "$work/typed.kiln" \
  --shapes x:2x3x6x6 --iterations 1

# kiln debug precision's island on a model that overflows in fp16: the export with the
# island is within tolerance on ONNX Runtime, the all-fp16 export is not.
overflow="$data/compare/fp16_overflow.onnx"
"$kiln" debug precision "$overflow" --fp16 --save-constraints "$work/ov.json" \
  --apply "$work/ov.kiln" > /dev/null 2>&1
check "debug precision's constraints export: wide_proj fp32, within tolerance" bash -c \
  "'$kiln' export-onnx '$overflow' -o '$work/ov_c.onnx' --constraints '$work/ov.json' && \
   '$python' '$helper' check '$overflow' '$work/ov_c.onnx' --island wide_proj --reduced fc1"
check "debug precision's applied plan export: within tolerance" bash -c \
  "'$kiln' export-onnx '$overflow' -o '$work/ov_p.onnx' --from '$work/ov.kiln' --keep-io-types && \
   '$python' '$helper' check '$overflow' '$work/ov_p.onnx' --island wide_proj --keep-io-types"
printf '%s' '{"format": "kiln-constraints", "version": 1, "precision_constraints": "obey",
  "layer_precisions": [{"layer": "*", "precision": "fp16"}], "layer_output_types": []}' \
  > "$work/all16.json"
check "the all-fp16 export of it misses the tolerance (the island is needed)" bash -c \
  "'$kiln' export-onnx '$overflow' -o '$work/ov_16.onnx' --constraints '$work/all16.json' && \
   '$python' '$helper' check '$overflow' '$work/ov_16.onnx' --reduced wide_proj --expect-off"

# INT8 Q/DQ from a calibration cache: ONNX Runtime within the Kiln INT8 plan's own error.
quant="$data/quant"
"$kiln" calibrate "$quant/small_cnn.onnx" --data "$quant/calib" -o "$work/cnn.cache" \
  > /dev/null 2>&1
# --min-int8-conv-channels 0: every convolution quantized, as the CPU INT8 plan below has
# them (the default, 8, leaves the 3-channel conv0 float, as a CUDA build does).
check "export-onnx --calib-cache" "$kiln" export-onnx "$quant/small_cnn.onnx" \
  -o "$work/cnn_qdq.onnx" --calib-cache "$work/cnn.cache" --min-int8-conv-channels 0
check "export-onnx --calib-cache: a 3-channel convolution stays float by default" bash -c \
  "'$kiln' export-onnx '$quant/small_cnn.onnx' -o '$work/cnn_qdq8.onnx' \
     --calib-cache '$work/cnn.cache' --json | grep -q 'conv0: its input has 3 channel'"
plan_error=$("$kiln" build "$quant/small_cnn.onnx" -o "$work/cnn8.kiln" --int8 \
  --calib-cache "$work/cnn.cache" --min-shapes input:1x3x16x16 --opt-shapes input:4x3x16x16 \
  --max-shapes input:8x3x16x16 --accuracy-data "$quant/calib" --json \
  | "$python" -c "import json,re,sys; \
    print(re.search(r'max abs ([0-9.e-]+)', json.load(sys.stdin)['accuracy']).group(1))")
check "Q/DQ export: checker, per-channel int8 weights, ORT within the plan's error" \
  py qdq "$quant/small_cnn.onnx" "$work/cnn_qdq.onnx" "$quant/calib" "${plan_error:-0}"
py qdq "$quant/small_cnn.onnx" "$work/cnn_qdq.onnx" "$quant/calib" "${plan_error:-0}"
check "--strongly-typed build of the Q/DQ export: the INT8 plan's INT8 layers" bash -c \
  "'$kiln' build '$work/cnn_qdq.onnx' -o '$work/qdq.kiln' --strongly-typed --quiet \
     --min-shapes input:1x3x16x16 --opt-shapes input:4x3x16x16 --max-shapes input:8x3x16x16 && \
   '$kiln' inspect '$work/cnn8.kiln' --json > '$work/cnn8.json' && \
   '$kiln' inspect '$work/qdq.kiln' --json > '$work/qdq.json' && \
   '$python' '$helper' tables '$work/cnn8.json' '$work/qdq.json' conv0 conv1 conv2 conv3 \
     dwconv4 fc6"
# INT8 + FP16 in one model: an `--int8 --fp16` plan exported with --from and --calib-cache
# (its INT8 layers float32 between the cache's pairs, its FP16 layers fp16 behind Casts);
# checker, ONNX Runtime within that plan's own error, and the strongly typed rebuild has
# the plan's precision for every ONNX node both tables hold.
int8_shapes=(--min-shapes input:1x3x16x16 --opt-shapes input:4x3x16x16 --max-shapes input:8x3x16x16)
mixed_error=$("$kiln" build "$quant/small_cnn.onnx" -o "$work/cnn816.kiln" --int8 --fp16 \
  --calib-cache "$work/cnn.cache" "${int8_shapes[@]}" --accuracy-data "$quant/calib" --json \
  | "$python" -c "import json,re,sys; \
    print(re.search(r'max abs ([0-9.e-]+)', json.load(sys.stdin)['accuracy']).group(1))")
check "export-onnx --from an --int8 --fp16 plan --calib-cache" "$kiln" export-onnx \
  "$quant/small_cnn.onnx" -o "$work/cnn816.onnx" --from "$work/cnn816.kiln" \
  --calib-cache "$work/cnn.cache" --min-int8-conv-channels 0 --keep-io-types
check "INT8 + FP16 export: checker, Q/DQ, ORT within the mixed plan's error" \
  py qdq "$quant/small_cnn.onnx" "$work/cnn816.onnx" "$quant/calib" "${mixed_error:-0}"
check "INT8 + FP16 export: its --strongly-typed rebuild has the plan's per-node precisions" bash -c \
  "'$kiln' build '$work/cnn816.onnx' -o '$work/cnn816_typed.kiln' --strongly-typed --quiet \
     ${int8_shapes[*]} && \
   '$kiln' inspect '$work/cnn816.kiln' --json > '$work/cnn816.json' && \
   '$kiln' inspect '$work/cnn816_typed.kiln' --json > '$work/cnn816_typed.json' && \
   '$python' '$helper' tables '$work/cnn816.json' '$work/cnn816_typed.json'"
"$python" "$helper" tables "$work/cnn816.json" "$work/cnn816_typed.json"
expect_error "--calib-cache with --constraints" "exactly one of --from" \
  "$kiln" export-onnx "$quant/small_cnn.onnx" -o "$work/x.onnx" --calib-cache "$work/cnn.cache" \
  --constraints "$island"
expect_error "--calib-cache with --keep-io-types" "do not apply to --calib-cache" \
  "$kiln" export-onnx "$quant/small_cnn.onnx" -o "$work/x.onnx" --calib-cache "$work/cnn.cache" \
  --keep-io-types

# Errors: one line, naming what is wrong.
expect_error "--strongly-typed refuses --fp16" "--fp16 does not apply to --strongly-typed" \
  "$kiln" build "$work/p.onnx" -o "$work/x.kiln" --strongly-typed --fp16
expect_error "--strongly-typed refuses --int8" "--int8 does not apply to --strongly-typed" \
  "$kiln" build "$work/p.onnx" -o "$work/x.kiln" --strongly-typed --int8
expect_error "--strongly-typed refuses --best" "--best does not apply to --strongly-typed" \
  "$kiln" build "$work/p.onnx" -o "$work/x.kiln" --strongly-typed --best
expect_error "export-onnx needs one source" "exactly one of --from" \
  "$kiln" export-onnx "$model" -o "$work/x.onnx"
expect_error "export-onnx: a plan of another model" "none of the plan's layers" \
  "$kiln" export-onnx "$data/add.onnx" -o "$work/x.onnx" --from "$work/src.kiln"
expect_error "export-onnx: missing constraints file" "nope.json" \
  "$kiln" export-onnx "$model" -o "$work/x.onnx" --constraints "$work/nope.json"
expect_error "export-onnx: bad --precision" "--precision 'fp8'" \
  "$kiln" export-onnx "$model" -o "$work/x.onnx" --constraints "$island" --precision fp8
finish
