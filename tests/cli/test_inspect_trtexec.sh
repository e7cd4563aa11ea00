#!/usr/bin/env bash
# `kiln inspect` over trtexec exports (tests/data/trtexec) and over a plan with a
# profile from `kiln run --export-profile` on the CPU: table, JSON, CSV, errors.
# Usage: test_inspect_trtexec.sh KILN DATA_DIR
set -u
kiln="$1"; data="$2"
source "$(dirname "$0")/cli_test_support.sh"
csv_rows() {  # csv_rows FILE: number of CSV records (quoted line breaks do not count)
  python3 -c "import csv,sys; print(len(list(csv.reader(open(sys.argv[1], newline='')))))" "$1"
}

graph="$data/trtexec/mobilenet.qat.onnx.engine.graph.json"
profile="$data/trtexec/mobilenet.qat.onnx.engine.profile.json"

"$kiln" inspect "$graph" --profile "$profile" > "$work/table.txt"
check "table exits 0" test $? -eq 0
check "table names a layer" grep -q '^GlobalAveragePool_843  *TiledPooling  *FP16 ' "$work/table.txt"
check "table shows INT8 layers" grep -q 'CaskConvolution  *INT8  *volta_int8x4' "$work/table.txt"
# A layer's precision is what it computes in: this convolution reads Int8 with Int8
# weights and writes FP16 (a fused dequantize), so INT8, as TensorRT counts it.
check "an INT8 convolution writing FP16 is INT8" grep -q \
  '^features.2.conv.2.weight + QuantizeLinear_90 + Conv_94  *CaskConvolution  *INT8  *turing_fp16_i8816' \
  "$work/table.txt"
check "precision mix by compute precision" grep -q '^precisions: FP16 2 FP32 1 INT8 70$' "$work/table.txt"
check "table has the totals" grep -q '^73 layers; total 0.468768 ms' "$work/table.txt"
"$kiln" inspect "$graph" --profile "$profile" --json > "$work/report.json"
check "--json parses" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); \
assert len(d['Layers']) == 73 and d['ProfileIterations'] == 6610; \
assert d['Layers'][0]['Name'] == 'QuantizeLinear_2' and d['Layers'][0]['TimeMs'] == 0.004544" "$work/report.json"
"$kiln" inspect "$graph" --csv "$work/layers.csv" > /dev/null
check "--csv has a header and 73 rows" test "$(csv_rows "$work/layers.csv")" -eq 74
check "--json output reads back" bash -c "'$kiln' inspect '$work/report.json' | grep -q '^73 layers; total 0.468768 ms'"

# TensorRT 11.x's inspector layout (I/O Tensors; Format and DataType apart): the same
# engine's table as its 10.x export, plus the I/O tensors in the summary.
residuals="$data/trtexec/mobilenet_v2_residuals.qat.onnx.engine.graph.json"
trt11="$data/trtexec/mobilenet_v2_residuals.trt11.graph.json"
"$kiln" inspect "$residuals" > "$work/trt10.txt"
"$kiln" inspect "$trt11" > "$work/trt11.txt"
check "11.x export exits 0" test $? -eq 0
check "11.x layout named" grep -q '^layout: TensorRT 11.x' "$work/trt11.txt"
check "11.x input tensor listed" grep -q 'Input inputs.1: Float 1x3x224x224 (Device)' "$work/trt11.txt"
check "11.x table equals the 10.x table" bash -c "diff <(grep -E '^[^ ].*  ' '$work/trt10.txt' | grep -v '^layout') \
  <(grep -E '^[^ ].*  ' '$work/trt11.txt' | grep -v '^layout')"

# The engine's layer graph as ONNX (for Netron / Model Explorer), from an export and a plan.
"$kiln" inspect "$graph" --export-onnx "$work/engine.onnx" > /dev/null
check "--export-onnx of an export exits 0" test $? -eq 0
check "the engine graph reads as a model of 73 layer nodes" bash -c \
  "'$kiln' inspect '$work/engine.onnx' | grep -q 'CaskConvolution'"
expect_error "--export-onnx of a model" "apply to a plan or a trtexec export" \
  "$kiln" inspect "$data/add.onnx" --export-onnx "$work/model_engine.onnx"

# kiln advise: the advisor's findings for the same engine, as text and JSON.
"$kiln" advise "$graph" --profile "$profile" > "$work/advice.txt"
check "advise exits 0" test $? -eq 0
check "advise finds the INT8 convolutions with wide outputs" \
  grep -q '^warning \[int8-conv-wide-output\] 17 INT8 convolutions' "$work/advice.txt"
check "advise names a fix" grep -q '^  fix: ' "$work/advice.txt"
"$kiln" advise "$graph" --json > "$work/advice.json"
check "advise --json parses" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); \
rules={f['rule'] for f in d['findings']}; assert 'channel-alignment' in rules and \
'reformat-changes-type' in rules, rules" "$work/advice.json"
expect_error "advise of a missing file" "nope.kiln" "$kiln" advise "$work/nope.kiln"

printf '{"Layers": [ {"Name": ' > "$work/corrupt.json"
expect_error "corrupt graph json" "corrupt.json: not valid JSON" "$kiln" inspect "$work/corrupt.json"
printf '{"Bindings": []}' > "$work/no_layers.json"
expect_error "json without Layers" "no_layers.json: not a trtexec" "$kiln" inspect "$work/no_layers.json"
expect_error "profile of another engine" "which the engine graph lacks" "$kiln" inspect "$graph" \
  --profile "$data/trtexec/mobilenet_v2_residuals.qat.onnx.engine.profile.json"
expect_error "missing profile" "nope.json: cannot open" "$kiln" inspect "$graph" --profile "$work/nope.json"

# A plan: CPU profile from `kiln run --export-profile`, then the report with its times.
bert="$data/builder/tiny_bert.onnx"
check "build a plan" "$kiln" build "$bert" -o "$work/bert.kiln" --min-shapes input_ids:1x4 \
  --opt-shapes input_ids:2x16 --max-shapes input_ids:4x32 --quiet
check "run --export-profile on cpu" "$kiln" run "$work/bert.kiln" --shapes input_ids:2x16 \
  --iterations 3 --export-profile "$work/profile.json" --json
check "cpu profile has count 3" python3 -c "import json,sys; p=json.load(open(sys.argv[1])); \
assert p[0]['count'] == 3 and len(p) > 2 and all(e['timeMs'] > 0 for e in p[1:])" "$work/profile.json"
layers=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))) - 1)" "$work/profile.json")
check "plan --profile --csv" "$kiln" inspect "$work/bert.kiln" --profile "$work/profile.json" \
  --csv "$work/plan.csv"
check "plan csv has one row per layer" test "$(csv_rows "$work/plan.csv")" -eq $((layers + 1))
check "plan --memory shows the peak" bash -c "'$kiln' inspect '$work/bert.kiln' --memory | \
  grep -q \"^peak: .* alive at layer .*; the planner's arena\""
check "plan --export-onnx" "$kiln" inspect "$work/bert.kiln" --export-onnx "$work/bert.engine.onnx"
check "plan engine graph has one node per layer" python3 -c "import sys; \
data=open(sys.argv[1],'rb').read(); assert data.count(b'ai.kiln.engine') >= $layers" "$work/bert.engine.onnx"
check "plan table has profile totals" bash -c "'$kiln' inspect '$work/bert.kiln' \
  --profile '$work/profile.json' | grep -q 'medians of a 3-iteration profile'"

finish
