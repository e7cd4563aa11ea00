#!/usr/bin/env bash
# kiln compare and kiln debug on the CPU backend: a perturbed weight found by the
# per-tensor comparison, side-by-side builds, precision bisection naming the node
# that overflows in fp16 and the constraints file that fixes the build, tactic
# isolation, and the errors. Usage: test_compare_flow.sh KILN DATA_DIR
set -u
kiln="$1"; data="$2/compare"
source "$(dirname "$0")/cli_test_support.sh"
error_exit_codes="1 2"  # kiln compare exits 3 for "outside the tolerance", not an error
json() {  # json FILE PYTHON-EXPRESSION-ON-d: exits 0 when it is true
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"
}

cnn="$data/small_cnn.onnx"; perturbed="$data/small_cnn_perturbed.onnx"; overflow="$data/fp16_overflow.onnx"

# Accuracy: the perturbed model against the original, and a plan of it.
"$kiln" compare "$perturbed" "$cnn" --per-tensor --runs 2 --json > "$work/perturbed.json"; rc=$?
check "perturbed weight: exit 3 (outside the tolerance)" test $rc -eq 3
check "perturbed weight: first divergence at conv2" json "$work/perturbed.json" \
  "d['first_divergence']['onnx_nodes'] == ['conv2'] and not d['pass'] and d['runs'] == 2"
check "perturbed weight: conv1 agrees exactly" json "$work/perturbed.json" \
  "[t['max_abs'] for t in d['intermediates'] if t['name'] == 'conv1'] == [0.0]"
"$kiln" build "$perturbed" -o "$work/perturbed.kiln" --quiet > /dev/null
"$kiln" compare "$work/perturbed.kiln" "$cnn" --per-tensor --output "$work/plan.json" > "$work/plan.txt"
check "plan of the perturbed model: divergence in the layer holding conv2" json "$work/plan.json" \
  "'conv2' in d['first_divergence']['onnx_nodes'] and 'conv1' not in d['first_divergence']['onnx_nodes']"
check "plan: conv1 fused away into its Conv+Relu layer" json "$work/plan.json" \
  "any(f['tensor'] == 'conv1' and 'conv1_relu' in f['fused_into'] for f in d['fused_away'])"
check "text report names the first divergence" grep -q "^first divergence: tensor" "$work/plan.txt"
"$kiln" build "$cnn" -o "$work/cnn32.kiln" --quiet > /dev/null
check "fp32 plan against the model: pass" "$kiln" compare "$work/cnn32.kiln" "$cnn" --per-tensor
check "a plan alone is compared with its network" "$kiln" compare "$work/cnn32.kiln"
check "classifier output: top-1 agreement reported" bash -c \
  "'$kiln' compare '$work/cnn32.kiln' '$cnn' | grep -q 'top1 100.0%'"

# A folder of samples (.npy written without numpy) as the inputs.
mkdir -p "$work/data"
python3 - "$work/data" <<'PY'
import random, struct, sys
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 16, 16), }"
header += " " * (63 - (10 + len(header)) % 64) + "\n"
for i in range(3):
    with open(f"{sys.argv[1]}/sample{i}.npy", "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<768f", *[random.uniform(-1, 1) for _ in range(768)]))
PY
"$kiln" compare "$perturbed" "$cnn" --data "$work/data" --json > "$work/data.json"
check "--data: three samples, the perturbation seen" json "$work/data.json" \
  "d['runs'] == 3 and not d['pass'] and d['outputs'][0]['elements'] == 30"

# Side by side: fused fp32 reference tactics against unfused fp16 without BLAS.
"$kiln" build "$cnn" -o "$work/cnn16.kiln" --disable-pass fuse_conv_bias_activation \
  --layer-precisions '*:fp16' --precision-constraints obey --tactic-sources=-blas --quiet > /dev/null
"$kiln" compare --builds "$work/cnn32.kiln" "$work/cnn16.kiln" --json > "$work/builds.json"
check "builds: conv2 row aligns one layer with two" json "$work/builds.json" \
  "[(len(r['builds'][0]['layers']), len(r['builds'][1]['layers'])) for r in d['rows'] if 'conv2' in r['onnx_nodes']] == [(1, 2)]"
check "builds: precision and tactic changed on conv2" json "$work/builds.json" \
  "all(r['precision_changed'] and r['tactic_changed'] and r['fusion_changed'] for r in d['rows'] if 'conv2' in r['onnx_nodes'])"
check "builds: totals per build" json "$work/builds.json" \
  "len(d['builds']) == 2 and d['builds'][1]['precisions'].get('FP16', 0) > 0"
check "builds: text sorted by delta" bash -c "'$kiln' compare --builds '$work/cnn32.kiln' '$work/cnn16.kiln' --sort delta | grep -q 'aligned rows'"

# Precision bisection: the all-fp16 build fails, the result names wide_proj.
"$kiln" build "$overflow" -o "$work/all16.kiln" --layer-precisions '*:fp16' --precision-constraints obey --quiet > /dev/null
"$kiln" compare "$work/all16.kiln" "$overflow" > /dev/null; rc=$?
check "all-fp16 build of the overflow model misses the tolerance" test $rc -eq 3
"$kiln" debug precision "$overflow" --fp16 --save-constraints "$work/c.json" --apply "$work/fixed.kiln" \
  --json > "$work/debug.json" 2> /dev/null
check "debug precision names exactly wide_proj" json "$work/debug.json" "d['onnx_nodes'] == ['wide_proj']"
# 8 layers: three MatMul + activation FusedMatMuls, rescale + Tanh one PointwiseChain.
check "debug precision: fewer than 2*log2(8)+2 builds" json "$work/debug.json" \
  "d['builds'] < 2 * __import__('math').log2(len(d['candidates'])) + 2 and len(d['candidates']) == 8"
check "the applied plan passes" "$kiln" compare "$work/fixed.kiln" "$overflow"
"$kiln" build "$overflow" --constraints "$work/c.json" -o "$work/next.kiln" --quiet > /dev/null
check "kiln build --constraints: the next build passes" "$kiln" compare "$work/next.kiln" "$overflow"
check "... with wide_proj alone in fp32" bash -c "'$kiln' inspect '$work/next.kiln' --layers | grep -E '^wide_proj +MatrixMultiply +FP32'"

# Tactic isolation at level 0 (reference tactics): every tactic is within the tolerance.
"$kiln" debug tactics "$cnn" --optimization-level 0 --rebuilds 2 --json > "$work/tactics.json" 2> /dev/null; rc=$?
check "debug tactics: exit 0, nine conv trials, no bad tactic" json "$work/tactics.json" \
  "$rc == 0 and len([t for t in d['trials'] if t['tactic'].startswith('cpu.conv.')]) == 9 and d['bad'] == []"
check "debug tactics: rebuilds agree" json "$work/tactics.json" \
  "len(d['rebuilds']) == 2 and d['rebuilds'][1]['max_abs_from_first'] == 0"

# Errors.
expect_error "missing model" "no_such.onnx" "$kiln" compare "$work/no_such.onnx" "$cnn"
expect_error "different outputs" "is not an output of B" "$kiln" compare "$cnn" "$overflow"
expect_error "bad tolerance" "--atol expects a number" "$kiln" compare "$cnn" "$cnn" --atol x
expect_error "builds need two" "at least two" "$kiln" compare --builds "$work/cnn32.kiln"
expect_error "fp16 ONNX on the CPU reference" "build a fp16 plan" "$kiln" compare "$cnn" "$cnn" --precision-a fp16
expect_error "debug precision needs a precision" "give --fp16 or --bf16" "$kiln" debug precision "$overflow"
expect_error "debug on cuda" "--backend cuda" "$kiln" debug precision "$overflow" --fp16 --backend cuda
expect_error "bad constraints file" "not a Kiln constraints file" \
  "$kiln" build "$overflow" --constraints "$work/builds.json" -o "$work/x.kiln"
expect_error "unknown suspect layer" "'nope'" "$kiln" debug tactics "$cnn" --layer nope --json

finish
