#!/usr/bin/env bash
# kiln-studio's command line without a display (issue 26): --help and --version print
# to stdout and exit 0 before any window exists; an unknown option is one line on
# stderr naming it, exit 2.
# Usage: test_studio_cli.sh KILN_STUDIO
set -u
studio="$1"
source "$(dirname "$0")/cli_test_support.sh"
# No display of any kind: these answers must not need one.
headless() { env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$studio" "$@"; }

help=$(headless --help); rc=$?
check_rc "--help exits 0 without a display" $rc "exit $rc"
for needle in "Usage: kiln-studio [options] [FILE]" "--build" "--shapes <name:1x3x224x224,...>" \
  "--profile" "--screenshots <DIR>" "--report <FILE>" "--trust <KEY.pub[,KEY.pub]>" "--version"; do
  [[ "$help" == *"$needle"* ]]; check_rc "--help lists '$needle'" $? "$help"
done
[[ "$(headless -h)" == "$help" ]]; check_rc "-h is --help" $? "differs"

version=$(headless --version); rc=$?
check_rc "--version exits 0 without a display" $rc "exit $rc"
[[ "$(head -n 1 <<<"$version")" =~ ^kiln-studio\ [0-9]+\.[0-9]+\.[0-9]+\ \(git\ [0-9a-f]{7,}(-dirty)?\)$|^kiln-studio\ [0-9]+\.[0-9]+\.[0-9]+\ \(git\ unknown\)$ ]]
check_rc "--version prints 'kiln-studio X.Y.Z (git REVISION)'" $? "'$version'"
grep -qE '^(built with CUDA|built without CUDA)' <<<"$version"
check_rc "--version says what it was built with" $? "'$version'"
[[ "$(headless -v)" == "$version" ]]; check_rc "-v is --version" $? "differs"

error_exit_codes="2"
expect_error "an unknown option" "kiln-studio: unknown option '--bogus' (kiln-studio --help" \
  headless --bogus model.onnx
expect_error "an unknown short option" "unknown option '-x'" headless -x
finish
