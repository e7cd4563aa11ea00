#!/bin/bash
# Runs on the GPU machine (see pack_for_device.sh): unpacks the bundle, then
#   quick: GPU unit tests, conformance (CPU and CUDA on the same suites), real models
#   bench: exports the benchmark models and runs bench/run_bench.py
#   full:  both
#   unit:  the GPU unit tests only (runtime, op families, the CUDA builder)
#   compare: exports ResNet-50 and BERT-base and runs bench/compare_bench.py (kiln compare
#          cuda fp16/fp32 against the CPU reference, kiln debug precision)
#   builder: exports ResNet-50 and BERT-base and runs bench/build_bench.py (kiln build
#          --backend cuda cold and warm, inspector candidates, kiln run PLAN vs PyTorch)
# Logs and JSON land in $OUT; the last lines printed are a short summary.
set -u
mode=${1:-full}  # one mode, or several joined by commas ("unit,builder")
shift || true
has() { case ",$mode," in *",$1,"*) return 0 ;; esac; return 1; }
root=$(pwd)
# At most 8 files come back from $OUT: logs go to a work folder, then one tarball.
final=${OUT:-/tmp/kiln-out}
out=/tmp/kiln-logs
mkdir -p "$out" "$final" /tmp/kiln
tar xJf .device/bundle.tar.xz -C /tmp/kiln
export LD_LIBRARY_PATH=/tmp/kiln/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
cudnn_dir=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(nvidia.cudnn.__path__[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_dir" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$cudnn_dir
kiln=/tmp/kiln/bin/kiln
export KILN_TEST_DATA_DIR=$root/tests/data KILN_MODELS_DIR=$root/resources/models
export KILN_EXAMPLE_PLUGINS=/tmp/kiln/lib/libkiln_example_plugins.so
export KILN_EXAMPLE_MODELS_DIR=$root/examples/plugins/models
summary=$out/summary.txt
: > "$summary"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$summary"
"$kiln" run resources/models/ppocr_mobile_v2_cls/model.onnx --shapes x:1x3x48x192 --iterations 3 --duration 0 --warmup 0 2>&1 | head -3 | tee -a "$summary"

if has quick || has full || has unit; then
  for t in /tmp/kiln/bin/test_*; do
    name=$(basename "$t")
    timeout 300 "$t" --gtest_brief=1 > "$out/$name.log" 2>&1
    echo "$name: exit $? $(grep -E '^\[  (PASSED|FAILED)' "$out/$name.log" | tr '\n' ' ')" | tee -a "$summary"
  done
  # The example plugins' models through the CLI on the GPU (CUDA implementations).
  timeout 300 "$kiln" --plugins "$KILN_EXAMPLE_PLUGINS" conformance --backend cuda \
    "$KILN_EXAMPLE_MODELS_DIR" > "$out/conf-plugins-cuda.log" 2>&1
  echo "plugins (cuda): exit $? $(tail -2 "$out/conf-plugins-cuda.log" | tr '\n' ' ')" | tee -a "$summary"
fi
if has quick || has full; then
  python3 tests/conformance/generate_node_tests.py /tmp/kiln/node-pypi > /dev/null 2>&1
  for suite in node112:/tmp/kiln/data/node node-pypi:/tmp/kiln/node-pypi models:resources/models; do
    label=${suite%%:*}; dir=${suite#*:}
    tol=""; [ "$label" = models ] && tol="--atol 1e-4 --rtol 1e-3"
    for backend in cpu cuda; do
      timeout 900 "$kiln" conformance --backend $backend $tol --json "$dir" > "$out/conf-$label-$backend.json" 2> "$out/conf-$label-$backend.err"
    done
    python3 tests/gpu/compare_conformance.py "$out/conf-$label-cpu.json" "$out/conf-$label-cuda.json" "$label" | tee -a "$summary"
  done
fi
if has bench || has full; then
  python3 bench/export_models.py /tmp/kiln/models "$@" > "$out/export.log" 2>&1 || tail -5 "$out/export.log"
  PYTHONUNBUFFERED=1 python3 bench/run_bench.py "$kiln" /tmp/kiln/models "$out" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench.log" | tee -a "$summary"
fi
if has builder; then
  python3 bench/export_models.py /tmp/kiln/models resnet50 bert_base > "$out/export.log" 2>&1 || tail -5 "$out/export.log"
  PYTHONUNBUFFERED=1 python3 bench/build_bench.py "$kiln" /tmp/kiln/models "$out" ${BUILD_BENCH_ARGS:-} 2>&1 | tee "$out/build_bench.log" | tee -a "$summary"
fi
if has compare; then  # kiln compare fp16/fp32 and kiln debug precision (bench/compare_bench.py)
  python3 bench/export_models.py /tmp/kiln/models resnet50 bert_base > "$out/export.log" 2>&1 || tail -5 "$out/export.log"
  PYTHONUNBUFFERED=1 python3 bench/compare_bench.py "$kiln" /tmp/kiln/models "$out" 2>&1 | tee "$out/compare_bench.log" | tail -20 | tee -a "$summary"
fi
echo "=== summary ==="
cat "$summary"
cp "$summary" "$final/"
[ -f "$out/build_bench.json" ] && cp "$out/build_bench.json" "$final/"
tar cf - -C "$out" --exclude='*.kiln' . | xz -6 > "$final/logs.tar.xz"
