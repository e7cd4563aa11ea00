// Where the studio finds the `kiln` command line it runs as a process (sweeps, remote
// targets): $KILN_PROGRAM when set, else the `kiln` beside kiln-studio (an install or a
// build tree), else `kiln` on PATH. Returns the plain name "kiln" when none is found, so
// QProcess reports the failure to start with that name.
#pragma once

#include <QString>

namespace kiln::studio {

QString kilnProgram();

}  // namespace kiln::studio
