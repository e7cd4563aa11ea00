#!/usr/bin/env bash
# kiln sweep on the CPU backend: fp16_overflow.onnx over precision=fp32,fp16 x
# optimization-level=0,2 with a cosine gate that rejects the fp16 build whose outputs
# overflow; the sweep is killed after its first configuration and resumed with
# --continue (nothing finished runs again, the log ends with all four once); the
# Pareto front and the best build's command; usage errors.
# Usage: test_sweep.sh KILN TESTDATA
set -u
kiln="$1"; data="$2"
source "$(dirname "$0")/cli_test_support.sh"
model="$data/compare/fp16_overflow.onnx"
dir="$work/sweep"; log="$dir/sweep.jsonl"
sweep=("$kiln" sweep "$model" --vary precision=fp32,fp16 --vary optimization-level=0,2
       --max-error 'cosine>=0.999' --iterations 3 --dir "$dir")

lines() { [[ -f "$1" ]] && grep -c '' "$1" || echo 0; }
keys() { python3 -c 'import json,sys; [print(json.loads(l)["key"]) for l in open(sys.argv[1])]' "$1"; }

# --- usage errors: one line each
error_exit_codes="2"
expect_error "the gate is required" "--max-error" "$kiln" sweep "$model" --vary precision=fp32
expect_error "a gate with an unknown metric" "unknown metric 'l2'" \
  "$kiln" sweep "$model" --vary precision=fp32 --max-error 'l2<=1'
expect_error "int8 without ranges" "--calib-cache" \
  "$kiln" sweep "$model" --vary precision=fp32,int8 --max-error 'cosine>=0.9' --dir "$work/i8"
expect_error "an axis that is not a build option" "--vary colour" \
  "$kiln" sweep "$model" --vary colour=red --max-error 'cosine>=0.9' --dir "$work/c"
unset error_exit_codes

# --- first run, killed once the first configuration is in the log. Each task waits a
# second first (--task-delay), so the kill lands while the second one is in flight.
"${sweep[@]}" --task-delay 1 > "$work/run1.out" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  (( $(lines "$log") >= 1 )) && break
  sleep 0.1
done
kill -TERM "$pid"
wait "$pid"; rc=$?
check_rc "the interrupted sweep exits 130" $((rc == 130 ? 0 : 1)) "exit $rc: $(cat "$work/run1.out")"
first=$(lines "$log")
check_rc "the killed sweep logged 1..3 configurations" $((first >= 1 && first < 4 ? 0 : 1)) \
  "$first lines"
check "it says how to resume" grep -q -- "--continue" "$work/run1.out"
sleep 0.5
check_rc "no task is left running" $(pgrep -f "sweep --task [0-9]+ $dir" >/dev/null && echo 1 || echo 0) \
  "$(pgrep -af "sweep --task" || true)"

# The plans of finished configurations must not be built again.
keys "$log" > "$work/done1"
declare -A stamp
while read -r key; do
  plan=$(python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["key"]==sys.argv[2]][0]["plan"])' "$log" "$key")
  stamp[$key]="$plan $(stat -c %Y.%i "$plan")"
done < "$work/done1"

# --- without --continue an existing log is refused
error_exit_codes="2"
expect_error "an existing log needs --continue" "--continue" "${sweep[@]}"
unset error_exit_codes

# --- resumed
"${sweep[@]}" --continue > "$work/run2.out" 2>&1; rc=$?
check_rc "the resumed sweep ends" "$rc" "exit $rc: $(cat "$work/run2.out")"
check_rc "the log holds all four configurations" $(($(lines "$log") == 4 ? 0 : 1)) \
  "$(lines "$log") lines"
check_rc "each configuration is in the log once" \
  $(($(keys "$log" | sort -u | grep -c '') == 4 ? 0 : 1)) "$(keys "$log")"
while read -r key; do
  check_rc "'$key' did not run again" \
    $(grep -E '^\[[0-9]+\] ' "$work/run2.out" | grep -qF " $key" && echo 1 || echo 0) \
    "$(cat "$work/run2.out")"
  set -- ${stamp[$key]}
  check_rc "'$key' kept its plan" $([[ "$(stat -c %Y.%i "$1")" == "$2" ]] && echo 0 || echo 1) ""
done < "$work/done1"

status_of() {
  python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["key"]==sys.argv[2]][-1]["status"])' "$log" "$1"
}
check_rc "fp16 at level 0 overflows and is rejected" \
  $([[ $(status_of "precision=fp16 optimization-level=0") == rejected ]] && echo 0 || echo 1) ""
check_rc "fp32 at level 0 is accepted" \
  $([[ $(status_of "precision=fp32 optimization-level=0") == accepted ]] && echo 0 || echo 1) ""
check "the rejection says why" grep -q "NaN/Inf values where FP32 has finite ones" "$log"
check "the log lines carry command, plan, latency and error" python3 -c '
import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    assert e["command"].startswith("kiln build ") and e["plan"].endswith("plan.kiln"), e
    assert e["latency_ms"]["median"] > 0 and "cosine" in e["error"], e
    assert e["status"] in ("accepted", "rejected") and e["accepted"] == (e["status"] == "accepted")
' "$log"
check "the table lists the rejected configuration" \
  grep -qE "precision=fp16 optimization-level=0 +rejected" "$work/run2.out"
check "the Pareto front is printed" grep -q "^Pareto front (median latency vs 1 - cosine" "$work/run2.out"
check "the front holds only accepted configurations" python3 -c '
import sys
out = open(sys.argv[1]).read().split("Pareto front")[1].split("best")[0]
rows = [l for l in out.splitlines()[1:] if l.strip()]
assert rows and all("ms" in r for r in rows), rows
assert not any("precision=fp16 optimization-level=0" in r for r in rows), rows
' "$work/run2.out"
check "the best build's command line is printed" grep -qE "^  kiln build .*fp16_overflow.onnx -o " "$work/run2.out"

# --- a torn last line (a sweep killed while writing) is skipped with a warning, and the
# report from --json lists the four configurations and the front.
printf '{"key": "precision=fp3' >> "$log"
"$kiln" sweep "$model" --vary precision=fp32,fp16 --vary optimization-level=0,2 \
  --max-error 'cosine>=0.999' --dir "$dir" --continue --json > "$work/report.json" 2> "$work/err"
check "a torn line is reported" grep -q "skipped 1 unreadable line" "$work/err"
check "the JSON report holds four configurations and the front" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["configurations"]) == 4 and r["pareto"] and r["best"]["accepted"], r
' "$work/report.json"

# --- --shape-sweep: tiny_bert's batch across 4..16 (plans with opt 4, 8, 16, each run at
# every point); profiles cover the range without gaps; bad inputs are one-line errors.
bert="$data/builder/tiny_bert.onnx"
"$kiln" sweep "$bert" --shape-sweep input_ids:4..16 --opt-shapes input_ids:2x4 --iterations 3 \
  --dir "$work/shapes" --json > "$work/shapes.json" 2> "$work/shapes.err"
check_rc "a shape sweep runs" $? "$(cat "$work/shapes.err")"
check "it times three plans at three points and proposes covering profiles" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["points"] == [4, 8, 16] and r["symbol"] == "batch", r
assert all(len(row) == 3 and all(ms > 0 for ms in row) for row in r["ms"]), r["ms"]
p = r["profiles"]
assert p[0]["min"] == "input_ids:4x4" and p[-1]["max"] == "input_ids:16x4", p
assert "--opt-shapes input_ids:" in r["build_options"], r
' "$work/shapes.json"
check "the result is kept in the sweep folder" test -s "$work/shapes/shape_sweep.json"
expect_error "an unknown input" "no input 'ids'" \
  "$kiln" sweep "$bert" --shape-sweep ids:1..4 --dir "$work/shapes2"
expect_error "a malformed range" "write INPUT:LO..HI" \
  "$kiln" sweep "$bert" --shape-sweep input_ids:4-16 --dir "$work/shapes2"
expect_error "a static input" "has no dynamic dimension" \
  "$kiln" sweep "$data/compare/fp16_overflow.onnx" --shape-sweep x:1..4 --dir "$work/shapes2"

finish
