#!/usr/bin/env bash
# Screenshots of kiln-studio for the README, on a real display server (Xvfb):
# the PP-OCR text classifier built on the CPU backend and profiled, Magika (node names
# with jax2tf scopes: the graphs' collapsible blocks), then a real TensorRT engine
# (trtexec export of a QAT MobileNet), at 1920x1080 and 1366x768, each view (the Roofline
# tab included); from their Qt tests: the Calibration view, the Shapes dialog (silero_vad's
# sample rate), the Sweep view over a real CPU sweep and the Roofline tab of the MobileNet
# export with an H100's roofs (both sizes), the Remote Targets dialog; the Sweep view on a
# real single-node Slurm cluster (sweep-view-slurm*.png) where slurm-wlm is installed, the
# Compare view on a local sshd target (compare-remote.png).
# PNGs go to docs/screenshots/.
# Usage: packaging/screenshots.sh [BUILD_DIR]
set -euo pipefail
build="${1:-build}"
studio="$build/app/kiln-studio"
out=docs/screenshots
[[ -x "$studio" ]] || { echo "screenshots: $studio not built" >&2; exit 1; }
command -v xvfb-run >/dev/null || { echo "screenshots: xvfb-run missing (apt install xvfb xauth)" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shoot NAME SIZE FILE [studio options...]: the window fills a WxH screen (Qt's -geometry);
# 1920x1080 pictures are NAME-VIEW.png, other sizes NAME-SIZE-VIEW.png.
shoot() {
  local name=$1 size=$2 file=$3
  shift 3
  local tag=$name
  [[ $size == 1920x1080 ]] || tag=$name-$size
  xvfb-run -a -s "-screen 0 ${size}x24" "$studio" -geometry "$size+0+0" "$file" "$@" \
    --screenshots "$tmp/$tag"
  for png in "$tmp/$tag"/*.png; do cp "$png" "$out/$tag-$(basename "$png" | sed 's/^studio-//')"; done
}
# A full-HD monitor and a small laptop screen (issue 26: panels must fit both).
for size in 1920x1080 1366x768; do
  shoot ppocr-cls "$size" resources/models/ppocr_mobile_v2_cls/model.onnx --build \
    --shapes x:1x3x48x192 --profile
  shoot magika "$size" resources/models/magika_standard_v3_3/model.onnx --build \
    --shapes bytes:1x2048 --profile
  shoot trtexec "$size" tests/data/trtexec/mobilenet.qat.onnx.engine.graph.json
done
# Views that need a data folder or a dialog: their Qt tests write the pictures.
for test in "test_calibration_view fitsA1366x768Screen" "test_dynamic_shapes dialogScreenshot" \
  "test_sweep_view screenshots" "test_roofline_chart screenshots" "test_targets screenshots"; do
  set -- $test
  QT_QPA_PLATFORM=xcb KILN_SCREENSHOT_DIR="$PWD/$out" KILN_TEST_DATA_DIR="$PWD/tests/data" \
    xvfb-run -a -s "-screen 0 1920x1080x24" "$build/tests/views/$1" "$2"
done
# The Compare view building and comparing on a target: the local sshd of scaleout_sshd.
if command -v sshd >/dev/null && [[ -x "$build/tests/views/test_targets" ]]; then
  QT_QPA_PLATFORM=xcb KILN_SCREENSHOT_DIR="$PWD/$out" xvfb-run -a -s "-screen 0 1920x1080x24" \
    tests/scaleout/sshd_remote.sh "$build/app/kiln" tests/data \
    "$(find "$build" -name 'libkiln_example_plugins*.so' | head -1)" \
    examples/plugins/models/copy_concat/model.onnx "$build/tests/views/test_targets"
fi
# The Sweep view following a real Slurm sweep (the single-node cluster of scaleout_slurm).
if command -v slurmctld >/dev/null && [[ -x "$build/tests/views/test_sweep_view" ]]; then
  QT_QPA_PLATFORM=xcb KILN_SCREENSHOT_DIR="$PWD/$out" xvfb-run -a -s "-screen 0 1920x1080x24" \
    tests/scaleout/slurm_cluster.sh "$build/app/kiln" tests/data "$build/tests/views/test_sweep_view"
fi
ls -l "$out"
