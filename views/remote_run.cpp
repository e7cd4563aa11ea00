#include "remote_run.h"

#include <QProcess>
#include <QRegularExpression>
#include <algorithm>
#include <csignal>
#include <signal.h>

#include "job_runner.h"
#include "kiln_program.h"
#include "sweep.h"

namespace kiln::studio {
namespace {

constexpr int kPollMs = 100;
constexpr int kInterruptGraceMs = 8000;  // kiln --remote kills the remote kiln, then exits

// The error line kiln --remote wrote ("kiln: remote HOST: ..."), else one of our own.
QString failureLine(const RemoteTarget& target, const RemoteRun& run, const QString& startError) {
  const QString host = targetHost(target.address);
  if (!startError.isEmpty())
    return QObject::tr("remote %1: %2 did not start: %3").arg(host, kilnProgram(), startError);
  for (auto it = run.lines.crbegin(); it != run.lines.crend(); ++it)
    if (it->startsWith("kiln: remote ")) return it->mid(6);
  const QString last = run.lines.isEmpty() ? QString() : run.lines.back();
  return QObject::tr("remote %1: kiln exited with code %2%3")
      .arg(host)
      .arg(run.exitCode)
      .arg(last.isEmpty() ? QString() : ": " + last);
}

}  // namespace

QString remoteCommandLine(const RemoteTarget& target, const QStringList& kilnArgs) {
  std::vector<std::string> argv;
  if (!target.kilnPath.isEmpty())
    argv.push_back("KILN_REMOTE_KILN=" + target.kilnPath.toStdString());
  argv.push_back(kilnProgram().toStdString());
  for (const QString& a : remoteArguments(target, kilnArgs)) argv.push_back(a.toStdString());
  return QString::fromStdString(kiln::sweep::shellJoin(argv));
}

QStringList kilnArgumentsOf(const QString& commandLine) {
  QStringList args;
  for (const std::string& word : kiln::sweep::shellSplit(commandLine.toStdString()))
    args << QString::fromStdString(word);
  if (!args.isEmpty()) args.removeFirst();  // "kiln"
  return args;
}

double remoteProgressFraction(const QString& line) {
  static const QRegularExpression kStep("^\\[(\\d+)/(\\d+)\\]");
  const QRegularExpressionMatch match = kStep.match(line);
  if (!match.hasMatch()) return -1;
  const double total = match.captured(2).toDouble();
  if (total <= 0) return -1;
  return 0.05 + 0.9 * std::min(1.0, match.captured(1).toDouble() / total);
}

RemoteRun runRemoteKiln(const RemoteTarget& target, const QStringList& kilnArgs,
                        JobContext& context) {
  RemoteRun run;
  QProcess process;
  process.setProcessChannelMode(QProcess::MergedChannels);
  process.setProcessEnvironment(
      remoteEnvironment(target, QProcessEnvironment::systemEnvironment()));
  process.start(kilnProgram(), remoteArguments(target, kilnArgs));
  if (!process.waitForStarted(10000)) {
    run.error = failureLine(target, run, process.errorString());
    return run;
  }
  double fraction = -1;
  auto drain = [&] {
    while (process.canReadLine()) {
      const QString line = QString::fromUtf8(process.readLine()).trimmed();
      if (line.isEmpty()) continue;
      run.lines << line;
      if (const double f = remoteProgressFraction(line); f >= 0) fraction = f;
      context.progress(fraction, QObject::tr("%1: %2").arg(targetHost(target.address), line));
    }
  };
  bool interrupted = false;
  while (!process.waitForFinished(kPollMs)) {
    if (process.state() == QProcess::NotRunning) break;
    drain();
    if (context.cancelled() && !interrupted) {
      ::kill(pid_t(process.processId()), SIGINT);  // as Ctrl-C in a terminal
      interrupted = true;
      if (!process.waitForFinished(kInterruptGraceMs)) process.kill();
    }
  }
  drain();
  const QString rest = QString::fromUtf8(process.readAll()).trimmed();
  if (!rest.isEmpty()) run.lines << rest.split('\n');
  run.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
  run.cancelled = interrupted || context.cancelled();
  if (run.exitCode != 0 && !run.cancelled) run.error = failureLine(target, run, QString());
  return run;
}

}  // namespace kiln::studio
