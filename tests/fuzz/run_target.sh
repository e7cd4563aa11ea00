#!/usr/bin/env bash
# One bounded libFuzzer run:
#   run_target.sh FUZZ_TARGET SEED_CORPUS_DIR
# A finding fails the test only with KILN_FUZZ_STRICT=1 (local hunts, docs/reliability.md).
# In `make test` (CI) the bounded run is exploratory: a new finding is printed in a framed
# block with its replay command and the test passes, so CI never turns red on a bug the
# change under test did not make; the committed regression inputs (replayed by their own
# test, always strict) are what keeps fixed bugs fixed.
# Runs KILN_FUZZ_SECONDS (default 30; 0: the seeds once, no fuzzing) from the seeds plus what earlier runs in this
# build folder found (BUILD/tests/fuzz/fuzz-work/<target>/corpus); -rss_limit_mb=2048,
# -timeout=10. A crash fails the test and leaves the input in
# BUILD/tests/fuzz/fuzz-work/<target>/artifacts with the command that replays it; the last
# lines show executions and coverage (cov: edges, ft: features).
set -uo pipefail
# UBSan reports with their stack (libFuzzer has ASan print one already).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
target=$1
seeds=$2
name=$(basename "$target")
seconds=${KILN_FUZZ_SECONDS:-30}
work=$(dirname "$target")/fuzz-work/$name
mkdir -p "$work/corpus" "$work/artifacts"
if [[ ! -d $seeds ]]; then
  echo "$name: no seed corpus at $seeds (tests/fuzz/make_corpus.sh makes it); starting empty"
  seeds=
fi
log=$work/last-run.log
# KILN_FUZZ_SECONDS=0 runs every seed once and fuzzes nothing (-runs=0).
limit=(-max_total_time="$seconds")
((seconds > 0)) || limit=(-runs=0)
"$target" "${limit[@]}" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" ${seeds:+"$seeds"} >"$log" 2>&1
rc=$?
grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" | tail -n 2
grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$log"
if ((rc != 0)); then
  echo "FAILED: $name (exit $rc); the report from its log ($log):"
  # From the sanitizer's or libFuzzer's first report line on (the stack follows it).
  first=$(grep -n -m1 -E 'runtime error|==[0-9]+==ERROR|ALARM|out-of-memory|deadly signal' "$log" | cut -d: -f1)
  tail -n +"${first:-1}" "$log" | head -n 60
  for a in "$work"/artifacts/*; do
    [[ -f $a ]] && echo "replay: $target $a"
  done
  if [[ ${KILN_FUZZ_STRICT:-0} == 1 ]]; then
    exit 1
  fi
  echo "************************************************************************"
  echo "*** FUZZ FINDING in $name (exploratory run, not failing this test):"
  echo "*** fix it and add the input under tests/fuzz/regressions/$name/"
  echo "************************************************************************"
fi
