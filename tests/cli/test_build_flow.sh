#!/usr/bin/env bash
# The build -> plan -> run -> inspect flow of the kiln CLI on the CPU backend, and
# its errors. Usage: test_build_flow.sh KILN DATA_DIR
set -u
kiln="$1"; data="$2"
source "$(dirname "$0")/cli_test_support.sh"

bert="$data/builder/tiny_bert.onnx"
profiles=(--min-shapes input_ids:1x4 --opt-shapes input_ids:2x16 --max-shapes input_ids:4x32
          --min-shapes input_ids:8x32 --opt-shapes input_ids:8x64 --max-shapes input_ids:16x128)

# --version: the release, the commit, how it was built and what it finds (no GPU is an
# answer, not an error).
check "--version names the release and the commit" bash -c "'$kiln' --version | \
  grep -qE '^kiln [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]{7,}(-dirty)?|unknown)\)$'"
check "--version says what it was built with" bash -c "'$kiln' --version | \
  grep -qE '^(built with CUDA [0-9]+\.[0-9]+, cuDNN [0-9.]+, cuBLASLt [0-9.]+|built without CUDA)'"
check "--version says what it found" bash -c "'$kiln' --version | \
  grep -qE '^(at run time: |built without CUDA)'"

# Level 0 takes each layer's first tactic (the reference kernels): outputs equal the model's.
check "build with two profiles" "$kiln" build "$bert" -o "$work/bert.kiln" "${profiles[@]}" \
  --optimization-level 0 --timing-cache "$work/cache.json" --save-tactics "$work/tactics.json" --quiet
check "plan runs inside profile 0" "$kiln" run "$work/bert.kiln" --shapes input_ids:3x20 \
  --export-output "$work/plan_out.json" --json
check "model runs at the same shape" "$kiln" run "$bert" --backend cpu --shapes input_ids:3x20 \
  --export-output "$work/onnx_out.json" --json
check "plan outputs equal the model's" cmp -s "$work/plan_out.json" "$work/onnx_out.json"
check "plan runs inside profile 1" "$kiln" run "$work/bert.kiln" --shapes input_ids:12x100 \
  --optimization-profile 1 --json
check "warm cache: 100% hit rate" bash -c "'$kiln' build '$bert' -o '$work/b2.kiln' ${profiles[*]} \
  --timing-cache '$work/cache.json' --optimization-level 0 --json | grep -q '\"hit_rate\": 1.0'"
check "replayed tactics" bash -c "'$kiln' build '$bert' -o '$work/b3.kiln' ${profiles[*]} \
  --load-tactics '$work/tactics.json' --optimization-level 0 --json | grep -q '\"unreplayed_layers\": \[\]'"
# A 16-bit request on the CPU backend (the default) says it builds float32 only.
check "--fp16 on the CPU backend warns that it builds float32" bash -c "'$kiln' build '$bert' \
  -o '$work/b16.kiln' ${profiles[*]} --fp16 --optimization-level 0 2>&1 >/dev/null | \
  grep -q 'the CPU backend builds float32 layers only; --fp16 takes effect with --backend cuda'"
check "inspect --json has the inspector keys" bash -c "'$kiln' inspect '$work/bert.kiln' --json \
  | grep -q '\"TacticName\": \"cpu.matmul.blas\"'"
check "inspect --layers prints the table" bash -c "'$kiln' inspect '$work/bert.kiln' --layers | grep -q '^scores '"

head -c 2000 "$work/bert.kiln" > "$work/truncated.kiln"
cp "$work/bert.kiln" "$work/flipped.kiln"
printf '\x00\x01\x02' | dd of="$work/flipped.kiln" bs=1 seek=3000 conv=notrunc status=none
expect_error "truncated plan" "truncated.kiln" "$kiln" run "$work/truncated.kiln" --shapes input_ids:1x4
expect_error "damaged plan" "checksum mismatch" "$kiln" run "$work/flipped.kiln" --shapes input_ids:1x4
expect_error "inspect of a damaged plan" "flipped.kiln" "$kiln" inspect "$work/flipped.kiln"
expect_error "shape outside the profile" "outside optimization profile 0: min 1x4, max 4x32" \
  "$kiln" run "$work/bert.kiln" --shapes input_ids:2x64
expect_error "no such profile" "the plan has 2 profiles" \
  "$kiln" run "$work/bert.kiln" --shapes input_ids:2x8 --optimization-profile 5
expect_error "plan on another backend" "built for the cpu backend" \
  "$kiln" run "$work/bert.kiln" --backend cuda --shapes input_ids:2x8
expect_error "obeyed impossible constraint" "layer 'embed'" "$kiln" build "$bert" -o "$work/x.kiln" \
  "${profiles[@]}" --layer-precisions embed:int8 --precision-constraints obey --quiet
# With --json the failure is also a JSON object on stdout, the node as fields.
refused=$("$kiln" build "$bert" -o "$work/x.kiln" "${profiles[@]}" --layer-precisions embed:int8 \
  --precision-constraints obey --json 2>/dev/null)
[[ "$refused" == *'"error": {'* && "$refused" == *'"node": {'* && "$refused" == *'"name": "embed"'* \
   && "$refused" == *'"layer": "embed"'* ]]
check_rc "a failed build's --json names its node" $? "$refused"
expect_error "dynamic input without a profile" "give an optimization profile" \
  "$kiln" build "$bert" -o "$work/x.kiln" --quiet
expect_error "bad precision spec" "unknown precision" "$kiln" build "$bert" -o "$work/x.kiln" \
  "${profiles[@]}" --layer-precisions '*:fp12'
check "a failed build leaves no plan behind" test ! -e "$work/x.kiln"

finish
