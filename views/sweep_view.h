// SweepView: the studio's Sweep tab (issue 25 item 4, issue 29 item 2). Starts a sweep
// (`kiln sweep` as a process, locally or --slurm, options from the New Sweep dialog) or
// opens an existing sweep's JSONL log, and follows the log while it grows: a scan of the
// new lines and the sweep folder runs on a worker every half second (sweep_scan.h), the
// GUI thread only applies the snapshot. Each configuration is a row with its state
// (queued, running, done, failed, cancelled; Slurm's state and log for Slurm tasks),
// median latency, error and gate; beside the table, the latency-vs-error scatter with the
// Pareto front. Double-click (or Enter, or Open Plan) on a row asks to open its plan.
#pragma once

#include <QElapsedTimer>
#include <QPointer>
#include <QWidget>
#include <memory>

#include "sweep_dialog.h"
#include "sweep_scan.h"
#include "view.h"

class QAction;
class QLabel;
class QProcess;
class QSplitter;
class QTableView;
class QTimer;

namespace kiln::studio {

class SweepModel;
class SweepPlot;

class SweepView : public QWidget, public View {
  Q_OBJECT
 public:
  explicit SweepView(QWidget* parent = nullptr);
  ~SweepView() override;

  QString id() const override { return "sweep"; }
  QString title() const override { return tr("Sweep"); }
  QWidget* widget() override { return this; }
  QToolBar* toolBar() override { return m_toolBar; }

  // Follows the log at `logPath` (its folder's tasks.json, when there, lists every
  // configuration). Replaces what was shown; a sweep this view started keeps running.
  void follow(const QString& logPath);
  // Starts `kiln sweep` with `options` and follows its log; without a folder it gives
  // --dir MODEL.sweep beside the model. False (and the reason in the status line) when a
  // sweep started here still runs or the model is not given.
  bool startSweep(const SweepOptions& options);
  // Ends the sweep started here (SIGTERM: it ends its tasks; a Slurm sweep cancels its
  // job); the log stays followed.
  void stopSweep();
  bool isRunning() const;
  // The New Sweep dialog, pre-filled with `model` and the last options; starts on OK.
  void newSweep(const QString& model);
  void chooseLog();  // a file dialog, then follow()

  QString logPath() const { return m_state ? m_state->logPath : QString(); }
  SweepModel* model() const { return m_model; }
  SweepPlot* plot() const { return m_plot; }
  QTableView* table() const { return m_table; }
  QString statusText() const;
  int scansDone() const { return m_scans; }  // snapshots applied since follow()

 protected:
  // Narrow (a 1366 x 768 screen with the docks open): the scatter goes under the table.
  void resizeEvent(QResizeEvent* event) override;

 signals:
  // The user asked to open configuration `key`'s plan.
  void openPlanRequested(const QString& planPath, const QString& key);

 private:
  void scanNow();
  void applySnapshot(const SweepSnapshot& snapshot, bool pending);
  void updateSummary();
  void openSelectedPlan();
  void selectKey(const QString& key);

  SweepModel* m_model;
  SweepPlot* m_plot;
  QTableView* m_table;
  QSplitter* m_splitter;
  QToolBar* m_toolBar;
  QLabel* m_summary;
  QLabel* m_processLine;
  QAction *m_stop, *m_openPlan;
  QTimer* m_poll;
  std::shared_ptr<SweepScanState> m_state;
  bool m_scanning = false;
  bool m_splitterPlaced = false;  // the table's share set once the view has a size
  int m_generation = 0;
  int m_scans = 0;
  SweepSnapshot m_last;
  QPointer<QProcess> m_process;
  SweepOptions m_options;
};

}  // namespace kiln::studio
