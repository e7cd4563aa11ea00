// Child processes of `kiln sweep`: a task per configuration, the task's steps (`kiln
// build`, `kiln compare`, `kiln run`) and the Slurm commands, with Ctrl-C and SIGTERM
// turned into a flag the loops poll. POSIX only.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "kiln/status.h"

namespace kiln::cli::sweep {

// SIGINT and SIGTERM set a flag (and no longer end the process) from this call on.
void installInterruptHandlers();
// True once SIGINT or SIGTERM arrived.
bool interrupted();
// Sleeps up to `seconds`, returning early (false) when interrupted.
bool sleepUnlessInterrupted(double seconds);

// Starts `argv` (argv[0] a path, or a name looked up in PATH) with stdout written to
// `stdoutPath` (truncated) and stderr appended to `stderrPath`; an empty path keeps
// ours. The child is killed when this process dies (PR_SET_PDEATHSIG), so a sweep
// killed outright leaves no build behind; `newGroup` puts it in a process group of
// its own, which killGroup() ends with everything it started.
Result<pid_t> spawn(const std::vector<std::string>& argv, const std::string& stdoutPath,
                    const std::string& stderrPath, bool newGroup = false);
// Ends the process group `pid` leads: SIGTERM, then SIGKILL after a grace period.
void killGroup(pid_t pid);
// The exit code of `pid` once it ends (128 + N when signal N ended it). With
// `stopWhenInterrupted`, returns -1 as soon as an interrupt arrives, leaving the child.
int waitFor(pid_t pid, bool stopWhenInterrupted = false);

// Runs `argv` to its end (killed after `timeoutSeconds`) and returns its exit code,
// stdout and stderr. An error only when it cannot start.
struct Captured {
  int exitCode = -1;
  bool timedOut = false;
  std::string out, err;
};
Result<Captured> capture(const std::vector<std::string>& argv, double timeoutSeconds);

// This program's own path (/proc/self/exe), or "kiln" when it cannot be read: what the
// sweep's child steps run.
std::string selfExecutable();
// The full path of `name` in PATH, or "" when it is not there.
std::string findProgram(const std::string& name);
// The last non-empty line of `text` (a failed step's one-line error).
std::string lastLine(const std::string& text);

}  // namespace kiln::cli::sweep
