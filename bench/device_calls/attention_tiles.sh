#!/bin/bash
# One device call: every GPU test binary (4 at a time; correctness, not timing), the
# attention tests under each KILN_ATTENTION_TILE with memcheck beside them, then the
# attention layer probe per tile (serial: timings). Run from the repository root with
# carry [".device"] after `PACK_NODE_DATA=0 sh tests/gpu/pack_for_device.sh`.
# Leaves $OUT/logs.tgz; prints one line per binary / tile and the probe rows.
set -u
call_start=$(date +%s)
mkdir -p /tmp/kiln /tmp/logs; tar xJf .device/bundle.tar.xz -C /tmp/kiln
export LD_LIBRARY_PATH=/tmp/kiln/lib:/usr/local/cuda/lib64:$(python3 -c "import nvidia.cudnn,os;print(os.path.join(nvidia.cudnn.__path__[0],'lib'))")
export KILN_TEST_DATA_DIR=$PWD/tests/data KILN_MODELS_DIR=$PWD/resources/models
export KILN_EXAMPLE_PLUGINS=/tmp/kiln/lib/libkiln_example_plugins.so
export KILN_EXAMPLE_MODELS_DIR=$PWD/examples/plugins/models
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee /tmp/logs/gpu.txt
B=/tmp/kiln/bin
run_one() {  # binary [tile]: one line with its gtest verdicts
  local t=$1 tile=${2:-} name=$(basename $1)${2:+@$2}
  KILN_ATTENTION_TILE=$tile timeout ${TEST_TIMEOUT:-200} $t --gtest_brief=1 > /tmp/logs/$name.txt 2>&1
  echo "$name rc=$? $(grep -E '^\[  (PASSED|FAILED) |^\[  FAILED  \] [A-Z]' /tmp/logs/$name.txt | head -6 | tr '\n' ' ')"
}
sanitize_one() {  # tool tile
  KILN_ATTENTION_TILE=$2 timeout 220 /usr/local/cuda/bin/compute-sanitizer --tool $1 --error-exitcode 9 \
    $B/test_cuda_fused_attention --gtest_brief=1 > /tmp/logs/$1_attn_$2.txt 2>&1
  echo "$1 attention tile $2 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) ' /tmp/logs/$1_attn_$2.txt | tr '\n' ' ' | cut -c1-240)"
}
export -f run_one sanitize_one; export B
start=$(date +%s)  # sanitizers first: they take longest
{ printf "sanitize_one memcheck %s\n" 1x64 2x64 1x128 2x128; printf "sanitize_one racecheck %s\n" 2x64 1x128;
  ls $B/test_cuda_* | grep -v fused_attention | sed 's/^/run_one /';
  for tile in 1x64 2x64 1x128 2x128; do echo "run_one $B/test_cuda_fused_attention $tile"; done; } |
  xargs -P 8 -L 1 bash -c '"$@"' _ | sort | tee /tmp/logs/tests.txt
echo "tests and sanitizers took $(( $(date +%s) - start )) s"
for tile in 1x64 2x64 1x128 2x128; do
  [ $(( $(date +%s) - call_start )) -gt 480 ] && { echo "== probe tile $tile skipped (time)"; continue; }
  echo "== probe tile $tile"
  KILN_ATTENTION_TILE=$tile timeout 100 python3 bench/layer_probe.py --kiln $B/kiln --work /tmp/probe_$tile \
    --cases ${PROBE_CASES:-attn_vit_b16,attn_deit_s,attn_bert_base,attn_long_1024,attn_levit_like} 2>&1 | grep "^| attn" | cut -c1-200
done | tee /tmp/logs/probe.txt
tar czf $OUT/logs.tgz -C /tmp logs
