#!/usr/bin/env bash
# Runs `kiln conformance` on a generated suite; exits 77 (CTest: skipped) with a
# loud message when the suite was not generated (no onnx Python package).
kiln="$1"; suite="$2"; expected="$3"
if [[ ! -d "$suite" ]]; then
  echo "SKIPPED: $suite does not exist; run 'make test' (it generates the onnx package's node tests)"
  exit 77
fi
echo "suite: $suite ($(cat "$suite/.onnx-version" 2>/dev/null || echo 'unknown onnx version'))"
exec "$kiln" conformance --quiet --expected-failures "$expected" "$suite"
