# One device call for Kiln's 16-bit attention kernels (the warpgroup kernel of
# fused_attention_wgmma.cu and the mma.sync kernel; KILN_ATTENTION_KERNEL picks one, unset
# each where it is the faster: fused_attention_impl.h, runsWgmmaAttention):
#   1. the attention GPU tests (test_cuda_fused_attention, test_cuda_attention_cudnn);
#   2. bench/layer_probe.py's attention cases five ways: the race (path auto), Kiln's default
#      choice alone, the warpgroup kernel alone, the mma.sync kernel alone, cuDNN alone;
#   3. the zoo on MODELS (eager, Kiln, profiles), then, where the race took the warpgroup
#      kernel, env_ab.py --at-build with KILN_ATTENTION_KERNEL unset and "mma": each model's
#      plan built and timed under each kernel.
# Usage (device tool, carry .device): sh bench/attention_kernel_call.sh "vit_b_16,bert_base_sdpa" [s]
# Logs in $OUT; a short table last.
models=${1:-}; total=${2:-580}
start=$(date +%s)
left() { echo $((total - ($(date +%s) - start))); }
mkdir -p /tmp/kiln $OUT
tar xJf .device/bundle.tar.xz -C /tmp/kiln
export LD_LIBRARY_PATH=/tmp/kiln/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
d=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(nvidia.cudnn.__path__[0], 'lib'))" 2>/dev/null)
[ -n "$d" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d
export KILN_TEST_DATA_DIR=$(pwd)/tests/data
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
for t in test_cuda_fused_attention test_cuda_attention_cudnn; do
  [ -x /tmp/kiln/bin/$t ] || continue
  timeout 200 /tmp/kiln/bin/$t --gtest_brief=1 > $OUT/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/$t.log | tr '\n' ' ')"
  grep -B2 -A10 "Failure" $OUT/$t.log | head -40
done
cases=attn_vit_b16,attn_deit_s,attn_bert_base,attn_long_1024,attn_levit_like
for run in "race:auto:" "kiln:kiln:" "wgmma:kiln:wgmma" "mma:kiln:mma" "cudnn:cudnn:"; do
  name=${run%%:*}; rest=${run#*:}; path=${rest%%:*}; kernel=${rest#*:}
  KILN_ATTENTION_KERNEL=$kernel timeout 120 python3 bench/layer_probe.py \
    --kiln /tmp/kiln/bin/kiln --cases $cases --attention-path $path \
    --work /tmp/kiln-layer-probe-$name > $OUT/probe_$name.txt 2>&1
  echo "== layer probe: $name (path $path${kernel:+, KILN_ATTENTION_KERNEL=$kernel})"
  grep "^| attn" $OUT/probe_$name.txt | cut -d'|' -f2,4,5,7 | cut -c1-160
done
[ -n "$models" ] || exit 0
l=$(left)
OUT=$OUT/zoo ZOO_TIMEOUT=$((l - 150)) sh bench/zoo_device.sh "$models" --profile \
  --budget $((l - 240)) > $OUT/zoo_call.log 2>&1
grep -E "^\| [a-z]" $OUT/zoo/zoo.md 2>/dev/null | cut -c1-300
# The A/B only where the race took the warpgroup kernel somewhere (else both plans are alike).
grep -q "wgmma" $OUT/probe_race.txt || exit 0
l=$(left)
timeout $((l - 10)) python3 bench/env_ab.py --kiln /tmp/kiln/bin/kiln --work /tmp/kiln-zoo \
  --models "$models" --variable KILN_ATTENTION_KERNEL --values ",mma" --at-build --rounds 2 \
  --out $OUT 2>&1 | tail -6
