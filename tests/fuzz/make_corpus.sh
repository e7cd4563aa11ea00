#!/usr/bin/env bash
# Generates the fuzz targets' seed corpora (nothing of it is committed):
#   make_corpus.sh SEEDS_TOOL OUT_DIR
# SEEDS_TOOL is the fuzz build's kiln_fuzz_seeds. OUT_DIR/<target>/ gets:
#   fuzz_onnx_import     the stock ONNX tests' model.onnx (libonnx-testdata) and the
#                        models of tests/data
#   fuzz_plan_load       CPU plans of tests/data models (kiln_fuzz_seeds)
#   fuzz_tensor_readers  0x00 + each .npy of tests/data, 0x01 + small input_N.pb files
#                        of libonnx-testdata
#   fuzz_json_readers    a selector byte (fuzz_json_readers.cpp) + trtexec graph and
#                        profile exports (tests/data/trtexec, ../shared/samples/trtexec
#                        when present), constraints, timing cache, tactics files and
#                        a calibration cache from kiln_fuzz_seeds
set -euo pipefail

seeds_tool=$1
out=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
testdata=${KILN_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
data=$src/tests/data

rm -rf "$out"
mkdir -p "$out"/{fuzz_onnx_import,fuzz_plan_load,fuzz_tensor_readers,fuzz_json_readers}

# A file with a leading selector byte (given in octal, as printf takes it).
prefixed() {
  { printf "\\$1"; cat "${@:3}"; } >"$2"
}

# ONNX models: each node test named after its folder; fixtures under 1 MiB.
if [[ -d $testdata ]]; then
  find "$testdata" -name model.onnx -size -1024k | while read -r m; do
    d=$(dirname "$m")
    cp "$m" "$out/fuzz_onnx_import/$(basename "$(dirname "$d")")-$(basename "$d").onnx"
  done
else
  echo "make_corpus: $testdata not found (libonnx-testdata): ONNX seeds from tests/data only" >&2
fi
find "$data" -name '*.onnx' -size -1024k | while read -r m; do
  cp "$m" "$out/fuzz_onnx_import/fixture-$(basename "$m")"
done

# Plans, tactics, timing cache, constraints, calibration cache.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$seeds_tool" "$work" "$data/add.onnx" "$data/compare/small_cnn.onnx" \
  "$data/shape_subgraph.onnx" "$data/quant/small_cnn_qdq.onnx" >&2
cp "$work"/plan-*.kiln "$out/fuzz_plan_load/"

# Tensors: .npy fixtures, then the small .pb inputs of the node tests.
n=0
for f in "$data"/*.npy "$data"/quant/*.npy; do
  prefixed 000 "$out/fuzz_tensor_readers/npy-$((n++))" "$f"
done
if [[ -d $testdata ]]; then
  find "$testdata" -name 'input_*.pb' -size -4k | while read -r f; do
    prefixed 001 "$out/fuzz_tensor_readers/pb-$(echo "$f" | md5sum | cut -c1-12)" "$f"
  done
fi

# JSON and text documents, by reader (fuzz_json_readers.cpp's selector byte).
json=$out/fuzz_json_readers
for dir in "$data/trtexec" "$src/../shared/samples/trtexec"; do
  [[ -d $dir ]] || continue
  for g in "$dir"/*.graph.json; do
    base=${g%.graph.json}
    tag=$(echo "$g" | md5sum | cut -c1-8)
    prefixed 000 "$json/graph-$tag" "$g"
    if [[ -f $base.profile.json ]]; then
      { printf '\001'; cat "$g"; printf '\000'; cat "$base.profile.json"; } >"$json/profile-$tag"
    fi
  done
done
prefixed 002 "$json/constraints" "$work/constraints.json"
prefixed 003 "$json/timing-cache" "$work/timing_cache.json"
for t in "$work"/tactics-*.json; do
  prefixed 004 "$json/$(basename "$t" .json)" "$t"
done
prefixed 005 "$json/calibration-cache" "$work/calibration.cache"

for d in "$out"/*/; do
  echo "make_corpus: $(basename "$d"): $(find "$d" -type f | wc -l) seeds"
done
