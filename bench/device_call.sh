# One device call: the named GPU test binaries, then a zoo subset with profiles.
# Usage (device tool, carry .device): sh bench/device_call.sh "test_a test_b" "model,model" [seconds]
# Test logs and the zoo's files land in $OUT.
tests=${1:-}; models=${2:-}; total=${3:-560}
start=$(date +%s)
mkdir -p /tmp/kiln $OUT
tar xJf .device/bundle.tar.xz -C /tmp/kiln
export LD_LIBRARY_PATH=/tmp/kiln/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
d=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(nvidia.cudnn.__path__[0], 'lib'))" 2>/dev/null)
[ -n "$d" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d
export KILN_TEST_DATA_DIR=$(pwd)/tests/data
for t in $tests; do
  timeout 240 /tmp/kiln/bin/$t --gtest_brief=1 > $OUT/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/$t.log | tr '\n' ' ')"
  grep -B2 -A12 "Failure" $OUT/$t.log | head -60
done
if [ -n "$models" ]; then
  left=$((total - ($(date +%s) - start)))
  OUT=$OUT/zoo ZOO_TIMEOUT=$left sh bench/zoo_device.sh "$models" --profile --budget $((left - 90))
fi
