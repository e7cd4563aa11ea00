#!/bin/sh
# Builds here and packs what the GPU machine lacks into .device/bundle.tar.xz:
# the kiln CLI and the GPU test binaries, the shared libraries they need that the
# device image does not have (libonnx_proto, protobuf, OpenBLAS and its Fortran
# runtime), and Debian's ONNX 1.12 node tests. The device has CUDA, cuBLAS,
# cuDNN, PyTorch and onnx of its own. Then call the device tool with
#   carry: [".device"]   command: sh tests/gpu/run_on_device.sh [quick|full|bench]
# The device tool carries at most 64 MiB (this bundle and the tracked tree, ~46 MB):
#   PACK_TESTS="test_cuda_int8 ..."  only these GPU test binaries (default: all);
#   PACK_PY_WHEELS=1                 also onnxscript and its two dependencies as Python 3.12
#                                    wheels in .device/wheels, for the zoo's dynamo exports
#   PACK_PROBES=0                    without bench/probes' three probe binaries (~1.5 MB);
#   PACK_NODE_DATA=0                 without the ONNX node tests (only run_on_device.sh's
#                                    conformance suites read them);
#   PACK_PYTHON=build-py312          also the Python module of that build folder, as
#                                    python/kiln (the device's Python is 3.12: configure
#                                    one with -DPython3_EXECUTABLE=<a python3.12>, docs/python.md),
#                                    for tests/python's GPU DLPack test on the device.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build}
# Only what the device runs: the CLI and the GPU tests (not the studio); with
# PACK_TESTS, only those test binaries are built.
# The device runs machine code: a build dir configured here (no GPU) defaults to PTX
# only (KILN_CUDA_CODE, CMakeLists.txt), which the driver would compile on every load.
grep -q '^KILN_CUDA_CODE:STRING=sass$' "$build/CMakeCache.txt" 2>/dev/null ||
  flock /tmp/kiln-build.lock cmake -S "$root" -B "$build" -DKILN_CUDA_CODE=sass >/dev/null
probes="kiln_cudnn_int8_probe kiln_int8_mma_probe kiln_gemm_algo_probe"
[ "${PACK_PROBES:-1}" = 0 ] && probes=""
flock /tmp/kiln-build.lock ninja -C "$build" -j2 kiln kiln_example_plugins $probes \
  ${PACK_TESTS:-tests/gpu/all}
stage=$(mktemp -d)
mkdir -p "$stage/bin" "$stage/lib" "$stage/data"
cp "$build/app/kiln" "$stage/bin/"
for probe in $probes; do cp "$build/bench/probes/$probe" "$stage/bin/"; done
for t in "$build"/tests/gpu/test_cuda_*; do
  case " ${PACK_TESTS:-$(basename "$t")} " in *" $(basename "$t") "*) ;; *) continue;; esac
  [ -x "$t" ] && cp "$t" "$stage/bin/"
done
cp "$build/examples/plugins/libkiln_example_plugins.so" "$stage/lib/"
for lib in libonnx_proto.so.1 libprotobuf.so.32 libopenblas.so.0 libgfortran.so.5 libquadmath.so.0; do
  path=$(ldd "$build/app/kiln" | awk -v l="$lib" '$1 == l { print $3 }')
  [ -n "$path" ] && cp -L "$path" "$stage/lib/"
done
if [ "${PACK_NODE_DATA:-1}" != 0 ]; then
  tar cf - -C /usr/share/libonnx-testdata/data node | (cd "$stage/data" && tar xf -)
fi
if [ -n "${PACK_PYTHON:-}" ]; then
  flock /tmp/kiln-build.lock ninja -C "$root/$PACK_PYTHON" -j2 kiln_python
  mkdir -p "$stage/python" && cp -r "$root/$PACK_PYTHON/python/kiln" "$stage/python/"
  strip "$stage"/python/kiln/*.so 2>/dev/null || true
fi
strip "$stage"/bin/* 2>/dev/null || true
mkdir -p "$root/.device"
if [ "${PACK_PY_WHEELS:-0}" != 0 ]; then
  # The dynamo exporter's Python packages for the device's Python 3.12 (bench/zoo_device.sh
  # unpacks them when the device lacks onnxscript): the versions of the project virtualenv.
  pip=${KILN_VENV:-$root/.venv}/bin/pip
  rm -rf "$root/.device/wheels"
  "$pip" download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 -d "$root/.device/wheels" \
    onnxscript==0.7.2 onnx_ir==1.1.0 ml_dtypes==0.6.0
fi
# One xz stream with a 1 GiB dictionary: the test binaries are ~34 MB each and nearly
# identical (each links the whole engine), so matches reach back across every earlier
# binary. Every GPU test binary and the CLI: 707 MB -> 21.6 MB (xz -9's 64 MiB window:
# 53 MB, over the device tool's carry limit with the tree). ~7 minutes of one core, and
# ~11 GiB of memory while compressing (the device needs 1 GiB to unpack).
tar cf - -C "$stage" . | nice xz -T1 --lzma2=preset=6,dict=1GiB > "$root/.device/bundle.tar.xz"
rm -rf "$stage"
ls -la "$root/.device/bundle.tar.xz"
size=$(stat -c %s "$root/.device/bundle.tar.xz")
if [ "$size" -gt 26000000 ]; then
  echo "warning: the bundle and the tree may pass the device tool's 64 MiB carry limit;" \
       "try PACK_NODE_DATA=0 and PACK_TESTS=\"...\"" >&2
fi
