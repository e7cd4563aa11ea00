// A host-side crash of a GPU test binary (a segfault, an abort) prints the stack before
// the process dies: frame addresses as offsets into the executable, which
// `addr2line -f -C -e <the unstripped test binary> OFFSET...` turns into functions and
// lines on the machine that built it (the device runs stripped copies). Installed once,
// by gpuAvailable(); the signal is then raised again with its default action.
#pragma once

namespace kiln::test {

void installCrashBacktrace();

}  // namespace kiln::test
