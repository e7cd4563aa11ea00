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
class TargetList;

class ProfilePanel : public QWidget {
  Q_OBJECT
 public:
  ProfilePanel(StudioDocument* document, JobRunner* jobs, QWidget* parent = nullptr);
  void startProfile();
  // With a remote target chosen in `targets` (null: always local), startProfile runs
  // `kiln run PLAN --iterations N --export-profile` on it through `kiln --remote`
  // (profile_panel_remote.cpp) and puts the fetched profile on the report as a local
  // profile's; the open engine must be a .kiln file. Failures: one line naming the host.
  void setTargets(TargetList* targets) { m_targets = targets; }
  void setIterations(int iterations);
  QString bannerText() const;  // empty when hidden
  QString summaryText() const;
  int rowCount() const;

 signals:
  void profileFinished(bool ok, const QString& message);

 private:
  void updateState();
  void showResult();
  bool runRemotely();  // starts a remote profile when a target is chosen
  StudioDocument* m_document;
  JobRunner* m_jobs;
  QLabel* m_banner;
  QLabel* m_summary;
  QSpinBox* m_iterations;
  QPushButton* m_run;
  QTableWidget* m_table;
  bool m_running = false;
  TargetList* m_targets = nullptr;
};

}  // namespace kiln::studio
