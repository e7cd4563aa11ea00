// Running `kiln --remote TARGET COMMAND ...` from a JobRunner job (a worker thread): the
// CLI is a child process whose output lines stream into the job's progress (so the
// status bar's job list and the panel's progress bar show them as they show a local
// build), Cancel interrupts it (SIGINT: kiln --remote kills the remote kiln and exits
// 130), and a failure is one line naming the host. docs/scale-out.md.
#pragma once

#include <QString>
#include <QStringList>

#include "remote_targets.h"

namespace kiln::studio {

class JobContext;

struct RemoteRun {
  int exitCode = -1;
  bool cancelled = false;
  QString error;      // "" when it succeeded; else one line naming the host
  QStringList lines;  // every output line, in order
};

// The full command line (program and arguments) runRemoteKiln starts for `kilnArgs`, as
// one shell-quoted string: what the studio shows and the tests check.
QString remoteCommandLine(const RemoteTarget& target, const QStringList& kilnArgs);

// The arguments of a `kiln ...` line as the studio shows it (shell-quoted, as
// kilnBuildCommandLine writes it): its words after the program, unquoted.
QStringList kilnArgumentsOf(const QString& commandLine);

// Runs on the calling thread until the process ends (or the job is cancelled). Each
// output line becomes context.progress(fraction, line); `[k/n]` build lines give the
// fraction (0..0.95), others keep it unknown.
RemoteRun runRemoteKiln(const RemoteTarget& target, const QStringList& kilnArgs,
                        JobContext& context);

// The fraction a progress line of `kiln build --progress` stands for ("[3/10] 0.4 s
// timing conv1" -> 0.3 of the timing phase, scaled into 0.05..0.95); negative when the
// line is not one.
double remoteProgressFraction(const QString& line);

}  // namespace kiln::studio
