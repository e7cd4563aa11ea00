#!/usr/bin/env bash
# `make run`: the CLI pipeline on the bundled example model (a PP-OCR text
# orientation classifier): inspect it, build a plan, inspect the engine, run the plan
# and the model on its reference input, and write the report to BUILD_DIR/report/. The studio takes over this target once it exists.
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
backend=cpu
"$kiln" run "$model" --load-inputs "x:$input" --iterations 1 --json 2>/dev/null | grep -q '"backend": "cuda"' && backend=cuda
plan="$build/report/model.$backend.kiln"
echo "== kiln build $model --backend $backend (timed tactics, one profile for batch 1..8)"
"$kiln" build "$model" -o "$plan" --backend "$backend" --min-shapes x:1x3x48x192 --opt-shapes x:2x3x48x192 \
  --max-shapes x:8x3x48x192 --timing-cache "$build/report/timing-cache.json" | tee "$build/report/build.txt"
"$kiln" inspect "$plan" --json > "$build/report/engine.json"
"$kiln" inspect "$plan" --layers --fusions > "$build/report/engine-layers.txt"
echo
echo "== kiln run $plan"
"$kiln" run "$plan" --load-inputs "x:$input" --iterations 5 | tee "$build/report/run-plan.txt"
echo
echo "== kiln run $model --backend cpu (the reference the GPU is checked against)"
"$kiln" run "$model" --backend cpu --load-inputs "x:$input" --iterations 5 | tee "$build/report/run-cpu.txt"
echo
echo "report written to $build/report/ (inspect.txt/.json, build.txt, engine.json (IEngineInspector keys),"
echo "  engine-layers.txt, run.txt, run-plan.txt, run-cpu.txt, outputs.json, the plan and its timing cache)"
