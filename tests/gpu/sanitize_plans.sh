#!/bin/sh
# On the GPU machine (carry .device: the bundle of tests/gpu/pack_for_device.sh), from the
# repository root: whole zoo plans under compute-sanitizer (issue 27's acceptance). Exports
# each model as bench/zoo_bench.py does (cached in /tmp/kiln-zoo), builds its batch-1 FP16
# plan, then runs one inference of it under each tool on the zoo's own inputs.
#   MODELS (resnet50,bert_base_sdpa)   zoo entries (bench/zoo_models.py)
#   TOOLS (memcheck racecheck)         compute-sanitizer tools
#   SANITIZE_FLAGS_<tool>              that tool's extra options, e.g.
#                                      SANITIZE_FLAGS_racecheck="--kernel-name kns=kiln"
#                                      (Kiln's kernels only: racecheck does not model the
#                                      wgmma/TMA protocol of cuDNN's and cuBLASLt's sm90
#                                      kernels and reports hazards inside them)
#   SANITIZE_TIMEOUT (240)             seconds per tool run
# One line per (model, tool): the exit status and the tool's summary; logs in $OUT.
set -u
out=${OUT:-/tmp/kiln-sanitize}; mkdir -p "$out" /tmp/kiln
[ -x /tmp/kiln/bin/kiln ] || tar xJf .device/bundle.tar.xz -C /tmp/kiln
export LD_LIBRARY_PATH=/tmp/kiln/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
d=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(nvidia.cudnn.__path__[0], 'lib'))" 2>/dev/null)
[ -n "$d" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d
kiln=/tmp/kiln/bin/kiln work=/tmp/kiln-zoo models=${MODELS:-resnet50,bert_base_sdpa}
mkdir -p $work/plans
python3 bench/zoo_bench.py --kiln $kiln --work $work --out "$out/export" --models "$models" \
  --skip-kiln > "$out/export.log" 2>&1 || { echo "export failed: $(tail -3 "$out/export.log")"; exit 1; }
for entry in $(echo "$models" | tr ',' ' '); do
  # The batch-1 shapes and input files, as the zoo names them.
  set -- $(cd bench && python3 -c "
import sys, zoo_models as z
e = z.select('$entry')[0]; s = e.model
print(e.name, z.shapes_arg(s, 1), ','.join(f'{i.name}:$work/inputs/{s.name}_b1_{i.name}.npy' for i in s.inputs))")
  name=$1 shapes=$2 files=$3 plan=$work/plans/${1}_sanitize_b1.kiln
  if ! $kiln build $work/onnx/$name.onnx -o $plan --backend cuda --fp16 --min-shapes $shapes \
      --opt-shapes $shapes --max-shapes $shapes --quiet > "$out/${name}_build.txt" 2>&1; then
    echo "$name: build failed: $(tail -1 "$out/${name}_build.txt")"; continue
  fi
  for tool in ${TOOLS:-memcheck racecheck}; do
    flags=$(eval echo \${SANITIZE_FLAGS_$tool:-})
    log="$out/${name}_$tool.txt" started=$(date +%s)
    timeout ${SANITIZE_TIMEOUT:-240} /usr/local/cuda/bin/compute-sanitizer --tool $tool \
      --error-exitcode 9 $flags $kiln run $plan --shapes $shapes --load-inputs $files \
      --warmup 0 --iterations 1 > "$log" 2>&1
    rc=$?
    echo "$name $tool${flags:+ ($flags)} rc=$rc $(( $(date +%s) - started )) s:" \
      "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tr '\n' ' ')" \
      "$(grep -cE '^========= (Error|Race|Warning)' "$log") reports"
  done
done
