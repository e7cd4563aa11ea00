// JobsWidget: the status bar's list of running jobs: the newest job's title, its
// progress and phase text, a count of the others, and Cancel (cancels the newest).
#pragma once

#include <QString>
#include <QWidget>
#include <map>

class QLabel;
class QProgressBar;
class QToolButton;

namespace kiln::studio {

class JobRunner;

class JobsWidget : public QWidget {
  Q_OBJECT
 public:
  explicit JobsWidget(JobRunner* runner, QWidget* parent = nullptr);
  QString text() const;  // what the label shows, for tests

 private:
  struct Entry {
    QString title, phase;
    double fraction = -1;
  };
  void refresh();
  JobRunner* m_runner;
  std::map<int, Entry> m_entries;
  QLabel* m_label;
  QProgressBar* m_bar;
  QToolButton* m_cancel;
};

}  // namespace kiln::studio
