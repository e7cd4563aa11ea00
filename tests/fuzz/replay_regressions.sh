#!/usr/bin/env bash
# Replays the committed inputs that once crashed a fuzz target (each fixed since):
#   replay_regressions.sh FUZZ_TARGET DIR
# Every file of DIR (dotfiles aside) runs once; any crash, sanitizer report, leak or
# timeout fails the test, naming the input.
set -uo pipefail
# UBSan reports with their stack (libFuzzer has ASan print one already).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
target=$1
dir=$2
mapfile -t inputs < <(find "$dir" -maxdepth 1 -type f ! -name '.*' 2>/dev/null | sort)
if ((${#inputs[@]} == 0)); then
  echo "$(basename "$target"): no regression inputs in $dir"
  exit 0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0
for input in "${inputs[@]}"; do
  if ! "$target" -rss_limit_mb=2048 -timeout=10 "$input" >"$log" 2>&1; then
    echo "FAILED: $(basename "$target") $input"
    tail -n 40 "$log"
    failed=1
  fi
done
echo "$(basename "$target"): ${#inputs[@]} regression inputs replayed, $([[ $failed == 0 ]] && echo all pass || echo FAILURES)"
exit $failed
