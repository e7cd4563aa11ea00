#!/usr/bin/env bash
# INT8 through the CLI: kiln calibrate writes an editable cache, kiln build --int8
# --calib-cache builds INT8 layers and reports accuracy against FP32, the ONNX Runtime
# QDQ model builds without a cache, an edited cache changes the engine, and corrupt
# caches or data folders fail with one line naming the file.
# Usage: test_quantization_flow.sh KILN DATA_DIR
set -u
kiln="$1"; data="$2/quant"
source "$(dirname "$0")/cli_test_support.sh"
shapes=(--min-shapes input:1x3x16x16 --opt-shapes input:4x3x16x16 --max-shapes input:8x3x16x16)

out=$("$kiln" calibrate "$data/small_cnn.onnx" --data "$data/calib" -o "$work/cnn.cache" --batch 4 --method minmax 2>&1)
check_rc "calibrate writes a cache" $? "$out"
grep -q '^tensor r1 ' "$work/cnn.cache"; check_rc "cache holds the relu ranges" $? "$(head -5 "$work/cnn.cache")"
out=$("$kiln" calibrate "$data/small_cnn.onnx" --data "$data/calib" -o "$work/cpu.cache" --batch 4 --method minmax --backend cpu --quiet 2>&1)
[[ $? -eq 0 && "$out" == "calibrated "*" on cpu in "*" s: $work/cpu.cache" ]]
check_rc "--backend cpu: the summary names the backend and the time" $? "$out"

out=$("$kiln" build "$data/small_cnn.onnx" -o "$work/cnn.kiln" --int8 --calib-cache "$work/cnn.cache" \
      "${shapes[@]}" --accuracy-data "$data/calib" 2>&1)
check_rc "int8 build" $? "$out"
[[ "$out" == *"Int8 6"* && "$out" == *"cosine 0.99"* && "$out" == *"top-1 8/8"* ]]
check_rc "six INT8 layers, close to FP32" $? "$out"
layers=$("$kiln" inspect "$work/cnn.kiln" --layers 2>&1)
[[ "$layers" == *"cpu.int8.conv.im2col_gemm"* && "$layers" == *"cpu.int8.matmul"* ]]
check_rc "int8 tactics in the plan" $? "$layers"

# Pin conv2's input to fp16 by hand: that layer leaves INT8.
sed -i 's/^tensor r1 .*/tensor r1 pin fp16/' "$work/cnn.cache"
out=$("$kiln" build "$data/small_cnn.onnx" -o "$work/pinned.kiln" --int8 --calib-cache "$work/cnn.cache" "${shapes[@]}" 2>&1)
[[ $? -eq 0 && "$out" == *"Int8 5"* ]]; check_rc "a pinned tensor keeps its reader in float" $? "$out"

out=$("$kiln" build "$data/small_cnn_qdq.onnx" -o "$work/qdq.kiln" --int8 "${shapes[@]}" 2>&1)
[[ $? -eq 0 && "$out" == *"Int8 6"* ]]; check_rc "QDQ model builds INT8 without a cache" $? "$out"
out=$("$kiln" run "$work/qdq.kiln" --load-inputs "input:$data/qdq_input.npy" --export-output "$work/out.json" 2>&1)
check_rc "QDQ plan runs" $? "$out"

printf 'kiln-calibration 1\ntensor r1 -3\n' > "$work/bad.cache"
expect_error "negative range" "bad.cache' line 2" "$kiln" build "$data/small_cnn.onnx" -o "$work/x.kiln" --int8 --calib-cache "$work/bad.cache" "${shapes[@]}"
head -c 64 /dev/urandom > "$work/random.cache"
expect_error "random bytes as cache" "random.cache" "$kiln" build "$data/small_cnn.onnx" -o "$work/x.kiln" --int8 --calib-cache "$work/random.cache" "${shapes[@]}"
expect_error "missing cache" "nope.cache" "$kiln" build "$data/small_cnn.onnx" -o "$work/x.kiln" --int8 --calib-cache "$work/nope.cache" "${shapes[@]}"
expect_error "cache without --int8" "--calib-cache needs --int8" "$kiln" build "$data/small_cnn.onnx" -o "$work/x.kiln" --calib-cache "$work/cnn.cache"
expect_error "int8 with no ranges" "needs a calibration cache" "$kiln" build "$data/small_cnn.onnx" -o "$work/x.kiln" --int8 "${shapes[@]}"
expect_error "missing data folder" "no_such_dir" "$kiln" calibrate "$data/small_cnn.onnx" --data "$work/no_such_dir" -o "$work/c.cache"
mkdir "$work/corrupt" && printf '\x93NUMPY junk' > "$work/corrupt/s.npy"
expect_error "corrupt sample" "s.npy" "$kiln" calibrate "$data/small_cnn.onnx" --data "$work/corrupt" -o "$work/c.cache"
mkdir "$work/wrong" && cp "$data/qdq_expected.npy" "$work/wrong/"
expect_error "sample of the wrong rank" "qdq_expected.npy" "$kiln" calibrate "$data/small_cnn.onnx" --data "$work/wrong" -o "$work/c.cache"
expect_error "unknown backend" "unknown backend 'tpu'" "$kiln" calibrate "$data/small_cnn.onnx" --data "$data/calib" -o "$work/c.cache" --backend tpu
expect_error "unknown method" "--method" "$kiln" calibrate "$data/small_cnn.onnx" --data "$data/calib" -o "$work/c.cache" --method kl

finish
