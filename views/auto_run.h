// AutoRun: the studio's scripted session, for `make run` and the screenshot script:
// open a file, optionally build it, profile the engine and save PNG screenshots of
// every view, write the HTML report, then say it has finished. Each step starts when the previous
// one's result is in the document, through the same actions a user triggers.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

namespace kiln::studio {

class MainWindow;

struct AutoRunOptions {
  QString file;        // opened first
  bool build = false;  // build the opened model (Build panel's configuration)
  // "name:1x3x224x224,..." sets min = opt = max of those dynamic inputs in the Build
  // panel's first profile before building.
  QString shapes;
  bool profile = false;   // profile the engine once built or opened
  QString screenshotDir;  // when set: a PNG per view
  QString reportPath;     // when set: the HTML report of the engine
};

class AutoRun : public QObject {
  Q_OBJECT
 public:
  AutoRun(MainWindow* window, AutoRunOptions options, QObject* parent = nullptr);
  void start();
  QStringList screenshots() const { return m_written; }

 signals:
  // ok is false when a step failed; `message` says which and why.
  void finished(bool ok, const QString& message);

 private:
  void afterOpen();
  void afterBuild(bool ok, const QString& message);
  void afterProfile(bool ok, const QString& message);
  void takeScreenshots();
  void fail(const QString& message);
  MainWindow* m_window;
  AutoRunOptions m_options;
  QStringList m_written;
  bool m_done = false;
  bool m_loaded = false;
};

}  // namespace kiln::studio
