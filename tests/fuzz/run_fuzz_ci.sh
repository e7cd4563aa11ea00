#!/usr/bin/env bash
# Fuzzing as part of `make test` (CTest's fuzz_ci; docs/reliability.md):
#   run_fuzz_ci.sh [BUILD_DIR]      (default: build-fuzz in the source tree)
# 1. configures BUILD_DIR with clang, KILN_FUZZ=ON, CPU-only, no studio, no unit tests,
#    and builds only the fuzz targets and what they link (`--target kiln_fuzz`);
# 2. generates the seed corpora (make_corpus.sh) into BUILD_DIR/fuzz-corpus;
# 3. runs CTest's `fuzz` label there: per target, the committed regression inputs
#    (tests/fuzz/regressions/<target>/), then KILN_FUZZ_SECONDS (default 10) of fuzzing.
# Without clang and libFuzzer (packages clang and libclang-rt-dev) it prints a SKIPPED
# line and exits 77, which CTest reports as skipped.
# Environment: KILN_FUZZ_SECONDS, KILN_FUZZ_JOBS (build jobs, default 2), KILN_FUZZ_OPT
# (-O0 by default; -O1 for long hunts).
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-fuzz}
jobs=${KILN_FUZZ_JOBS:-2}
started=$SECONDS

skip() {
  echo "************************************************************************"
  echo "*** fuzz_ci SKIPPED: $1"
  echo "*** install clang and libclang-rt-dev (packaging/install-deps.sh) to run the fuzz targets"
  echo "************************************************************************"
  exit 77
}

command -v clang >/dev/null && command -v clang++ >/dev/null || skip "clang not found"
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
  >"$probe/probe.cpp"
clang++ -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" 2>"$probe/log" ||
  skip "clang cannot link libFuzzer with ASan/UBSan: $(head -n 1 "$probe/log")"

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# Line tables instead of RelWithDebInfo's -O2 -g -DNDEBUG: sanitizer reports keep
# file:line and asserts stay on (a failed one is a finding). KILN_FUZZ_OPT picks the
# optimization: -O0 (default) builds the engine with ASan/UBSan about 5x faster than
# -O1 (elementwise_binary.cpp: 10 s against 53 s), which is what keeps `make test`
# under 30 minutes on 2 cores; hours-long hunts want -O1 (more executions a second)
# in a folder of their own. The level is fixed when BUILD_DIR is first configured.
opt=${KILN_FUZZ_OPT:--O0}
if [[ ! -f $build/CMakeCache.txt ]]; then
  CC=clang CXX=clang++ cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt -gline-tables-only" \
    -DKILN_WITH_CUDA=OFF -DKILN_WITH_STUDIO=OFF -DBUILD_TESTING=OFF -DKILN_FUZZ=ON \
    "${launcher[@]}" >"$probe/configure.log" 2>&1 ||
    { cat "$probe/configure.log"; echo "fuzz_ci: configure failed"; exit 1; }
fi
nice -n 10 cmake --build "$build" --target kiln_fuzz -j "$jobs" >"$probe/build.log" 2>&1 ||
  { tail -n 80 "$probe/build.log"; echo "fuzz_ci: build failed"; exit 1; }
built=$SECONDS
echo "fuzz_ci: fuzz targets built in $((built - started)) s ($build)"

"$src/tests/fuzz/make_corpus.sh" "$build/tests/fuzz/kiln_fuzz_seeds" "$build/fuzz-corpus" ||
  { echo "fuzz_ci: seed corpus generation failed"; exit 1; }

# The targets fuzz side by side (`-j`): each run is bounded in wall time, not work, so two
# at a time halve this phase (61 s -> ~35 s on 2 cores) at half the executions each.
KILN_FUZZ_SECONDS=${KILN_FUZZ_SECONDS:-10} nice -n 10 \
  ctest --test-dir "$build" -L fuzz --output-on-failure -V -j "$jobs"
rc=$?
echo "fuzz_ci: build $((built - started)) s, seeds and runs $((SECONDS - built)) s," \
  "${KILN_FUZZ_SECONDS:-10} s per target"
exit $rc
