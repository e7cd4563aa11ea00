#!/usr/bin/env bash
# INT8 through the CLI: kiln calibrate writes an editable cache, kiln build --int8
# --calib-cache builds INT8 layers and reports accuracy against FP32, the ONNX Runtime
# QDQ model builds without a cache, an edited cache changes the engine, and corrupt
# caches or data folders fail with one line naming the file.
# Usage: test_quantization_flow.sh KILN DATA_DIR
set -u
kiln="$1"; data="$2/quant"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
passed=0; failed=0
shapes=(--min-shapes input:1x3x16x16 --opt-shapes input:4x3x16x16 --max-shapes input:8x3x16x16)

check() {  # check DESCRIPTION CONDITION-EXIT-CODE DETAIL
  if [[ $2 -eq 0 ]]; then echo "PASS $1"; passed=$((passed + 1));
  else echo "FAIL $1: $3"; failed=$((failed + 1)); fi
}

# expect_error DESCRIPTION NEEDLE COMMAND...: exit code != 0, one stderr line containing NEEDLE.
expect_error() {
  local what="$1" needle="$2"; shift 2
  local err rc lines
  err=$("$@" 2>&1 >/dev/null); rc=$?
  lines=$(printf '%s' "$err" | grep -c '')
  [[ $rc -ne 0 && $rc -lt 128 && $lines -eq 1 && "$err" == *"$needle"* ]]
  check "$what" $? "exit $rc, $lines lines, expected '$needle': $err"
}

out=$("$kiln" calibrate "$data/small_cnn.onnx" --data "$data/calib" -o "$tmp/cnn.cache" --batch 4 --method minmax 2>&1)
check "calibrate writes a cache" $? "$out"
grep -q '^tensor r1 ' "$tmp/cnn.cache"; check "cache holds the relu ranges" $? "$(head -5 "$tmp/cnn.cache")"

out=$("$kiln" build "$data/small_cnn.onnx" -o "$tmp/cnn.kiln" --int8 --calib-cache "$tmp/cnn.cache" \
      "${shapes[@]}" --accuracy-data "$data/calib" 2>&1)
check "int8 build" $? "$out"
[[ "$out" == *"Int8 6"* && "$out" == *"cosine 0.99"* && "$out" == *"top-1 8/8"* ]]
check "six INT8 layers, close to FP32" $? "$out"
layers=$("$kiln" inspect "$tmp/cnn.kiln" --layers 2>&1)
[[ "$layers" == *"cpu.int8.conv.im2col_gemm"* && "$layers" == *"cpu.int8.matmul"* ]]
check "int8 tactics in the plan" $? "$layers"

# Pin conv2's input to fp16 by hand: that layer leaves INT8.
sed -i 's/^tensor r1 .*/tensor r1 pin fp16/' "$tmp/cnn.cache"
out=$("$kiln" build "$data/small_cnn.onnx" -o "$tmp/pinned.kiln" --int8 --calib-cache "$tmp/cnn.cache" "${shapes[@]}" 2>&1)
[[ $? -eq 0 && "$out" == *"Int8 5"* ]]; check "a pinned tensor keeps its reader in float" $? "$out"

out=$("$kiln" build "$data/small_cnn_qdq.onnx" -o "$tmp/qdq.kiln" --int8 "${shapes[@]}" 2>&1)
[[ $? -eq 0 && "$out" == *"Int8 6"* ]]; check "QDQ model builds INT8 without a cache" $? "$out"
out=$("$kiln" run "$tmp/qdq.kiln" --load-inputs "input:$data/qdq_input.npy" --export-output "$tmp/out.json" 2>&1)
check "QDQ plan runs" $? "$out"

printf 'kiln-calibration 1\ntensor r1 -3\n' > "$tmp/bad.cache"
expect_error "negative range" "bad.cache' line 2" "$kiln" build "$data/small_cnn.onnx" -o "$tmp/x.kiln" --int8 --calib-cache "$tmp/bad.cache" "${shapes[@]}"
head -c 64 /dev/urandom > "$tmp/random.cache"
expect_error "random bytes as cache" "random.cache" "$kiln" build "$data/small_cnn.onnx" -o "$tmp/x.kiln" --int8 --calib-cache "$tmp/random.cache" "${shapes[@]}"
expect_error "missing cache" "nope.cache" "$kiln" build "$data/small_cnn.onnx" -o "$tmp/x.kiln" --int8 --calib-cache "$tmp/nope.cache" "${shapes[@]}"
expect_error "cache without --int8" "--calib-cache needs --int8" "$kiln" build "$data/small_cnn.onnx" -o "$tmp/x.kiln" --calib-cache "$tmp/cnn.cache"
expect_error "int8 with no ranges" "needs a calibration cache" "$kiln" build "$data/small_cnn.onnx" -o "$tmp/x.kiln" --int8 "${shapes[@]}"
expect_error "missing data folder" "no_such_dir" "$kiln" calibrate "$data/small_cnn.onnx" --data "$tmp/no_such_dir" -o "$tmp/c.cache"
mkdir "$tmp/corrupt" && printf '\x93NUMPY junk' > "$tmp/corrupt/s.npy"
expect_error "corrupt sample" "s.npy" "$kiln" calibrate "$data/small_cnn.onnx" --data "$tmp/corrupt" -o "$tmp/c.cache"
mkdir "$tmp/wrong" && cp "$data/qdq_expected.npy" "$tmp/wrong/"
expect_error "sample of the wrong rank" "qdq_expected.npy" "$kiln" calibrate "$data/small_cnn.onnx" --data "$tmp/wrong" -o "$tmp/c.cache"
expect_error "unknown method" "--method" "$kiln" calibrate "$data/small_cnn.onnx" --data "$data/calib" -o "$tmp/c.cache" --method kl

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
