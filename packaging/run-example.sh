#!/usr/bin/env bash
# `make run`: the pipeline on the bundled example model (a PP-OCR text orientation
# classifier): inspect it, build a plan, inspect the engine, run the plan and the
# model on its reference input, and write the report to BUILD_DIR/report/. Then
# kiln-studio opens the built engine (with its source model) when a display is
# there; without one, the studio runs the same session offscreen and writes its
# HTML report and screenshots beside the rest.
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
studio="$build/app/kiln-studio"
if [[ -x "$studio" ]]; then
  if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]]; then
    echo "== kiln-studio $plan"
    exec "$studio" "$plan"
  fi
  echo "== kiln-studio (no display: offscreen) $plan --profile --report ... --screenshots ..."
  QT_QPA_PLATFORM=offscreen "$studio" "$plan" --profile --report "$build/report/studio-report.html" \
    --screenshots "$build/report/screenshots"
else
  echo "kiln-studio was not built (Qt 6 / QCustomPlot / Graphviz missing): the CLI report is complete"
fi
echo "report written to $build/report/ (inspect.txt/.json, build.txt, engine.json (IEngineInspector keys),"
echo "  engine-layers.txt, run.txt, run-plan.txt, run-cpu.txt, outputs.json, the plan and its timing cache,"
echo "  studio-report.html and screenshots/ from kiln-studio)"
