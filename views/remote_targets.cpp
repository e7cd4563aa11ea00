#include "remote_targets.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSaveFile>
#include <QSettings>
#include <QStandardPaths>
#include <QTextStream>

namespace kiln::studio {
namespace {

constexpr const char* kSettingsKey = "remoteTarget";

QSettings studioSettings() {
  return QSettings("Kiln", "kiln-studio");
}

}  // namespace

bool checkTargetAddress(const QString& address, QString* why) {
  auto fail = [why](const QString& text) {
    if (why) *why = text;
    return false;
  };
  if (address.isEmpty()) return fail(QObject::tr("no address"));
  if (address.startsWith('-')) return fail(QObject::tr("an address cannot start with '-'"));
  static const QRegularExpression kSecret("^[^@]*:[^@]*@");
  if (kSecret.match(address).hasMatch())
    return fail(
        QObject::tr("'user:secret@host' holds a password: targets never store one "
                    "(ssh authenticates with your key or agent)"));
  static const QRegularExpression kAddress(
      "^(?:([A-Za-z0-9._][A-Za-z0-9._-]*)@)?([A-Za-z0-9][A-Za-z0-9.-]*|\\[[0-9A-Fa-f:.]+\\])"
      "(?::([0-9]{1,5}))?$");
  const QRegularExpressionMatch match = kAddress.match(address);
  if (!match.hasMatch()) return fail(QObject::tr("'%1' is not [user@]host[:port]").arg(address));
  if (match.hasCaptured(3)) {
    const int port = match.captured(3).toInt();
    if (port < 1 || port > 65535) return fail(QObject::tr("port %1 is not 1..65535").arg(port));
  }
  return true;
}

QString targetHost(const QString& address) {
  QString host = address.section('@', -1);
  if (host.startsWith('[')) return host.section(']', 0, 0).mid(1);
  return host.section(':', 0, 0);
}

QString targetsFilePath() {
  const QString fromEnvironment = qEnvironmentVariable("KILN_TARGETS_FILE");
  if (!fromEnvironment.isEmpty()) return fromEnvironment;
  return QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation) + "/kiln/targets";
}

TargetsFile readTargets(const QString& path) {
  TargetsFile file;
  QFile in(path);
  if (!in.exists()) return file;
  if (!in.open(QIODevice::ReadOnly | QIODevice::Text)) {
    file.problems << QObject::tr("%1: cannot be read").arg(path);
    return file;
  }
  int number = 0;
  QTextStream stream(&in);
  while (!stream.atEnd()) {
    ++number;
    const QString line = stream.readLine().trimmed();
    if (line.isEmpty() || line.startsWith('#')) continue;
    const int space = int(line.indexOf(QRegularExpression("\\s")));
    RemoteTarget target{space < 0 ? line : line.left(space),
                        space < 0 ? QString() : line.mid(space).trimmed()};
    QString why;
    if (!checkTargetAddress(target.address, &why)) {
      file.problems << QString("%1:%2: %3").arg(QFileInfo(path).fileName()).arg(number).arg(why);
      continue;
    }
    file.targets.push_back(target);
  }
  return file;
}

bool writeTargets(const QString& path, const std::vector<RemoteTarget>& targets, QString* error) {
  QString text =
      "# Kiln remote targets (kiln-studio's target selector): one a line,\n"
      "# [user@]host[:port] then, optionally, the target's kiln when it is not on its PATH.\n"
      "# No passwords: ssh authenticates with your key or agent (BatchMode).\n";
  for (const RemoteTarget& t : targets) {
    QString why;
    if (!checkTargetAddress(t.address, &why)) {
      if (error) *error = why;
      return false;
    }
    if (t.kilnPath.contains('\n')) {
      if (error) *error = QObject::tr("a kiln path cannot hold a line break");
      return false;
    }
    text += t.kilnPath.isEmpty() ? t.address + "\n" : t.address + "  " + t.kilnPath + "\n";
  }
  QDir().mkpath(QFileInfo(path).absolutePath());
  QSaveFile out(path);
  if (!out.open(QIODevice::WriteOnly | QIODevice::Text) || out.write(text.toUtf8()) < 0 ||
      !out.commit()) {
    if (error) *error = QObject::tr("%1: %2").arg(path, out.errorString());
    return false;
  }
  return true;
}

QStringList remoteArguments(const RemoteTarget& target, const QStringList& kilnArgs) {
  return QStringList{"--remote", target.address} + kilnArgs;
}

QProcessEnvironment remoteEnvironment(const RemoteTarget& target, QProcessEnvironment base) {
  if (!target.kilnPath.isEmpty()) base.insert("KILN_REMOTE_KILN", target.kilnPath);
  return base;
}

TargetList::TargetList(const QString& path, QObject* parent)
    : QObject(parent), m_path(path.isEmpty() ? targetsFilePath() : path) {
  TargetsFile file = readTargets(m_path);
  m_targets = std::move(file.targets);
  m_problems = file.problems;
  m_current = studioSettings().value(kSettingsKey).toString();
  if (!current()) m_current.clear();
}

const RemoteTarget* TargetList::current() const {
  for (const RemoteTarget& t : m_targets)
    if (t.address == m_current) return &t;
  return nullptr;
}

void TargetList::setCurrent(const QString& address) {
  const QString before = m_current;
  m_current = address;
  if (!current()) m_current.clear();
  studioSettings().setValue(kSettingsKey, m_current);
  if (m_current != before) emit changed();
}

bool TargetList::setTargets(const std::vector<RemoteTarget>& targets, QString* error) {
  if (!writeTargets(m_path, targets, error)) return false;
  m_targets = targets;
  m_problems.clear();
  if (!current()) m_current.clear();
  studioSettings().setValue(kSettingsKey, m_current);
  emit changed();
  return true;
}

}  // namespace kiln::studio
