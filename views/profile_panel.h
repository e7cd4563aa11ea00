// ProfilePanel: runs the open plan N times with per-layer timing in the background
// and puts the measured medians into the engine report (layer table, charts and
// engine graph then show measured times). Where the plan cannot run on a GPU here
// (no device) its network is timed on the CPU reference backend, and a banner says
// so; trtexec exports cannot be run and show the times trtexec measured.
#pragma once

#include <QWidget>

class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace kiln::studio {

class JobRunner;
class StudioDocument;

class ProfilePanel : public QWidget {
  Q_OBJECT
 public:
  ProfilePanel(StudioDocument* document, JobRunner* jobs, QWidget* parent = nullptr);
  void startProfile();
  void setIterations(int iterations);
  QString bannerText() const;  // empty when hidden
  QString summaryText() const;
  int rowCount() const;

 signals:
  void profileFinished(bool ok, const QString& message);

 private:
  void updateState();
  void showResult();
  StudioDocument* m_document;
  JobRunner* m_jobs;
  QLabel* m_banner;
  QLabel* m_summary;
  QSpinBox* m_iterations;
  QPushButton* m_run;
  QTableWidget* m_table;
  bool m_running = false;
};

}  // namespace kiln::studio
