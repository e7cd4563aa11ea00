#!/usr/bin/env bash
# Hostile files given to the kiln CLI (issue 27, part B): values that abort, files that
# are not regular files, nesting that overflows a stack, names that carry control
# characters, links planted where a plan is written. Each case must end with exactly
# one line on stderr and a non-zero exit, or (for inputs that are fine) succeed; none
# may hang (every command that could is bounded by `timeout`).
# Usage: test_hostile_files.sh KILN DATA_DIR ONNX_NODE_TESTS_DIR
set -u
kiln="$1"; data="$2"; node_tests="$3"
source "$(dirname "$0")/cli_test_support.sh"
t() { timeout 20 "$@"; }  # a hang is a failure (exit 124), never a stuck suite
model="$data/unsorted.onnx"  # z = relu(x) * 2, x: float32 2x2, static shapes

# --- A model without graph inputs (ONNX's own node test): inspect used to abort.
if [[ -f "$node_tests/test_constant/model.onnx" ]]; then
  out=$(t "$kiln" inspect "$node_tests/test_constant/model.onnx" 2>&1)
  [[ $? -eq 0 && "$out" == *"inputs:"* && "$out" == *"Constant"* ]]
  check_rc "inspect a model without graph inputs" $? "$out"
fi

# --- An allocation the input sizes (1.2 TB of random input): one line, not an abort.
# (With checked sizes a cap may refuse it first; either way the line names the model.)
expect_error "input sized past memory" "add.onnx: " \
  t "$kiln" run "$data/add.onnx" --shapes x:100000000000x3

# --- JSON readers: type-checked values, bounded nesting.
deep() {  # deep N: N nested arrays
  python3 -c "import sys; n=int(sys.argv[1]); print('['*n + ']'*n)" "$1"
}
printf '{"Layers": [{"Name": "a", "Deep": %s}]}\n' "$(deep 100000)" > "$work/deep.graph.json"
expect_error "trtexec export nested 100k deep" "deep.graph.json: JSON nested deeper than 64 levels" \
  t "$kiln" inspect "$work/deep.graph.json"
cp "$data/trtexec/mobilenet_v2_residuals.names_only.graph.json" "$work/ok.graph.json"
deep 100000 > "$work/deep.profile.json"
expect_error "profile nested 100k deep" "deep.profile.json: JSON nested deeper than 64 levels" \
  t "$kiln" inspect "$work/ok.graph.json" --profile "$work/deep.profile.json"
printf '{"format": 5, "version": 1}\n' > "$work/format5.json"
expect_error "constraints file with a numeric format" "format5.json: not a Kiln constraints file" \
  t "$kiln" build "$model" -o "$work/x.kiln" --constraints "$work/format5.json" --quiet
printf '{"format": "kiln-constraints", "version": "1"}\n' > "$work/version_text.json"
expect_error "constraints file with a text version" \
  "version_text.json: 'version' must be an integer, not the string \"1\"" \
  t "$kiln" build "$model" -o "$work/x.kiln" --constraints "$work/version_text.json" --quiet
printf '{"format": "kiln-constraints", "version": 1, "note": 7}\n' > "$work/note7.json"
expect_error "constraints file with a numeric note" "note7.json: 'note' must be a string" \
  t "$kiln" build "$model" -o "$work/x.kiln" --constraints "$work/note7.json" --quiet
printf '{"format": "kiln-tactics", "version": "1", "layers": {}}\n' > "$work/tactics.json"
expect_error "tactics file with a text version" "tactics.json: 'version' must be an integer" \
  t "$kiln" build "$model" -o "$work/x.kiln" --load-tactics "$work/tactics.json" --quiet
printf '{"format": "kiln-timing-cache", "version": 1, "entries": {"k": {"ms": 1, "layer": 5}}}\n' \
  > "$work/cache.json"
expect_error "timing cache with a numeric layer name" "cache.json: entry 'k': 'layer' must be a string" \
  t "$kiln" build "$model" -o "$work/x.kiln" --timing-cache "$work/cache.json" --quiet
printf '{"format": "kiln-timing-cache", "version": 1, "entries": %s}\n' "$(deep 100000)" \
  > "$work/deep_cache.json"
expect_error "timing cache nested 100k deep" "deep_cache.json: JSON nested deeper than 64 levels" \
  t "$kiln" build "$model" -o "$work/x.kiln" --timing-cache "$work/deep_cache.json" --quiet

# --- Only regular files are read; FIFOs never block, devices are never read whole.
mkfifo "$work/fifo.onnx" "$work/fifo.npy"
expect_error "model that is a FIFO" "fifo.onnx: is a FIFO, not a regular file" \
  t "$kiln" inspect "$work/fifo.onnx"
expect_error "plan that is a character device" "/dev/zero: is a character device" \
  t "$kiln" run /dev/zero
expect_error "input .npy that is a FIFO" "fifo.npy: is a FIFO, not a regular file" \
  t "$kiln" run "$model" --load-inputs "x:$work/fifo.npy"
mkdir "$work/ext_fifo" "$work/ext_dir" "$work/ext_sparse"
cp "$data/external_ok.onnx" "$work/ext_fifo/m.onnx"; mkfifo "$work/ext_fifo/add_weights.bin"
expect_error "external data that is a FIFO" "add_weights.bin: is a FIFO, not a regular file" \
  t "$kiln" run "$work/ext_fifo/m.onnx" --shapes x:2x3
cp "$data/external_ok.onnx" "$work/ext_dir/m.onnx"; mkdir "$work/ext_dir/add_weights.bin"
expect_error "external data that is a directory" "add_weights.bin: is a directory" \
  t "$kiln" run "$work/ext_dir/m.onnx" --shapes x:2x3
# A sparse terabyte holding the 12 declared bytes: only those are read.
cp "$data/external_ok.onnx" "$work/ext_sparse/m.onnx"
cp "$data/add_weights.bin" "$work/ext_sparse/add_weights.bin"
truncate -s 1T "$work/ext_sparse/add_weights.bin"
check "sparse 1 TiB external data file, 12 bytes declared" t "$kiln" run "$work/ext_sparse/m.onnx" --shapes x:2x3
truncate -s 3G "$work/sparse.onnx"
expect_error "sparse 3 GiB model file" "sparse.onnx: 3221225472 bytes, more than the" \
  t "$kiln" inspect "$work/sparse.onnx"
# A calibration cache naming /dev/zero as its preprocessing spec (read whole before).
quant="$data/quant"
if t "$kiln" calibrate "$quant/small_cnn.onnx" --data "$quant/calib" -o "$work/cnn.cache" --batch 4 \
     --method minmax --backend cpu --quiet > /dev/null 2>&1; then
  printf 'preprocessing /dev/zero\n' >> "$work/cnn.cache"
  expect_error "calibration cache whose preprocessing spec is /dev/zero" \
    "preprocessing spec: /dev/zero: is a character device" \
    t "$kiln" build "$quant/small_cnn.onnx" -o "$work/cnn.kiln" --int8 --calib-cache "$work/cnn.cache" \
    --min-shapes input:1x3x16x16 --opt-shapes input:4x3x16x16 --max-shapes input:8x3x16x16 \
    --accuracy-data "$quant/calib"
else
  fail_ "calibrate for the /dev/zero case"
fi

# --- Plans are written through a fresh temporary: a planted link is not followed.
echo "precious" > "$work/victim.txt"
ln -s "$work/victim.txt" "$work/out.kiln.partial"
out=$(t "$kiln" build "$model" -o "$work/out.kiln" --quiet 2>&1)
[[ $? -eq 0 && "$(cat "$work/victim.txt")" == "precious" && -L "$work/out.kiln.partial" ]]
check_rc "build does not write through a link planted at PLAN.partial" $? "$out"
check "the plan written beside the link loads" t "$kiln" inspect "$work/out.kiln"
ln -s "$work/victim.txt" "$work/report.csv.partial"
out=$(t "$kiln" inspect "$work/out.kiln" --csv "$work/report.csv" 2>&1)
[[ $? -eq 0 && "$(cat "$work/victim.txt")" == "precious" && -s "$work/report.csv" ]]
check_rc "inspect --csv does not write through a planted link" $? "$out"

# --- Control characters in names are escaped: one line, no terminal escapes.
python3 - "$data/unknown_ops.onnx" "$work/escape.onnx" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
# Same length, so the protobuf stays valid: ESC [2J (clear screen) and a newline.
evil = b"my\x1b[2J\nr1"
assert len(evil) == len(b"mystery_1") and data.count(b"mystery_1") == 1
open(sys.argv[2], "wb").write(data.replace(b"mystery_1", evil))
PY
expect_error "node name with an escape sequence and a newline" 'my\x1b[2J\nr1' \
  t "$kiln" run "$work/escape.onnx"
err=$(t "$kiln" run "$work/escape.onnx" 2>&1 >/dev/null)
[[ "$err" != *$'\x1b'* ]]; check_rc "no raw ESC reaches the terminal" $? "$err"
python3 - "$data/unsorted.onnx" "$work/esc_relu.onnx" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
evil = b"relu\x1b[2Jsec"
assert len(evil) == len(b"relu_second") and data.count(b"relu_second") == 1
open(sys.argv[2], "wb").write(data.replace(b"relu_second", evil))
PY
out=$(t "$kiln" build "$work/esc_relu.onnx" -o "$work/esc.kiln" 2>&1; t "$kiln" inspect "$work/esc.kiln" --layers 2>&1)
[[ "$out" != *$'\x1b'* && "$out" == *'relu\x1b[2Jsec'* ]]
check_rc "build summary and layer table escape a node name" $? "$out"
expect_error "option value with control characters" "'no\x1b]0;pwned\x07\npe' is not an input" \
  t "$kiln" run "$model" --shapes $'no\x1b]0;pwned\x07\npe:1x3'

finish
