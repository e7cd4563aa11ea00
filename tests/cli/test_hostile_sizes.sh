#!/usr/bin/env bash
# Hostile sizes, types and structures through the kiln CLI (issue 27, part A): each
# case exits non-zero with exactly one stderr line naming the file and the value,
# node or field at fault. The inputs are written by kiln_make_hostile_inputs (from
# tests/support/hostile_models.cpp), plans edited with valid checksums included.
# Usage: test_hostile_sizes.sh KILN MAKE_HOSTILE_INPUTS DATA_DIR
set -u
kiln="$1"; make_inputs="$2"; data="$3"
source "$(dirname "$0")/cli_test_support.sh"

check "hostile inputs written" "$make_inputs" "$work"
h="$work"

# Crash signatures 2 and 3: counts and byte sizes that wrap.
expect_error "input dims that wrap to 2 elements" "wrapped_input.onnx: graph input: value 'x': dim 1 (6148914691236517206) exceeds the limit" \
  "$kiln" run "$h/wrapped_input.onnx"
expect_error "2^62-element input" "huge_input.onnx: graph input: value 'x': shape 2147483648x2147483648 of float32 needs more than the limit" \
  "$kiln" run "$h/huge_input.onnx"
expect_error "weight dims that wrap" "wrapped_weight.onnx: initializer: tensor 'w': dim 1" \
  "$kiln" run "$h/wrapped_weight.onnx"
expect_error "Reshape target from a Constant that wraps (run)" "reshape_wrap.onnx: node 'reshape' (#1, Reshape): shape 3x6148914691236517206 has more elements than a 64-bit count holds" \
  "$kiln" run "$h/reshape_wrap.onnx" --backend cpu
expect_error "Reshape target from a Constant that wraps (build)" "node 'reshape' (#1, Reshape): output 'r': dim 1 (6148914691236517206) exceeds the limit" \
  "$kiln" build "$h/reshape_wrap.onnx" -o "$work/reshape.kiln" --quiet
expect_error ".npy header dims that wrap" "wrapped.npy: .npy shape: dim 1 (6148914691236517206) exceeds the limit" \
  "$kiln" run "$data/add.onnx" --load-inputs "x:$h/wrapped.npy"
expect_error ".pb tensor dims that wrap" "wrapped.pb: tensor 'x': dim 1 (6148914691236517206) exceeds the limit" \
  "$kiln" run "$data/add.onnx" --load-inputs "x:$h/wrapped.pb"
expect_error "--shapes that wrap" "input 'x': dim 1 (6148914691236517206) exceeds the limit" \
  "$kiln" run "$data/add.onnx" --shapes x:3x6148914691236517206
# The kernel output-size budget (1 GiB here): huge pads fail before allocating.
expect_error "Pad output past the budget" "node 'pad' (#0, Pad): output 'y': shape 1073741826x2 of float32 needs more than the limit of 1073741824 bytes" \
  env KILN_MAX_TENSOR_BYTES=1073741824 "$kiln" run "$h/pad_huge.onnx" --backend cpu

# Silent or misleading cases.
expect_error "element type 9999" "elem_type_9999.onnx: graph input: value 'x': element type 9999 is not an ONNX tensor type" \
  "$kiln" run "$h/elem_type_9999.onnx"
expect_error "element type -7" "value 'x': element type -7 is not an ONNX tensor type" \
  "$kiln" run "$h/elem_type_minus7.onnx"
expect_error "opset 2^32+17" "opset_2e32_17.onnx: opset 4294967313 of ai.onnx is out of range" \
  "$kiln" run "$h/opset_2e32_17.onnx"
check "If nested 32 deep runs" "$kiln" run "$h/if_nested_32.onnx" --backend cpu
expect_error "If nested 70 deep" "if_nested_70.onnx: node 'if_70' (#0, If): subgraphs nest 70 levels deep; the limit is 64" \
  "$kiln" run "$h/if_nested_70.onnx"
expect_error "build: output never produced" "output_never_produced.onnx: graph output 'ghost' is never produced" \
  "$kiln" build "$h/output_never_produced.onnx" -o "$work/ghost.kiln" --quiet
expect_error "build: Split without outputs" "split_no_outputs.onnx: node 'split' (#1, Split): names no outputs" \
  "$kiln" build "$h/split_no_outputs.onnx" -o "$work/split.kiln" --quiet
expect_error "build: empty input name" "empty_input_name.onnx: graph input #1 has an empty name" \
  "$kiln" build "$h/empty_input_name.onnx" -o "$work/empty.kiln" --quiet

expect_error "build: profile max that wraps" "optimization profile 0, input 'x': max: dim 0 (6148914691236517206) exceeds the limit" \
  "$kiln" build "$data/add.onnx" -o "$work/wrapped_profile.kiln" --quiet \
  --min-shapes x:1x3 --opt-shapes x:2x3 --max-shapes x:6148914691236517206x3

# Plans edited with valid checksums: every field validated on load.
profile=(--min-shapes x:1x3 --opt-shapes x:2x3 --max-shapes x:4x3)
check "build a plan to edit" "$kiln" build "$data/add.onnx" -o "$work/add.kiln" "${profile[@]}" --quiet
check "edited plans written" "$make_inputs" "$work" "$work/add.kiln"
expect_error "plan: negative profile dim" "plan_negative_profile_dim.kiln: optimization profile 0, input 'x': dim 0 needs 0 <= min <= opt <= max (-1, 2, 4)" \
  "$kiln" run "$h/plan_negative_profile_dim.kiln" --shapes x:2x3
expect_error "plan: profile dim that wraps" "plan_wrapped_profile.kiln: optimization profile 0, input 'x': max: dim 0 (6148914691236517206) exceeds the limit" \
  "$kiln" run "$h/plan_wrapped_profile.kiln" --shapes x:2x3
expect_error "plan: precision code no backend runs" "plan_string_precision.kiln: layer 'add0': precision string is not one a backend runs layers in" \
  "$kiln" run "$h/plan_string_precision.kiln" --shapes x:2x3
expect_error "inspect: precision code no backend runs" "plan_string_precision.kiln: layer 'add0'" \
  "$kiln" inspect "$h/plan_string_precision.kiln"

finish
