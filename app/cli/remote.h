// `kiln --remote [user@]host[:port] COMMAND ARGS...`: runs a command on another machine's
// Kiln through the OpenSSH client (docs/scale-out.md). No transport of Kiln's own.
#pragma once

#include <string>
#include <vector>

namespace kiln::cli {

// Runs `kiln COMMAND ARGS...` on `target` over ssh (BatchMode, StrictHostKeyChecking=yes,
// plus KILN_REMOTE_SSH_OPTIONS; the remote program is KILN_REMOTE_KILN, else `kiln`).
// Checks the remote release equals this one first; uploads the input files and folders
// named in ARGS to ~/.cache/kiln-remote/<sha256>/ unless already there; rewrites output
// options (-o, --export-output, ...) to a remote job folder and fetches those files back
// atomically after a successful run. The global options --plugins and --trust in ARGS
// (before or after COMMAND) travel too: their libraries and keys are uploaded the same
// way and passed to the remote kiln. Output streams live. Returns the remote exit status,
// 130 after SIGINT/SIGTERM (the remote process is killed), 1 with one line naming the
// host when the connection or the remote side fails; local files are then untouched.
int runRemote(const std::string& target, std::vector<std::string> args);

}  // namespace kiln::cli
