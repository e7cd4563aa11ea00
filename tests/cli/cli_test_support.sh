# Shared by the CLI test scripts (tests/cli/test_*.sh), which source it after `set -u`.
# It makes $work, a temporary folder removed on exit, counts what passes and fails,
# and provides:
#   check DESCRIPTION COMMAND...      passes when COMMAND exits 0 (its stdout hidden)
#   check_rc DESCRIPTION RC DETAIL    passes when the exit code RC is 0; prints DETAIL if not
#   expect_error DESCRIPTION NEEDLE COMMAND...
#                                     passes when COMMAND fails cleanly: an exit code in
#                                     1..127 (only those listed in $error_exit_codes when a
#                                     script sets it, e.g. "1 2") and exactly one line on
#                                     stderr, containing NEEDLE
#   finish                            prints the totals; its status is 0 when nothing failed
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
passed=0; failed=0

pass_() { echo "PASS $1"; passed=$((passed + 1)); }
fail_() { echo "FAIL $1"; failed=$((failed + 1)); }

check() {
  local what="$1"; shift
  if "$@" >/dev/null; then pass_ "$what"; else fail_ "$what"; fi
}

check_rc() {
  if [[ $2 -eq 0 ]]; then pass_ "$1"; else fail_ "$1: $3"; fi
}

is_error_exit() {  # is_error_exit RC
  if [[ -n "${error_exit_codes:-}" ]]; then [[ " $error_exit_codes " == *" $1 "* ]]
  else [[ $1 -ne 0 && $1 -lt 128 ]]; fi
}

expect_error() {
  local what="$1" needle="$2"; shift 2
  local err rc lines
  err=$("$@" 2>&1 >/dev/null); rc=$?
  lines=$(printf '%s' "$err" | grep -c '')
  if is_error_exit $rc && [[ $lines -eq 1 && "$err" == *"$needle"* ]]; then
    pass_ "$what: $err"
  else
    fail_ "$what (exit $rc, $lines lines, expected '$needle'): $err"
  fi
}

finish() {
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}
