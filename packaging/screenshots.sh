#!/usr/bin/env bash
# Screenshots of kiln-studio for the README, on a real display server (Xvfb):
# the PP-OCR text classifier built on the CPU backend and profiled, then a real
# TensorRT engine (trtexec export of a QAT MobileNet). PNGs go to docs/screenshots/.
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
shoot() {  # shoot NAME FILE [studio options...]
  local name=$1 file=$2
  shift 2
  xvfb-run -a -s "-screen 0 1600x1000x24" "$studio" "$file" "$@" --screenshots "$tmp/$name"
  for png in "$tmp/$name"/*.png; do cp "$png" "$out/$name-$(basename "$png" | sed 's/^studio-//')"; done
}
shoot ppocr-cls resources/models/ppocr_mobile_v2_cls/model.onnx --build --shapes x:1x3x48x192 --profile
shoot trtexec tests/data/trtexec/mobilenet.qat.onnx.engine.graph.json
ls -l "$out"
