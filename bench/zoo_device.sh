# One device call of the benchmark zoo (docs/benchmarks.md, "The zoo").
# Usage: sh bench/zoo_device.sh "resnet50,bert_base_sdpa,levit_128" [zoo_bench.py options]
#   (carry .device: the bundle of tests/gpu/pack_for_device.sh; results in $OUT:
#   zoo.jsonl, zoo.md, zoo.log, and zoo_compile.json with --compile)
# Exports, inputs and plans are cached in /tmp/kiln-zoo while the machine stays warm.
models=${1:?usage: sh bench/zoo_device.sh MODELS [options]}; shift
out=${OUT:-/tmp/kiln-zoo/out}; mkdir -p $out /tmp/kiln
tar xJf .device/bundle.tar.xz -C /tmp/kiln
export LD_LIBRARY_PATH=/tmp/kiln/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# The dynamo exporter needs onnxscript, which the device image may lack and cannot
# download: the wheels pack_for_device.sh put in .device/wheels (PACK_PY_WHEELS=1) are
# unpacked beside the bundle and put on PYTHONPATH, only when the import fails.
if ! python3 -c "import onnxscript" 2>/dev/null && ls .device/wheels/*.whl >/dev/null 2>&1; then
  for w in .device/wheels/*.whl; do python3 -m zipfile -e "$w" /tmp/kiln/pywheels; done
  export PYTHONPATH=/tmp/kiln/pywheels${PYTHONPATH:+:$PYTHONPATH}
  python3 -c "import onnxscript; print('onnxscript', onnxscript.__version__, 'from .device/wheels')"
fi
d=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(nvidia.cudnn.__path__[0], 'lib'))" 2>/dev/null)
[ -n "$d" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d
# The device tool stops a command at 600 s: the script starts no model after --budget
# (default 480 s) and this timeout keeps the call's files.
PYTHONUNBUFFERED=1 timeout ${ZOO_TIMEOUT:-570} python3 bench/zoo_bench.py --kiln /tmp/kiln/bin/kiln \
  --work /tmp/kiln-zoo --out $out --models "$models" "$@" 2>&1 | tee $out/zoo.log |
  grep -vE "^\[torch.onnx\]|Warning|warn\(|^Evaluation failed" | cut -c1-700
