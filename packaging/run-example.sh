#!/usr/bin/env bash
# `make run`: the CLI pipeline on the bundled example model (a PP-OCR text
# orientation classifier): inspect it, run it on its reference input, and write
# the report to BUILD_DIR/report/. The studio takes over this target once it exists.
set -euo pipefail
build="${1:-build}"
kiln="$build/app/kiln"
model=resources/models/ppocr_mobile_v2_cls/model.onnx
input=resources/models/ppocr_mobile_v2_cls/test_data_set_0/input_0.pb
mkdir -p "$build/report"
echo "== kiln inspect $model"
"$kiln" inspect "$model" --shapes x:2x3x48x192 | tee "$build/report/inspect.txt"
"$kiln" inspect "$model" --shapes x:2x3x48x192 --json > "$build/report/inspect.json"
echo
echo "== kiln run $model (CUDA when a GPU is usable, else the CPU reference backend)"
"$kiln" run "$model" --load-inputs "x:$input" --iterations 5 --export-output "$build/report/outputs.json" \
  | tee "$build/report/run.txt"
echo
echo "== kiln run $model --backend cpu (the reference the GPU is checked against)"
"$kiln" run "$model" --backend cpu --load-inputs "x:$input" --iterations 5 | tee "$build/report/run-cpu.txt"
echo
echo "report written to $build/report/ (inspect.txt, inspect.json, run.txt, run-cpu.txt, outputs.json)"
