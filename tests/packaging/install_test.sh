#!/usr/bin/env bash
# The install test of the Debian packages (docs/packaging.md, "The install test").
#
#   install_test.sh BUILD_DIR SOURCE_DIR [CUDA_LIBRARY_DIR]
#
# Builds kiln and libkiln-dev with cpack into a temporary folder (or takes the .deb
# files in $KILN_TEST_DEBS), checks with dpkg-deb -c that they hold what they should,
# extracts both with dpkg -x into a temporary root (no root rights needed) and uses
# them from there only:
#   - no installed binary NEEDs a CUDA library; run by the dynamic loader with its
#     cache off (so the CUDA libraries are not found), kiln --version says which are
#     missing, kiln build --backend cpu and kiln run work, and --backend cuda is
#     refused in one line naming the missing library;
#   - kiln --version (with the CUDA libraries: the versions it loaded) and kiln
#     inspect on a bundled model;
#   - where the Python API is built, `import kiln` from the extracted dist-packages:
#     kiln.__version__, and a bundled model built for the CPU and run with NumPy
#     against its reference outputs (skipped, saying so, without NumPy);
#   - kiln(1) and kiln-studio(1) render without warnings, kiln(1) has every command,
#     kiln-studio(1) every option of kiln-studio --help; the desktop entry and the
#     MIME types parse; the bash completion completes commands, options and values;
#   - examples/plugins configured with find_package(Kiln) against the extracted
#     libkiln-dev, built, and loaded by the extracted kiln (kiln plugins, then its
#     models through kiln conformance);
#   - a program built against Kiln::engine and Kiln::cuda runs; pkg-config's
#     kiln-plugin and kiln resolve into the root.
# Exit 77 (skip) without dpkg-deb or cpack.
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
cuda_lib_dir=${3:-}

for tool in dpkg-deb cpack cmake; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: no $tool (the install test needs a Debian-like system)"
    exit 77
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
started=$SECONDS

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "== [$((SECONDS - started)) s] $*"; }

# --- the packages -------------------------------------------------------------------
if [[ -n ${KILN_TEST_DEBS:-} ]]; then
  debs=$KILN_TEST_DEBS
  step "packages from $debs"
else
  debs=$work/debs
  step "cpack -> $debs"
  if ! cpack --config "$build/CPackConfig.cmake" -B "$debs" >"$work/cpack.log" 2>&1; then
    cat "$work/cpack.log"
    fail "cpack failed"
  fi
fi
kiln_deb=$(ls "$debs"/kiln_*.deb)
dev_deb=$(ls "$debs"/libkiln-dev_*.deb)
ls -l "$kiln_deb" "$dev_deb"

have_studio=0
[[ -x $build/app/kiln-studio ]] && have_studio=1
have_python=0
compgen -G "$build/python/kiln/_kiln*.so" >/dev/null && have_python=1

# --- their contents -----------------------------------------------------------------
step "dpkg-deb -c"
dpkg-deb -c "$kiln_deb" >"$work/kiln.list"
dpkg-deb -c "$dev_deb" >"$work/dev.list"
expect_in() {  # LIST PATH...
  local list=$1 path
  shift
  for path in "$@"; do
    grep -qE " \./usr/${path}( -> .*)?$" "$list" || fail "$(basename "$list" .list) package lacks /usr/$path"
    grep -E " \./usr/${path}( -> .*)?$" "$list"
  done
}
expect_in "$work/kiln.list" bin/kiln share/man/man1/kiln.1.gz \
  share/bash-completion/completions/kiln share/doc/kiln/README.md
if ((have_studio)); then
  expect_in "$work/kiln.list" bin/kiln-studio share/applications/kiln-studio.desktop \
    share/icons/hicolor/scalable/apps/kiln.svg share/mime/packages/kiln.xml \
    share/man/man1/kiln-studio.1.gz
fi
if ((have_python)); then
  expect_in "$work/kiln.list" lib/python3/dist-packages/kiln/__init__.py \
    'lib/python3/dist-packages/kiln/_kiln\.cpython-[^/]*\.so'
fi
expect_in "$work/dev.list" include/kiln/plugin.h include/kiln/builder.h \
  'lib.*/cmake/Kiln/KilnConfig.cmake' 'lib.*/cmake/Kiln/KilnConfigVersion.cmake' \
  'lib.*/cmake/Kiln/KilnPluginTargets.cmake' 'lib.*/cmake/Kiln/KilnEngineTargets.cmake' \
  'lib.*/pkgconfig/kiln.pc' 'lib.*/pkgconfig/kiln-plugin.pc' 'lib.*/libkiln_engine.a' \
  'lib.*/libkiln_cuda.a'

step "control fields"
dpkg-deb -f "$kiln_deb" Package Version Architecture Depends
dpkg-deb -f "$dev_deb" Package Version Architecture Recommends
depends=$(dpkg-deb -f "$kiln_deb" Depends)
# dpkg-shlibdeps ran: the C++ runtime, protobuf and OpenSSL come from the binaries.
for lib in libstdc++6 libprotobuf libssl3; do
  [[ $depends == *"$lib"* ]] || fail "kiln's Depends lacks $lib (dpkg-shlibdeps): $depends"
done
# The CUDA libraries are loaded when present, never required (docs/packaging.md, "CUDA
# at run time"): a CUDA build recommends them, and depends on none.
for lib in libcudnn libcublas cuda-nvrtc cuda-cudart; do
  [[ $depends != *"$lib"* ]] || fail "kiln depends on $lib; the CUDA libraries must stay optional: $depends"
done
if [[ -n $cuda_lib_dir ]] && grep -q "^KILN_DEB_CUDA_RECOMMENDS:STRING=." "$build/CMakeCache.txt"; then
  recommends=$(dpkg-deb -f "$kiln_deb" Recommends)
  [[ $recommends == *libcudnn* ]] || fail "a CUDA build's kiln must recommend cuDNN: $recommends"
  echo "Recommends: $recommends"
fi

step "dpkg -x"
dpkg -x "$kiln_deb" "$root"
dpkg -x "$dev_deb" "$root"
kiln=$root/usr/bin/kiln
# The installed programs (and the Python extension) carry no RUNPATH of the build
# machine's.
if command -v readelf >/dev/null; then
  for binary in "$kiln" "$root"/usr/lib/python3/dist-packages/kiln/_kiln*.so; do
    [[ -e $binary ]] || continue  # no Python API: the glob stays unexpanded
    dynamic=$(readelf -d "$binary")  # not piped into grep -q: pipefail (see the completion step)
    if grep -qE 'R(UN)?PATH' <<<"$dynamic"; then
      fail "the installed $(basename "$binary") has an RPATH: $(grep -E 'R(UN)?PATH' <<<"$dynamic")"
    fi
  done
fi
# No installed binary needs a CUDA library to start: none is DT_NEEDED (cudart is
# static; cuBLASLt, cuDNN and NVRTC are loaded with dlopen when present).
if command -v readelf >/dev/null; then
  for binary in "$kiln" "$root"/usr/bin/kiln-studio "$root"/usr/lib/python3/dist-packages/kiln/_kiln*.so; do
    [[ -e $binary ]] || continue
    needed=$(readelf -d "$binary" | grep NEEDED || true)
    if grep -qiE 'lib(cuda|cudart|cublas|cublasLt|cudnn[a-z_]*|nvrtc)\.so' <<<"$needed"; then
      fail "the installed $(basename "$binary") links a CUDA library: $(grep -iE 'cu|nvrtc' <<<"$needed")"
    fi
  done
  echo "no CUDA library is NEEDED by the installed binaries"
fi

# --- without the CUDA libraries -------------------------------------------------------
# The extracted programs run by the dynamic loader itself with its cache (ld.so.cache,
# where the CUDA toolkit registers its folder) off and no LD_LIBRARY_PATH: only the
# system's default folders are searched, so cuBLASLt, cuDNN and NVRTC (under
# /usr/local/cuda, or a pip site folder) are not found, as on a machine without them.
step "without the CUDA libraries (ld.so --inhibit-cache)"
loader=$(readelf -l "$kiln" | sed -n 's/.*interpreter: \(.*\)]/\1/p')
[[ -x $loader ]] || fail "no program interpreter in $kiln ($loader)"
no_cuda() { env -u LD_LIBRARY_PATH "$loader" --inhibit-cache "$@"; }
model=$src/resources/models/ppocr_mobile_v2_cls/model.onnx
shape=x:1x3x48x192
no_cuda "$kiln" --version | tee "$work/version_no_cuda.txt" || fail "kiln --version without CUDA"
if [[ -n $cuda_lib_dir ]]; then
  grep -q "^libraries at run time: cuBLASLt could not be loaded (libcublasLt.so" \
    "$work/version_no_cuda.txt" || fail "kiln --version does not say cuBLASLt is missing"
  grep -q "^at run time: no usable GPU: .*cuDNN.* not installed" "$work/version_no_cuda.txt" ||
    fail "kiln --version does not say why the GPU is not usable"
fi
no_cuda "$kiln" build "$model" --backend cpu --min-shapes $shape --opt-shapes $shape \
  --max-shapes $shape -o "$work/cpu.kiln" >"$work/build_no_cuda.txt" ||
  { cat "$work/build_no_cuda.txt"; fail "kiln build --backend cpu without CUDA"; }
no_cuda "$kiln" run "$work/cpu.kiln" --iterations 2 >"$work/run_no_cuda.txt" 2>&1 ||
  { cat "$work/run_no_cuda.txt"; fail "kiln run without CUDA"; }
grep -E "^  save_infer_model" "$work/run_no_cuda.txt" || fail "kiln run printed no output tensor"
# Asked for, the CUDA backend is refused in one line that says why.
if no_cuda "$kiln" build "$model" --backend cuda --min-shapes $shape --opt-shapes $shape \
  --max-shapes $shape -o "$work/cuda.kiln" >"$work/cuda_no_cuda.txt" 2>&1; then
  fail "kiln build --backend cuda succeeded without the CUDA libraries"
fi
cat "$work/cuda_no_cuda.txt"
[[ $(wc -l <"$work/cuda_no_cuda.txt") -eq 1 ]] || fail "the refusal is not one line"
if [[ -n $cuda_lib_dir ]]; then
  grep -qE "^kiln build: CUDA backend unavailable: .*not installed \(.*libcudnn\.so" \
    "$work/cuda_no_cuda.txt" || fail "the refusal does not name the missing library"
else
  grep -q "backend 'cuda' is not in this build" "$work/cuda_no_cuda.txt" ||
    fail "a CPU-only build's refusal does not say so"
fi

# Where NVIDIA's packages would register their libraries with ld.so.
if [[ -n $cuda_lib_dir ]]; then
  export LD_LIBRARY_PATH=$cuda_lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

# --- the programs -------------------------------------------------------------------
step "kiln --version, kiln inspect"
"$kiln" --version | tee "$work/version.txt"
grep -q "$(dpkg-deb -f "$kiln_deb" Version | cut -d- -f1)" "$work/version.txt" ||
  fail "kiln --version does not name the package's version"
if [[ -n $cuda_lib_dir ]]; then  # with the libraries: each found, with its version
  grep -qE "^libraries at run time: cuBLASLt [0-9.]+ \(.*\), cuDNN [0-9.]+ \(.*\), NVRTC [0-9.]+ " \
    "$work/version.txt" || fail "kiln --version does not report the CUDA libraries it loaded"
fi
"$kiln" inspect "$model" --shapes x:1x3x48x192 >"$work/inspect.txt"
head -5 "$work/inspect.txt"
grep -q "Conv" "$work/inspect.txt" || fail "kiln inspect printed no Conv: $(cat "$work/inspect.txt")"

step "the Python module (import kiln)"
if ((have_python)); then
  # The project's test Python (make venv: NumPy) where there is one, else the system's.
  python=python3
  [[ -x $src/.venv/bin/python3 ]] && python=$src/.venv/bin/python3
  site=$root/usr/lib/python3/dist-packages
  suffix=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  [[ -f $site/kiln/_kiln$suffix ]] ||
    fail "$python ($suffix) cannot load the packaged module: $(ls "$site/kiln")"
  PYTHONPATH=$site "$python" -c 'import kiln, sys
assert kiln.__file__.startswith(sys.argv[1]), kiln.__file__
print("kiln", kiln.__version__, "from", kiln.__file__)' "$site" | tee "$work/python.txt"
  grep -q "^kiln $(dpkg-deb -f "$kiln_deb" Version | cut -d- -f1)" "$work/python.txt" ||
    fail "kiln.__version__ does not name the package's version"
  if "$python" -c 'import numpy' 2>/dev/null; then
    # Built for the CPU and run with NumPy against the model's reference output.
    PYTHONPATH=$site "$python" "$src/tests/python/run_bundled_model.py" "$model"
    echo "-- the same without the CUDA libraries (ld.so --inhibit-cache)"
    # The interpreter's own path (a venv's python3 is found from argv[0]), not a
    # launcher script such as pyenv's shim, which the loader cannot run.
    interpreter=$("$python" -c 'import sys; print(sys.executable)')
    PYTHONPATH=$site no_cuda "$interpreter" "$src/tests/python/run_bundled_model.py" "$model"
    if [[ -n $cuda_lib_dir ]]; then
      PYTHONPATH=$site no_cuda "$interpreter" -c 'import kiln; print(kiln.version_report())' |
        tee "$work/python_no_cuda.txt"
      grep -q "cuDNN could not be loaded" "$work/python_no_cuda.txt" ||
        fail "import kiln without CUDA: the version report does not say cuDNN is missing"
    fi
  else
    echo "SKIPPED: building and running a model from Python: $python has no NumPy (make venv)"
  fi
else
  echo "SKIPPED: the Python API was not built (no pybind11 or Python headers)"
fi

step "man pages"
zcat "$root/usr/share/man/man1/kiln.1.gz" >"$work/kiln.1"
commands=$("$kiln" --help | sed -n '/^commands:/,/^$/p' | grep -oE '^  [a-z][a-z0-9-]*' | sort -u)
[[ -n $commands ]] || fail "no commands in kiln --help"
for command in $commands; do
  grep -q "^\.SS $command\$" "$work/kiln.1" || fail "kiln(1) has no section for '$command'"
done
echo "kiln(1) documents:" $commands
if command -v groff >/dev/null; then
  for page in "$root"/usr/share/man/man1/*.1.gz; do
    warnings=$(zcat "$page" | groff -man -Tutf8 -ww -z 2>&1)
    [[ -z $warnings ]] || fail "$(basename "$page"): $warnings"
  done
fi
if ((have_studio)); then
  zcat "$root/usr/share/man/man1/kiln-studio.1.gz" >"$work/kiln-studio.1"
  studio_options=$(QT_QPA_PLATFORM=offscreen "$root/usr/bin/kiln-studio" --help 2>/dev/null |
    grep -oE '^ +(-[a-z], )?--[a-z-]+' | grep -oE -- '--[a-z-]+')
  [[ -n $studio_options ]] || fail "kiln-studio --help printed no options"
  for option in $studio_options; do
    escaped=$(printf '%s' "$option" | sed 's/-/\\-/g')  # troff writes --x as \-\-x
    grep -qF -- "$escaped" "$work/kiln-studio.1" || fail "kiln-studio(1) does not describe $option"
  done
  echo "kiln-studio(1) describes:" $studio_options
fi

step "desktop entry, MIME types"
if ((have_studio)); then
  desktop=$root/usr/share/applications/kiln-studio.desktop
  grep -q '^Exec=kiln-studio %f$' "$desktop" || fail "desktop entry: Exec"
  grep -q '^Icon=kiln$' "$desktop" || fail "desktop entry: Icon"
  grep -q '^MimeType=.*application/x-kiln-plan' "$desktop" || fail "desktop entry: MimeType"
  command -v desktop-file-validate >/dev/null && desktop-file-validate "$desktop"
  if command -v update-mime-database >/dev/null; then
    mkdir -p "$work/mime/packages"
    cp "$root/usr/share/mime/packages/kiln.xml" "$work/mime/packages/"
    update-mime-database "$work/mime" 2>/dev/null
    grep -q 'application/x-kiln-plan:\*\.kiln' "$work/mime/globs2" || fail "MIME: *.kiln"
    grep -q 'application/x-onnx:\*\.onnx' "$work/mime/globs2" || fail "MIME: *.onnx"
  fi
fi

step "bash completion"
complete_words() {  # completes the words given; prints the candidates
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _kiln
           printf "%s\n" "${COMPREPLY[@]}"' _ "$root/usr/share/bash-completion/completions/kiln" "$@"
}
[[ $(complete_words kiln bu) == build ]] || fail "completion: 'kiln bu' -> $(complete_words kiln bu)"
# Captured first: with pipefail, `complete_words ... | grep -q` fails whenever grep exits
# on its match before the candidates are all written (SIGPIPE) - a race that loaded CI
# machines lose.
options=$(complete_words kiln build m.onnx --fp)
grep -qx -- --fp16 <<<"$options" || fail "completion: kiln build --fp -> $options"
[[ $(complete_words kiln run m.onnx --backend '' | xargs) == "cpu cuda" ]] ||
  fail "completion: --backend values"
subcommands=$(complete_words kiln debug '')
grep -qx precision <<<"$subcommands" || fail "completion: kiln debug subcommands"
echo "completion: commands, options, values, subcommands"

# --- libkiln-dev --------------------------------------------------------------------
step "examples/plugins against libkiln-dev"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$src/examples/plugins" -B "$work/plugins" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$root/usr" -DKILN_EXAMPLES_WITH_CUDA=OFF >"$work/plugins.log" 2>&1 ||
  { cat "$work/plugins.log"; fail "configuring examples/plugins against the package"; }
kiln_dir=$(sed -n 's/^Kiln_DIR:PATH=//p' "$work/plugins/CMakeCache.txt")
[[ $kiln_dir == "$root"/* ]] || fail "examples/plugins found Kiln at $kiln_dir, not in the package"
echo "Kiln_DIR=$kiln_dir"
cmake --build "$work/plugins" -j 2 >>"$work/plugins.log" 2>&1 ||
  { cat "$work/plugins.log"; fail "building examples/plugins against the package"; }
plugin=$work/plugins/libkiln_example_plugins.so
"$kiln" plugins --plugins "$plugin" | tee "$work/plugins.txt"
grep -q "kiln.examples::CopyConcat" "$work/plugins.txt" || fail "the plugin's creators are not listed"
"$kiln" --plugins "$plugin" conformance "$src/examples/plugins/models" --quiet

step "a program against Kiln::engine and Kiln::cuda"
cmake -S "$src/tests/packaging/engine_consumer" -B "$work/consumer" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$root/usr" >"$work/consumer.log" 2>&1 ||
  { cat "$work/consumer.log"; fail "configuring the Kiln::engine consumer"; }
cmake --build "$work/consumer" -j 2 >>"$work/consumer.log" 2>&1 ||
  { cat "$work/consumer.log"; fail "building the Kiln::engine consumer"; }
"$work/consumer/kiln_engine_consumer" "$model" | tee "$work/consumer.txt"
grep -qE '^nodes: [1-9]' "$work/consumer.txt" || fail "the consumer imported no nodes"

step "pkg-config"
if command -v pkg-config >/dev/null; then
  pcdir=$(dirname "$(find "$root/usr" -name kiln-plugin.pc)")
  export PKG_CONFIG_PATH=$pcdir
  cflags=$(pkg-config --cflags kiln-plugin)
  echo "kiln-plugin: $cflags"
  echo '#include <kiln/plugin.h>' | ${CXX:-c++} -std=c++20 -fsyntax-only $cflags -x c++ - ||
    fail "kiln/plugin.h does not compile with pkg-config --cflags kiln-plugin"
  libs=$(pkg-config --libs kiln)
  echo "kiln: $libs"
  [[ $libs == *-lkiln_engine* && -f $(pkg-config --variable=libdir kiln)/libkiln_engine.a ]] ||
    fail "pkg-config kiln does not point at the extracted libkiln_engine.a"
fi

step "the packages install and work from $root"
