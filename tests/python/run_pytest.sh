#!/usr/bin/env bash
# Runs the Python API's pytest suite (tests/python, docs/python.md) against the module
# in the build tree. Exit 77 (ctest: skipped), saying why, when the module was not built
# (no pybind11 or Python headers) or the test Python lacks NumPy or pytest.
# Usage: run_pytest.sh PYTHON BUILD_PYTHON_DIR KILN EXAMPLE_PLUGINS SOURCE_DIR
set -u
python="$1" moduledir="$2"
export KILN_CLI="$3" KILN_EXAMPLE_PLUGINS="$4" KILN_SOURCE_DIR="$5"
skip() { echo "SKIPPED: $*" >&2; exit 77; }
[[ -x "$python" ]] || skip "no test Python at $python (make test creates .venv)"
ls "$moduledir"/kiln/_kiln*.so >/dev/null 2>&1 ||
  skip "the Python API was not built (packaging/install-deps.sh installs pybind11-dev, python3-dev)"
"$python" -c "import numpy" 2>/dev/null || skip "$python has no NumPy (pip install numpy)"
"$python" -c "import pytest" 2>/dev/null || skip "$python has no pytest (packaging/requirements-test.txt)"
export PYTHONPATH="$moduledir${PYTHONPATH:+:$PYTHONPATH}"
exec "$python" -m pytest -q -rs -p no:cacheprovider "$KILN_SOURCE_DIR/tests/python"
