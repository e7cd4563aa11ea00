#!/usr/bin/env bash
# The wheel (pyproject.toml, scikit-build-core; docs/python.md "A wheel"), built, installed
# into a temporary venv and used from there:
#
#   wheel_test.sh PYTHON BUILD_DIR SOURCE_DIR
#
#   - `pip wheel` of the source tree with the project venv's scikit-build-core (no build
#     isolation: nothing is downloaded), taking BUILD_DIR's module
#     (KILN_WHEEL_FROM_BUILD: the same kiln_python target a build from source makes,
#     without compiling the engine again; pyproject.toml's default builds from source);
#   - the wheel holds kiln/__init__.py and kiln/_kiln<EXT_SUFFIX>, its metadata names
#     the project's version and requires numpy, its tag is this Python's;
#   - `pip install` of the wheel (offline) into a new venv; NumPy comes from the project
#     venv through a .pth file, so pip sees the requirement met without an index;
#   - from outside the source tree: kiln imports from that venv, and a bundled model is
#     built for the CPU and run with NumPy against its reference output
#     (run_bundled_model.py).
# Exit 77 (skipped), saying why, without the module, the venv or scikit-build-core.
set -euo pipefail
python=$1
build=$(cd "$2" && pwd)
src=$(cd "$3" && pwd)
skip() {
  echo "SKIPPED: $*"
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
[[ -x $python ]] || skip "no test Python at $python (make venv creates .venv)"
"$python" -c 'import scikit_build_core' 2>/dev/null ||
  skip "$python has no scikit-build-core (make venv installs it from PyPI; it could not)"
"$python" -c 'import numpy' 2>/dev/null || skip "$python has no NumPy (make venv)"
suffix=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
[[ -f $build/python/kiln/_kiln$suffix ]] ||
  skip "no $build/python/kiln/_kiln$suffix (the Python API is not built for $python)"

work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-wheel-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$SECONDS
step() { echo "== [$((SECONDS - started)) s] $*"; }

step "pip wheel (scikit-build-core $("$python" -c 'import scikit_build_core; print(scikit_build_core.__version__)'))"
if ! "$python" -m pip wheel --no-build-isolation --no-deps --no-index --disable-pip-version-check \
  -w "$work/dist" -C cmake.define.KILN_WHEEL_FROM_BUILD="$build" -C build-dir="$work/build" \
  "$src" >"$work/wheel.log" 2>&1; then
  cat "$work/wheel.log"
  fail "pip wheel failed"
fi
wheel=$(ls "$work"/dist/kiln-*.whl)
echo "$wheel"

step "the wheel's contents"
version=$(sed -n 's/^project(kiln VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
"$python" - "$wheel" "$version" "$suffix" <<'PY'
import sys, zipfile, sysconfig
from email.parser import Parser
wheel, version, suffix = sys.argv[1:]
names = zipfile.ZipFile(wheel).namelist()
print("\n".join(names))
for expected in ("kiln/__init__.py", f"kiln/_kiln{suffix}"):
    assert expected in names, f"the wheel lacks {expected}"
meta = Parser().parsestr(zipfile.ZipFile(wheel).read(f"kiln-{version}.dist-info/METADATA").decode())
assert meta["Name"] == "kiln" and meta["Version"] == version, (meta["Name"], meta["Version"])
assert "numpy" in (meta.get_all("Requires-Dist") or []), meta.get_all("Requires-Dist")
tag = sys.implementation.cache_tag.replace("cpython-", "cp")  # cp311
assert f"-{tag}-{tag}-" in wheel, f"{wheel} is not tagged for {tag}"
PY

step "pip install into a new venv"
"$python" -m venv "$work/venv"
venv_python=$work/venv/bin/python
numpy_site=$("$python" -c 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))')
venv_site=$("$venv_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$numpy_site" >"$venv_site/zz_project_numpy.pth"  # after the venv's own packages
"$venv_python" -m pip install --no-index --disable-pip-version-check "$wheel" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "pip install of the wheel failed"; }
tail -1 "$work/install.log"

step "import kiln from the venv; a model with NumPy in and out"
cd "$work"  # not the source tree: python/kiln must not be found from there
"$venv_python" -c 'import kiln, sys
assert kiln.__file__.startswith(sys.argv[1]), kiln.__file__
print("kiln", kiln.__version__, "from", kiln.__file__)' "$venv_site" | tee "$work/import.txt"
grep -q "^kiln $version" "$work/import.txt" || fail "kiln.__version__ is not $version"
"$venv_python" "$src/tests/python/run_bundled_model.py" \
  "$src/resources/models/ppocr_mobile_v2_cls/model.onnx"
step "the wheel builds, installs and runs a model"
