#!/usr/bin/env bash
# kiln device: --calibrate measures the host CPU into the KILN_DEVICE_PEAKS file (positive
# FLOP/s and bytes/s under the CPU's name), `kiln device --json` reports them as measured,
# and a CPU plan's roofline then has a % of roofline without --device.
# Usage: test_device.sh KILN TESTDATA
set -u
kiln=$(realpath "$1"); data=$(realpath "$2")
source "$(dirname "$0")/cli_test_support.sh"
export KILN_DEVICE_PEAKS="$work/peaks.json"

check "kiln device lists the host CPU without peaks" bash -c \
  "'$kiln' device | grep -q 'none: kiln device --calibrate measures them'"
check "kiln device --calibrate measures the CPU" "$kiln" device --calibrate
check "the peaks file holds the CPU's positive peaks" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["devices"]
assert len(d) == 1, d
(name, p), = d.items()
assert p["fp32_flops"] > 1e8 and p["dram_bytes_per_second"] > 1e8, p
' "$KILN_DEVICE_PEAKS"
"$kiln" device --json > "$work/device.json"
check "kiln device --json reports them as measured" python3 -c '
import json, sys
cpu = json.load(open(sys.argv[1]))["devices"][0]
assert cpu["kind"] == "cpu" and cpu["peaks_from"].startswith("measured"), cpu
' "$work/device.json"
check "a CPU plan builds" "$kiln" build "$data/builder/tiny_bert.onnx" -o "$work/tb.kiln" --quiet \
  --min-shapes input_ids:1x8 --opt-shapes input_ids:2x16 --max-shapes input_ids:4x32
"$kiln" inspect "$work/tb.kiln" --roofline --csv "$work/roof.csv" > /dev/null
check "its roofline has a % of roofline from the measured peaks" python3 -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
col = [k for k in rows[0] if "roof" in k.lower()][0]
assert any(r[col] not in ("", None) for r in rows), (col, rows[:2])
' "$work/roof.csv"
if ! "$kiln" device --json | grep -q '"kind": "cuda"'; then
  expect_error "--backend cuda without a GPU is one line" "no usable CUDA device" \
    "$kiln" device --calibrate --backend cuda
fi
expect_error "an unknown backend" "use cpu or cuda" "$kiln" device --calibrate --backend tpu
echo '{"devices": 5}' > "$KILN_DEVICE_PEAKS"
expect_error "a malformed peaks file is named" "not a measured peaks file" \
  "$kiln" device --calibrate
finish
