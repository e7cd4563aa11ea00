#!/usr/bin/env bash
# kiln sweep --slurm against a real single-node Slurm cluster started here: munged with a
# generated key, slurmctld and slurmd on this host with a generated slurm.conf, all in
# a temporary folder and on free ports, stopped (with any job left) on exit, failure or
# timeout. The sweep: fp16_overflow.onnx over optimization-level=0,9,1 as one job array
# run one task at a time: level 0 completes, level 9 is refused by kiln build (the task
# FAILS), level 1 is cancelled with scancel while it waits; then --continue
# --retry-failed runs the failed and cancelled ones again, and Ctrl-C on a sweep
# cancels its job. The sweep's slurm/states.json carries squeue's states while it runs;
# with TEST_SWEEP_VIEW (the studio's Qt test), the Sweep view follows the first sweep
# offscreen and must see those states live. Nothing of the cluster is left running.
# Usage: slurm_cluster.sh KILN TESTDATA [TEST_SWEEP_VIEW]   (exit 77: slurm-wlm or munge missing)
set -u
kiln="$1"; data="$2"; studio_test=${3:-}
source "$(dirname "$0")/../cli/cli_test_support.sh"

for tool in slurmctld slurmd munged sbatch squeue scancel sinfo; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIPPED: the Slurm test needs slurm-wlm and munge ($tool is missing);"\
         "bash packaging/install-deps.sh installs them"
    exit 77
  fi
done

cluster="$work/cluster"
mkdir -p "$cluster"/{state,spool,log}
pids=()
cleanup() {
  # Jobs first, so no slurmstepd outlives its slurmd; then the daemons, by pid.
  if [[ -n "${SLURM_CONF:-}" ]] && ((${#pids[@]})); then
    timeout 10 scancel --quiet --full --name=kiln-sweep 2>/dev/null
    for _ in $(seq 1 50); do
      [[ -z "$(timeout 5 squeue -h -t PENDING,RUNNING,COMPLETING 2>/dev/null)" ]] && break
      sleep 0.2
    done
  fi
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  pids=()
}
trap 'cleanup; rm -rf "$work"' EXIT
trap 'echo "FAIL interrupted"; exit 1' INT TERM

# --- munge: a generated key and its own socket
dd if=/dev/urandom of="$cluster/munge.key" bs=1024 count=1 status=none
chmod 0400 "$cluster/munge.key"
chmod 0700 "$cluster"
munged --foreground --force --key-file="$cluster/munge.key" --socket="$cluster/munge.sock" \
  --pid-file="$cluster/munged.pid" --log-file="$cluster/log/munged.log" \
  --seed-file="$cluster/munge.seed" > "$cluster/log/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do [[ -S "$cluster/munge.sock" ]] && break; sleep 0.1; done
check "munged starts on its own socket" test -S "$cluster/munge.sock"

# --- slurm.conf: this host as the one node, free ports, everything under $cluster
read -r ctld_port slurmd_port < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
node=$(hostname -s)
user=$(id -un)
cat > "$cluster/slurm.conf" <<EOF
ClusterName=kilntest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$cluster/munge.sock
StateSaveLocation=$cluster/state
SlurmdSpoolDir=$cluster/spool
SlurmctldPidFile=$cluster/slurmctld.pid
SlurmdPidFile=$cluster/slurmd.pid
SlurmctldLogFile=$cluster/log/slurmctld.log
SlurmdLogFile=$cluster/log/slurmd.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=300
KillWait=2
InactiveLimit=0
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$cluster/slurm.conf"

slurmctld -D -i -f "$SLURM_CONF" > "$cluster/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$node" -f "$SLURM_CONF" > "$cluster/log/slurmd.out" 2>&1 &
pids+=($!)
idle=""
for _ in $(seq 1 120); do
  idle=$(timeout 5 sinfo -h -N -o '%T' 2>/dev/null)
  [[ "$idle" == idle* ]] && break
  sleep 0.5
done
if [[ "$idle" != idle* ]]; then
  fail_ "the node comes up idle (sinfo: '${idle}')"
  tail -n 20 "$cluster"/log/*.log "$cluster"/log/*.out
  finish; exit 1
fi
pass_ "the node comes up idle"

# --- the sweep: three tasks, one at a time; the last is cancelled while it waits
dir="$work/sweep"; log="$dir/sweep.jsonl"
sweep=("$kiln" sweep "$data/compare/fp16_overflow.onnx" --vary optimization-level=0,9,1
       --max-error 'cosine>=0.999' --iterations 3 --dir "$dir" --slurm --poll 0.5)
timeout 150 "${sweep[@]}" --array-max 1 --task-delay 3 > "$work/run1.out" 2>&1 &
sweep_pid=$!
for _ in $(seq 1 100); do [[ -f "$dir/slurm/job.json" ]] && break; sleep 0.1; done
job=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["job"])' "$dir/slurm/job.json" 2>/dev/null)
check_rc "the sweep submitted one job array" $([[ -n "$job" ]] && echo 0 || echo 1) "$(cat "$work/run1.out")"
view_pid=""
if [[ -n "$studio_test" && -x "$studio_test" ]]; then
  # QT_QPA_PLATFORM=xcb and KILN_SCREENSHOT_DIR under xvfb-run: docs/screenshots' pictures.
  KILN_TEST_SLURM_SWEEP="$log" QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen} timeout 130 "$studio_test" \
    followsARealSlurmSweep > "$work/view.out" 2>&1 &
  view_pid=$!
  for _ in $(seq 1 200); do [[ -f "$log.following" ]] && break; sleep 0.1; done
fi
state2=$(squeue -h -r -j "$job" -o '%K %T' | awk '$1 == 2 {print $2}')
check_rc "task 2 waits behind --array-max 1" $([[ "$state2" == PENDING ]] && echo 0 || echo 1) \
  "state '$state2'"
states_of() {  # states_of INDEX: task INDEX's state in the sweep's states file
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["tasks"].get(sys.argv[2], ""))' \
    "$dir/slurm/states.json" "$1" 2>/dev/null
}
for _ in $(seq 1 100); do  # the sweep polls every 0.5 s; task 0 runs for 3 s or more
  [[ "$(states_of 2)" == PENDING && "$(states_of 0)" == RUNNING ]] && break
  sleep 0.1
done
check_rc "the sweep's states file says task 2 is PENDING" \
  $([[ "$(states_of 2)" == PENDING ]] && echo 0 || echo 1) "$(cat "$dir/slurm/states.json" 2>&1)"
check_rc "and task 0 RUNNING" $([[ "$(states_of 0)" == RUNNING ]] && echo 0 || echo 1) \
  "$(cat "$dir/slurm/states.json" 2>&1)"
[[ -n "$view_pid" ]] && sleep 1  # two of the view's polls while task 2 is pending
scancel "${job}_2"
wait "$sweep_pid"; rc=$?
check_rc "the Slurm sweep ends" "$rc" "exit $rc: $(cat "$work/run1.out")"
check_rc "the states file ends COMPLETED, FAILED, CANCELLED" \
  $([[ "$(states_of 0) $(states_of 1) $(states_of 2)" == "COMPLETED FAILED CANCELLED" ]] \
    && echo 0 || echo 1) "$(cat "$dir/slurm/states.json" 2>&1)"
if [[ -n "$view_pid" ]]; then
  wait "$view_pid"; rc=$?
  check_rc "the studio's Sweep view showed the Slurm states live" "$rc" "$(tail -20 "$work/view.out")"
  check "it ran, not skipped" grep -q "PASS   : TestSweepView::followsARealSlurmSweep" "$work/view.out"
  grep "row [0-9]:" "$work/view.out" | sed 's/^/  | /'
fi

entry() {  # entry KEY FIELD... : a field of KEY's latest log line
  python3 -c '
import json, sys
e = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["key"] == sys.argv[2]][-1]
for f in sys.argv[3:]: e = e.get(f, {}) if isinstance(e, dict) else {}
print(e)' "$log" "$@"
}
expect() {  # expect DESCRIPTION WANT KEY FIELD...
  local what="$1" want="$2"; shift 2
  local got; got=$(entry "$@")
  check_rc "$what" $([[ "$got" == "$want" ]] && echo 0 || echo 1) "got '$got'"
}
check_rc "the log holds the three tasks" $(($(grep -c '' "$log") == 3 ? 0 : 1)) "$(cat "$log")"
expect "level 0 is accepted" accepted "optimization-level=0" status
expect "level 0's Slurm state is COMPLETED" COMPLETED "optimization-level=0" slurm state
expect "level 9 failed" failed "optimization-level=9" status
expect "level 9's Slurm state is FAILED" FAILED "optimization-level=9" slurm state
check "level 9's message is kiln build's" grep -q "build: .*outside 0..5" "$log"
expect "level 1 was cancelled" cancelled "optimization-level=1" status
expect "level 1's Slurm state is CANCELLED" CANCELLED "optimization-level=1" slurm state
check "the failed task's Slurm log is named and exists" \
  test -s "$(entry "optimization-level=9" slurm log)"
check "the report lists the failed task with its state and log" \
  grep -qE "^  ${job}_1 +FAILED +log: .*slurm/${job}_1.out" "$work/run1.out"
check "the report lists the cancelled task" \
  grep -qE "^  ${job}_2 +CANCELLED +log: .*slurm/${job}_2.out" "$work/run1.out"
check "the Pareto front holds level 0" grep -qE "ms .*optimization-level=0" "$work/run1.out"

# --- resume: the failed and cancelled configurations run again in a new array
timeout 120 "${sweep[@]}" --continue --retry-failed > "$work/run2.out" 2>&1; rc=$?
check_rc "the resumed sweep ends" "$rc" "exit $rc: $(cat "$work/run2.out")"
check "it submitted the two again" grep -q "(2 tasks)" "$work/run2.out"
expect "level 1 is accepted now" accepted "optimization-level=1" status
expect "level 9 fails again" failed "optimization-level=9" status
check_rc "level 0 ran once" $(($(grep -c '"optimization-level=0"' "$log") == 1 ? 0 : 1)) ""

# --- Ctrl-C cancels the job array
timeout 60 "$kiln" sweep "$data/compare/fp16_overflow.onnx" --vary optimization-level=0,1 \
  --max-error 'cosine>=0.999' --dir "$work/interrupted" --slurm --poll 0.5 --task-delay 60 \
  > "$work/run3.out" 2>&1 &
sweep_pid=$!
for _ in $(seq 1 100); do [[ -f "$work/interrupted/slurm/job.json" ]] && break; sleep 0.1; done
sleep 1
kill -INT "$sweep_pid"
wait "$sweep_pid"; rc=$?
check_rc "an interrupted Slurm sweep exits 130" $((rc == 130 ? 0 : 1)) "exit $rc: $(cat "$work/run3.out")"
check "it says it cancelled the job" grep -q "scancel" "$work/run3.out"
job3=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["job"])' "$work/interrupted/slurm/job.json")
for _ in $(seq 1 50); do
  [[ -z "$(squeue -h -j "$job3" -t PENDING,RUNNING,COMPLETING)" ]] && break
  sleep 0.2
done
check_rc "its job is gone from the queue" \
  $([[ -z "$(squeue -h -j "$job3" -t PENDING,RUNNING,COMPLETING)" ]] && echo 0 || echo 1) ""

echo "--- the first sweep's report:"; sed 's/^/  | /' "$work/run1.out"
cleanup
# Daemons and job steps still alive (a zombie waiting for its reaper is not).
alive() { ps -eo stat=,comm= | awk '$1 !~ /^Z/ && $2 ~ /^(slurmctld|slurmd|munged|slurmstepd)$/'; }
for _ in $(seq 1 50); do [[ -z "$(alive)" ]] && break; sleep 0.1; done
left=$(alive)
check_rc "no Slurm or munge daemon is left" $([[ -z "$left" ]] && echo 0 || echo 1) \
  "$left"
finish
