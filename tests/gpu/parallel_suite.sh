#!/bin/bash
# On the GPU machine (after `PACK_NODE_DATA=0 PACK_TESTS="..." sh tests/gpu/pack_for_device.sh`,
# carry [".device"], from the repository root): every packed GPU test binary, 8 at a time
# (correctness, not timing), with compute-sanitizer memcheck/racecheck runs beside them,
# then the tests that need the GPU to themselves alone: out-of-memory tests (they fill
# the GPU, so a neighbour fails with "GPU out of memory") and the profiler's head-start
# timing (58 ms of layer time under 8-way load against < 10 ms alone).
# One line per binary or sanitizer run; logs in $OUT/logs.tgz.
#   SANITIZE="memcheck:test_cuda_fused_attention racecheck:test_cuda_fused_attention"
#   (the default) names the sanitizer runs ("memcheck:*": every packed test binary);
#   TEST_TIMEOUT (200 s) bounds each binary, SANITIZE_TIMEOUT (220 s) each sanitizer run
#   (SANITIZE_TIMEOUT_racecheck etc.: one tool's; racecheck ran test_cuda_fused_conv and
#   test_cuda_int8 past 230 s on the H200);
#   SANITIZE_FLAGS_racecheck etc.: one tool's extra options, e.g. "--kernel-name kns=kiln"
#   (only Kiln's kernels: racecheck does not model the wgmma/TMA protocol of cuDNN's and
#   cuBLASLt's sm90 kernels, reports hazards inside them and runs them for minutes);
#   PARALLEL (8) runs at once; PLAIN=0 skips the plain (unsanitized) runs.
set -u
mkdir -p /tmp/kiln /tmp/logs; tar xJf .device/bundle.tar.xz -C /tmp/kiln
export LD_LIBRARY_PATH=/tmp/kiln/lib:/usr/local/cuda/lib64:$(python3 -c "import nvidia.cudnn,os;print(os.path.join(nvidia.cudnn.__path__[0],'lib'))")
export KILN_TEST_DATA_DIR=$PWD/tests/data KILN_MODELS_DIR=$PWD/resources/models
export KILN_EXAMPLE_PLUGINS=/tmp/kiln/lib/libkiln_example_plugins.so
export KILN_EXAMPLE_MODELS_DIR=$PWD/examples/plugins/models
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee /tmp/logs/gpu.txt
export B=/tmp/kiln/bin ALONE='*OutOfMemory*:*HeadStart*'
run_one() {  # binary [gtest filter]: one line with its gtest verdicts
  local t=$1 filter=${2:--$ALONE} name=$(basename $1)${2:+@alone}
  timeout ${TEST_TIMEOUT:-200} $t --gtest_brief=1 --gtest_filter="$filter" > /tmp/logs/$name.txt 2>&1
  echo "$name rc=$? $(grep -E '^\[  (PASSED|FAILED) |^\[  FAILED  \] [A-Z]' /tmp/logs/$name.txt | head -6 | tr '\n' ' ')"
}
sanitize_one() {  # tool binary (skipped when the bundle lacks it)
  [ -x $B/$2 ] || { echo "$1 $2 skipped: not in the bundle"; return; }
  local bound=SANITIZE_TIMEOUT_$1 flags=SANITIZE_FLAGS_$1  # per tool
  timeout ${!bound:-${SANITIZE_TIMEOUT:-220}} /usr/local/cuda/bin/compute-sanitizer --tool $1 --error-exitcode 9 ${!flags:-} \
    $B/$2 --gtest_brief=1 --gtest_filter="-$ALONE" > /tmp/logs/$1_$2.txt 2>&1
  echo "$1 $2 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) ' /tmp/logs/$1_$2.txt | tr '\n' ' ' | cut -c1-240)"
}
export -f run_one sanitize_one
start=$(date +%s)  # sanitizers first: they take longest
{ for s in ${SANITIZE:-memcheck:test_cuda_fused_attention racecheck:test_cuda_fused_attention}; do
    if [ "${s#*:}" = "*" ]; then
      for t in $B/test_cuda_*; do echo "sanitize_one ${s%%:*} $(basename $t)"; done
    else echo "sanitize_one ${s%%:*} ${s#*:}"; fi; done
  [ "${PLAIN:-1}" = 0 ] || ls $B/test_cuda_* | sed 's/^/run_one /'; } |
  xargs -P ${PARALLEL:-8} -L 1 bash -c '"$@"' _ | sort | tee /tmp/logs/tests.txt
for t in $B/test_cuda_*; do
  $t --gtest_list_tests --gtest_filter="$ALONE" | grep -q "^  " && run_one $t "$ALONE"
done | tee -a /tmp/logs/tests.txt
echo "GPU tests took $(( $(date +%s) - start )) s"
tar czf ${OUT:-/tmp}/logs.tgz -C /tmp logs
