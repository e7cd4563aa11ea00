// Remote targets (issue 29 item 1, the studio half): the saved SSH targets a Build, a
// Profile or a Calibration can run on through `kiln --remote` (docs/scale-out.md),
// kept in a plain text file, one target a line:
//
//   # [user@]host[:port]  [the target's kiln, when not on its PATH]
//   gpu@jetson:2222  /opt/kiln/bin/kiln
//   build-server
//
// Only the address and a program path are stored: no password, key or passphrase (ssh
// runs with BatchMode, so keys or an agent authenticate; a "user:secret@host" line is
// refused). TargetList holds the file's targets and which one is current (none: Local,
// the default), and remembers that choice in the studio's settings.
#pragma once

#include <QObject>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <vector>

namespace kiln::studio {

struct RemoteTarget {
  QString address;   // [user@]host[:port]
  QString kilnPath;  // the target's kiln ("" : `kiln` on its PATH)
  bool operator==(const RemoteTarget&) const = default;
};

// Whether `address` is [user@]host[:port] (user and host without spaces, quotes or
// shell characters, no leading '-', a port 1..65535); else false with the reason.
bool checkTargetAddress(const QString& address, QString* why);
// The host part of an address ("gpu@jetson:2222" -> "jetson"), for messages.
QString targetHost(const QString& address);

// $XDG_CONFIG_HOME/kiln/targets (~/.config/kiln/targets); KILN_TARGETS_FILE overrides.
QString targetsFilePath();

struct TargetsFile {
  std::vector<RemoteTarget> targets;
  QStringList problems;  // "targets:3: ..." for each line that was skipped
};
// A missing file is an empty list. Blank lines and '#' comments are skipped.
TargetsFile readTargets(const QString& path);
// Writes the list (a header comment, then a line per target) atomically; false with the
// reason when a target is invalid or the file cannot be written.
bool writeTargets(const QString& path, const std::vector<RemoteTarget>& targets, QString* error);

// The arguments of `kiln` that run `kilnArgs` on `target`: --remote ADDRESS then them.
QStringList remoteArguments(const RemoteTarget& target, const QStringList& kilnArgs);
// `base` with KILN_REMOTE_KILN set to the target's kiln when the target names one.
QProcessEnvironment remoteEnvironment(const RemoteTarget& target, QProcessEnvironment base);

class TargetList : public QObject {
  Q_OBJECT
 public:
  // Reads `path` (targetsFilePath() when empty) and the saved choice.
  explicit TargetList(const QString& path = QString(), QObject* parent = nullptr);

  const std::vector<RemoteTarget>& targets() const { return m_targets; }
  QStringList problems() const { return m_problems; }
  QString path() const { return m_path; }
  // The current target, or null for Local.
  const RemoteTarget* current() const;
  // Selects by address; "" (or an address not in the list) selects Local. Saved.
  void setCurrent(const QString& address);
  // Replaces the list and writes the file; the current target stays when still listed.
  bool setTargets(const std::vector<RemoteTarget>& targets, QString* error);

 signals:
  void changed();  // the list or the current target

 private:
  QString m_path;
  std::vector<RemoteTarget> m_targets;
  QStringList m_problems;
  QString m_current;  // address, "" for Local
};

}  // namespace kiln::studio
