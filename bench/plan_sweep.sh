#!/bin/sh
# Compares the plans two builds of kiln_layout_preview make of every ONNX file in a folder
# (CPU only, no GPU): node and reformat counts per model, "same" or "DIFF" with both lines.
# Usage: sh bench/plan_sweep.sh OLD_PREVIEW NEW_PREVIEW ONNX_DIR [BATCH] [-- extra options for OLD]
#   OLD_PREVIEW: e.g. a copy of build/bench/probes/kiln_layout_preview built at another commit;
#   NEW_PREVIEW: build/bench/probes/kiln_layout_preview; ONNX_DIR: the zoo's exports
#   (zoo_bench.py --cpu --skip-kiln --work DIR writes DIR/onnx). Extra options after "--" go to
#   the old probe only (e.g. "--disable PASS" to leave a new pass out of the comparison).
set -u
old=${1:?usage: plan_sweep.sh OLD NEW DIR [BATCH] [-- OLD_OPTIONS]}; new=${2:?}; dir=${3:?}
batch=${4:-2}
shift 3; [ $# -gt 0 ] && [ "$1" != "--" ] && shift
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
for f in "$dir"/*.onnx; do
  n=$(basename "$f" .onnx)
  a=$(timeout 300 "$old" "$f" --batch "$batch" "$@" 2>&1 | grep -E "^nodes" | head -1)
  b=$(timeout 300 "$new" "$f" --batch "$batch" 2>&1 | grep -E "^nodes" | head -1)
  if [ "$a" = "$b" ]; then echo "$n same: $b"; else echo "$n DIFF: old[$a] new[$b]"; fi
done
