#!/usr/bin/env bash
# Bad input to the kiln CLI: each case must exit non-zero with exactly one line on
# stderr that names the file, node or tensor at fault. Usage: test_bad_inputs.sh KILN DATA_DIR
set -u
kiln="$1"; data="$2"
source "$(dirname "$0")/cli_test_support.sh"

expect_error "truncated file" "truncated.onnx" "$kiln" run "$data/truncated.onnx"
expect_error "random bytes" "random_bytes.onnx" "$kiln" run "$data/random_bytes.onnx"
expect_error "missing external data" "missing_weights.bin" "$kiln" run "$data/external_missing.onnx" --shapes x:2x3
expect_error "external data escaping the folder" "leaves the model folder" "$kiln" run "$data/external_escape.onnx" --shapes x:2x3
expect_error "absolute external data path" "must be relative" "$kiln" run "$data/external_absolute.onnx" --shapes x:2x3
expect_error "unknown ops, all listed" "mystery_2" "$kiln" run "$data/unknown_ops.onnx"
expect_error "unknown ops, first listed too" "mystery_1" "$kiln" run "$data/unknown_ops.onnx"
expect_error "input of the wrong shape" "input 'x'" "$kiln" run "$data/add.onnx" --load-inputs "x:$data/x_wrong_shape_2x4.npy"
expect_error "input of the wrong dtype" "expected float32, got int32" "$kiln" run "$data/add.onnx" --load-inputs "x:$data/x_wrong_dtype_int32.npy"
expect_error "dynamic dim without --shapes" "batch" "$kiln" run "$data/add.onnx"
expect_error "missing file" "no_such.onnx" "$kiln" run "$data/no_such.onnx"
expect_error "directory instead of a file" "is a directory" "$kiln" run "$data"
expect_error "not an input name" "'nope' is not an input" "$kiln" run "$data/add.onnx" --shapes nope:1x3
expect_error "inspect of random bytes" "random_bytes.onnx" "$kiln" inspect "$data/random_bytes.onnx"
expect_error "weight claiming 2^39 elements" "holds fewer" "$kiln" run "$data/huge_claim.onnx" --shapes x:2x3
expect_error "conformance of a missing folder" "no_such_dir" "$kiln" conformance "$data/no_such_dir"

finish
