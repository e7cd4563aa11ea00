#!/usr/bin/env bash
# kiln --remote against a real OpenSSH server started here: Debian's sshd on 127.0.0.1 at
# a free port with its own sshd_config, host key and a throwaway user key, all in a
# temporary folder, and a private known_hosts; killed (by pid) on any exit. Checks: a
# remote build comes back as a plan `kiln inspect` reads; a remote calibration (a data
# folder up, its cache back) feeds a remote INT8 build; the second build finds the
# model in the target's hash cache (not uploaded twice); a remote run's --export-output
# comes back; Ctrl-C stops the remote kiln (exit 130); a wrong host key and a remote kiln
# of another release are each refused with one line naming the host; --plugins travels
# (the library uploaded, the remote kiln loads it for a model with a plugin op); a remote
# compare's report comes back, also when it is outside the tolerance (exit 3); one
# remote build makes one SSH connection (a ControlMaster child of kiln; six without
# it, KILN_REMOTE_REUSE=0), whose private socket folder and ssh are gone afterwards,
# also after Ctrl-C; with TEST_TARGETS (the studio's Qt test), the Build panel builds
# and the Compare view compares over this sshd offscreen.
# Usage: sshd_remote.sh KILN TESTDATA PLUGINS.so PLUGIN_MODEL.onnx [TEST_TARGETS]
#        (exit 77: openssh-server missing or sshd fails)
set -u
kiln=$(realpath "$1"); data=$(realpath "$2"); plugins=$(realpath "$3"); plugin_model=$(realpath "$4")
studio_test=${5:-}
source "$(dirname "$0")/../cli/cli_test_support.sh"

sshd_bin=$(command -v sshd || echo /usr/sbin/sshd)
for tool in "$sshd_bin" ssh ssh-keygen; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIPPED: the sshd test needs openssh-server and openssh-client ($tool is missing);"\
         "bash packaging/install-deps.sh installs them"
    exit 77
  fi
done

ssh_dir="$work/sshd"
mkdir -p "$ssh_dir"
chmod 0700 "$ssh_dir"
config="$ssh_dir/sshd_config"
sshd_pid=""
stop_sshd() {
  [[ -f "$ssh_dir/sshd.pid" ]] && sshd_pid=$(cat "$ssh_dir/sshd.pid")
  if [[ -n "$sshd_pid" ]]; then
    kill -TERM "$sshd_pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$sshd_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$sshd_pid" 2>/dev/null
  fi
  sshd_pid=""
}
trap 'stop_sshd; rm -rf "$work"' EXIT
trap 'echo "FAIL interrupted"; exit 1' INT TERM

ssh-keygen -q -t ed25519 -N '' -f "$ssh_dir/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$ssh_dir/other_host_key"
ssh-keygen -q -t ed25519 -N '' -f "$ssh_dir/user_key"
cp "$ssh_dir/user_key.pub" "$ssh_dir/authorized_keys"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$config" <<EOF
ListenAddress 127.0.0.1
Port $port
HostKey $ssh_dir/host_key
PidFile $ssh_dir/sshd.pid
AuthorizedKeysFile $ssh_dir/authorized_keys
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
EOF
mkdir -p /run/sshd 2>/dev/null  # Debian's sshd insists on its privilege-separation folder
"$sshd_bin" -f "$config" -E "$ssh_dir/sshd.log"
for _ in $(seq 1 50); do [[ -s "$ssh_dir/sshd.pid" ]] && break; sleep 0.1; done
if [[ ! -s "$ssh_dir/sshd.pid" ]]; then
  echo "SKIPPED: sshd did not start: $(tail -3 "$ssh_dir/sshd.log" 2>/dev/null)"
  exit 77
fi
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$ssh_dir/host_key.pub")" > "$ssh_dir/known_hosts"
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$ssh_dir/other_host_key.pub")" > "$ssh_dir/wrong_hosts"
ssh_options="-F /dev/null -i $ssh_dir/user_key -o IdentitiesOnly=yes -o ConnectTimeout=10"
export KILN_REMOTE_SSH_OPTIONS="$ssh_options -o UserKnownHostsFile=$ssh_dir/known_hosts"
export KILN_REMOTE_KILN="$kiln"  # the target is this machine: its kiln is the one built here
target="127.0.0.1:$port"
model="$data/compare/small_cnn.onnx"
# kiln --remote puts its ControlMaster's socket in a private folder here: checked empty
# (and no master ssh left) after every command.
export XDG_RUNTIME_DIR="$work/run"
mkdir -p "$XDG_RUNTIME_DIR"; chmod 0700 "$XDG_RUNTIME_DIR"
logins() { grep -c "Accepted publickey" "$ssh_dir/sshd.log"; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
nothing_left() {  # nothing_left DESCRIPTION
  local masters
  for _ in $(seq 1 20); do
    masters=$(pgrep -f -- "ControlPath=$XDG_RUNTIME_DIR")
    [[ -z "$masters" && -z "$(ls -A "$XDG_RUNTIME_DIR")" ]] && break
    sleep 0.1
  done
  check_rc "$1: no master ssh and no socket folder left" \
    $([[ -z "$masters" && -z "$(ls -A "$XDG_RUNTIME_DIR")" ]] && echo 0 || echo 1) \
    "masters '$masters', folder: $(ls -A "$XDG_RUNTIME_DIR")"
}

# Fresh cache entries for the model on the target (this same machine and user).
rm -rf "$HOME/.cache/kiln-remote/$(sha256sum "$model" | cut -d' ' -f1)"
rm -rf "$HOME/.cache/kiln-remote/$(sha256sum "$plugins" | cut -d' ' -f1)"  # and the plugins'
for folder in "$HOME"/.cache/kiln-remote/*/calib; do  # and for the calibration folder
  [[ -d "$folder" ]] && diff -rq "$folder" "$data/quant/calib" >/dev/null && rm -rf "${folder%/calib}"
done

# --- a remote build: the plan comes back, the model is uploaded once, over one connection
before=$(logins); started=$(date +%s.%N)
timeout 60 "$kiln" --remote "$target" build "$model" -o "$work/remote.kiln" --backend cpu \
  > "$work/build1.out" 2>&1
check_rc "a remote build succeeds" $? "$(cat "$work/build1.out")"
shared_s=$(elapsed "$started")
shared=$(($(logins) - before))
check_rc "the whole build (version check, upload, build, fetch) logged in once" \
  $((shared == 1 ? 0 : 1)) "$shared logins"
nothing_left "after a remote build"
check "it uploaded the model" grep -q "uploading $model" "$work/build1.out"
check "the plan came back and kiln inspect reads it" "$kiln" inspect "$work/remote.kiln"
timeout 60 "$kiln" --remote "$target" build "$model" -o "$work/remote2.kiln" --backend cpu \
  > "$work/build2.out" 2>&1
check_rc "a second remote build succeeds" $? "$(cat "$work/build2.out")"
check "the second build found the model in the hash cache" \
  grep -q "$model already there" "$work/build2.out"
check_rc "the model was not uploaded twice" \
  $(grep -q "uploading" "$work/build2.out" && echo 1 || echo 0) "$(cat "$work/build2.out")"
check "the second plan came back too" test -s "$work/remote2.kiln"

# --- the same build without connection sharing: a login per ssh call
before=$(logins); started=$(date +%s.%N)
KILN_REMOTE_REUSE=0 timeout 60 "$kiln" --remote "$target" build "$model" \
  -o "$work/unshared.kiln" --backend cpu > "$work/unshared.out" 2>&1
check_rc "a remote build without connection sharing succeeds" $? "$(cat "$work/unshared.out")"
unshared=$(($(logins) - before))
check_rc "without sharing it logs in once per ssh call" $((unshared >= 5 ? 0 : 1)) \
  "$unshared logins"
echo "remote build: ${shared} login, $shared_s s shared; ${unshared} logins," \
  "$(elapsed "$started") s unshared"

# --- a remote compare: its report comes back, also outside the tolerance (exit 3)
timeout 60 "$kiln" --remote "$target" compare "$work/remote.kiln" "$model" --per-tensor \
  --output "$work/accuracy.json" > "$work/compare.out" 2>&1
check_rc "a remote compare of the plan with its model succeeds" $? "$(cat "$work/compare.out")"
check "its report came back, within the tolerance" python3 -c \
  'import json, sys; r = json.load(open(sys.argv[1])); assert r["pass"] and r["intermediates"]' \
  "$work/accuracy.json"
timeout 60 "$kiln" --remote "$target" compare "$work/remote.kiln" \
  "$data/compare/small_cnn_perturbed.onnx" --output "$work/outside.json" > "$work/outside.out" 2>&1
rc=$?
check_rc "a remote compare outside the tolerance exits 3" $((rc == 3 ? 0 : 1)) \
  "exit $rc: $(cat "$work/outside.out")"
check "its report came back too, failing" python3 -c \
  'import json, sys; assert not json.load(open(sys.argv[1]))["pass"]' "$work/outside.json"
check_rc "it is no failure of kiln --remote" $(grep -q "^kiln: remote .*failed" "$work/outside.out" && echo 1 || echo 0) \
  "$(cat "$work/outside.out")"

# --- a remote run of the local plan: its --export-output comes back
timeout 60 "$kiln" --remote "$target" run "$work/remote.kiln" --iterations 2 \
  --export-output "$work/outputs.json" > "$work/run.out" 2>&1
check_rc "a remote run succeeds" $? "$(cat "$work/run.out")"
check "its output streamed back" grep -q "latency over 2 iterations" "$work/run.out"
check "its --export-output came back" python3 -c \
  'import json, sys; assert json.load(open(sys.argv[1]))' "$work/outputs.json"

# --- --plugins travels: without it the remote run of a plugin model fails naming the op;
# with it (given before the command) the library is uploaded and loaded there
timeout 60 "$kiln" --remote "$target" run "$plugin_model" --backend cpu --iterations 1 \
  --shapes A:3x4,B:2x4 > "$work/noplugin.out" 2>&1
check_rc "a plugin model fails remotely without --plugins" $(($? != 0 ? 0 : 1)) \
  "$(cat "$work/noplugin.out")"
timeout 60 "$kiln" --remote "$target" --plugins "$plugins" run "$plugin_model" --backend cpu \
  --iterations 1 --shapes A:3x4,B:2x4 --export-output "$work/plugin_out.json" \
  > "$work/plugin.out" 2>&1
check_rc "with --plugins it runs remotely" $? "$(cat "$work/plugin.out")"
check "the plugin library was uploaded" grep -q "uploading $plugins" "$work/plugin.out"
check "its outputs came back" python3 -c \
  'import json, sys; assert json.load(open(sys.argv[1]))' "$work/plugin_out.json"

# --- a remote calibration: a data folder travels (as a tar), its cache comes back and a
# remote INT8 build reads it given as --calib-cache=PATH
timeout 60 "$kiln" --remote "$target" calibrate "$data/quant/small_cnn.onnx" \
  --data "$data/quant/calib" -o "$work/cnn.cache" --batch 4 --method minmax --backend cpu \
  > "$work/calib.out" 2>&1
check_rc "a remote calibration succeeds" $? "$(cat "$work/calib.out")"
check "its data folder was uploaded" grep -q "uploading $data/quant/calib" "$work/calib.out"
check "its cache came back" test -s "$work/cnn.cache"
timeout 60 "$kiln" --remote "$target" build "$data/quant/small_cnn.onnx" -o "$work/int8.kiln" \
  --int8 --calib-cache="$work/cnn.cache" --backend cpu --min-shapes input:1x3x16x16 \
  --opt-shapes input:4x3x16x16 --max-shapes input:8x3x16x16 > "$work/int8.out" 2>&1
check_rc "a remote INT8 build with that cache succeeds" $? "$(cat "$work/int8.out")"
check "it uploaded the cache" grep -q "uploading $work/cnn.cache" "$work/int8.out"
check "the INT8 plan came back" "$kiln" inspect "$work/int8.kiln"

# --- a remote failure leaves the local file untouched
echo keep > "$work/untouched.kiln"
timeout 60 "$kiln" --remote "$target" build "$model" -o "$work/untouched.kiln" \
  --optimization-level 9 > "$work/fail.out" 2>&1
rc=$?
check_rc "a failing remote build fails" $((rc != 0 ? 0 : 1)) "$(cat "$work/fail.out")"
check "its last line names the host" bash -c "tail -1 '$work/fail.out' | grep -q 'remote 127.0.0.1'"
check "the local file is untouched" grep -qx keep "$work/untouched.kiln"

# --- Ctrl-C stops the remote kiln and exits 130
remote_runs() { pgrep -f -- "^$kiln run .*--iterations 100000000" | sort; }
before=$(remote_runs)  # another run's leftovers are not this test's to judge
new_runs() { comm -13 <(echo "$before") <(remote_runs) | grep .; }
timeout 60 "$kiln" --remote "$target" run "$work/remote.kiln" --iterations 100000000 \
  > "$work/cancel.out" 2>&1 &
remote_pid=$!
# This run's job: wait until the remote kiln itself runs (a job folder of an earlier step
# may be left; the remote process is what the interrupt must stop).
for _ in $(seq 1 300); do new_runs >/dev/null && break; sleep 0.1; done
sleep 1
kill -INT "$remote_pid"
wait "$remote_pid"; rc=$?
check_rc "an interrupted remote run exits 130" $((rc == 130 ? 0 : 1)) "exit $rc: $(cat "$work/cancel.out")"
check "it says it stopped the remote kiln" grep -q "remote kiln was stopped" "$work/cancel.out"
nothing_left "after Ctrl-C"
sleep 0.5
left=$(new_runs)
check_rc "the remote kiln was stopped" $([[ -z "$left" ]] && echo 0 || echo 1) "left: $left"
[[ -z "$left" ]] || kill $left 2>/dev/null  # a failed check leaves nothing running either

# --- refusals: a wrong host key, another release on the target
KILN_REMOTE_SSH_OPTIONS="$ssh_options -o UserKnownHostsFile=$ssh_dir/wrong_hosts" \
  expect_error "a wrong host key is refused" "remote 127.0.0.1" \
  timeout 30 "$kiln" --remote "$target" build "$model" -o "$work/wrong.kiln"
check "nothing was written for it" test ! -e "$work/wrong.kiln"
nothing_left "after a refused host key"
printf '#!/bin/sh\necho "kiln 9.9.9 (git 000000000000)"\n' > "$work/fake-kiln"
chmod +x "$work/fake-kiln"
KILN_REMOTE_KILN="$work/fake-kiln" expect_error "another release on the target is refused" \
  "runs kiln 9.9.9, this is kiln" \
  timeout 30 "$kiln" --remote "$target" build "$model" -o "$work/other.kiln"

# --- the studio: the Build panel's build over this sshd, offscreen (test_targets)
if [[ -n "$studio_test" && -x "$studio_test" ]]; then
  # QT_QPA_PLATFORM=xcb and KILN_SCREENSHOT_DIR under xvfb-run: docs/screenshots' picture.
  KILN_TEST_SSH_TARGET="$target" QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen} \
    KILN_TEST_DATA_DIR="$data" HOME="$HOME" \
    KILN_TEST_WRONG_HOSTS_OPTIONS="$ssh_options -o UserKnownHostsFile=$ssh_dir/wrong_hosts" \
    timeout 120 "$studio_test" buildThroughARealSshd compareThroughARealSshd \
    > "$work/studio.out" 2>&1
  check_rc "the studio builds and compares on the target" $? "$(tail -40 "$work/studio.out")"
  check "its build ran, not skipped" \
    grep -q "PASS   : TestTargets::buildThroughARealSshd" "$work/studio.out"
  check "its comparison ran, not skipped" \
    grep -q "PASS   : TestTargets::compareThroughARealSshd" "$work/studio.out"
  nothing_left "after the studio's builds"
fi

# The plan and cache uploaded are new entries at every run of this test: not kept.
for f in "$work/remote.kiln" "$work/cnn.cache" "$data/add.onnx"; do
  rm -rf "$HOME/.cache/kiln-remote/$(sha256sum "$f" | cut -d' ' -f1)"
done
stop_sshd
for _ in $(seq 1 50); do [[ -z "$(pgrep -f -- "$config")" ]] && break; sleep 0.1; done
left=$(pgrep -f -- "$config")
check_rc "no sshd is left" $([[ -z "$left" ]] && echo 0 || echo 1) "$left"
finish
