#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages Kiln needs, idempotently: only missing
# packages are installed, and nothing happens when all are present.
# Usage: packaging/install-deps.sh [--gui]   (--gui adds the Qt studio stack)
# Also creates the project virtualenv (.venv) with the Python test tooling.
set -euo pipefail

core=(cmake ninja-build g++ make pkg-config git python3 python3-venv
      libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
      nlohmann-json3-dev libopenblas-dev libgtest-dev libssl-dev
      dpkg-dev  # dpkg-shlibdeps: the .deb packages' dependencies (make package)
      clang libclang-rt-dev)  # the fuzz targets (tests/fuzz): clang, libFuzzer + sanitizers
core+=(pybind11-dev python3-dev)  # the Python API (python/, docs/python.md)
core+=(slurm-wlm munge)  # the single-node Slurm test of kiln sweep --slurm (tests/scaleout, docs/scale-out.md)
core+=(openssh-server)  # the local-sshd test of kiln --remote (tests/scaleout/sshd_remote.sh, docs/scale-out.md)
gui=(qt6-base-dev qt6-svg-dev libqt6svg6 libqcustomplot-dev libqcustomplot2.1-qt6
     libgraphviz-dev xvfb xauth)

want=("${core[@]}")
if [[ "${1:-}" == "--gui" || "${KILN_GUI:-1}" == "1" ]]; then want+=("${gui[@]}"); fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "install-deps: all system packages present"
fi

if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "install-deps: CUDA toolkit found at /usr/local/cuda"
else
  echo "install-deps: no CUDA toolkit at /usr/local/cuda; Kiln builds CPU-only"
fi
