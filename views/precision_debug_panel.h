// PrecisionDebugPanel: the Compare view's precision-debugging run. Runs
// debugPrecision() on the document's model with its build configuration (a job:
// progress per build, Cancel), lists the builds it made and the layers that must
// stay in FP32; selecting a result selects its ONNX nodes in the document (so the
// graphs show them). "Apply as constraints and rebuild" puts the result into the
// document's build configuration (the Build panel shows the rules) and asks for a
// rebuild; the result saves as, and the document loads from, a constraints file
// (kiln build --constraints reads the same file).
#pragma once

#include <QWidget>
#include <memory>

#include "compare/precision_debug.h"
#include "kiln/status.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QListWidget;
class QProgressBar;
class QPushButton;

namespace kiln::studio {

class JobRunner;
class StudioDocument;

class PrecisionDebugPanel : public QWidget {
  Q_OBJECT
 public:
  PrecisionDebugPanel(StudioDocument* document, JobRunner* jobs, QWidget* parent = nullptr);

  void start();  // refuses (status line) without a model or while running
  bool isRunning() const { return m_job != 0; }
  std::shared_ptr<const compare::PrecisionDebugResult> result() const { return m_result; }
  QListWidget* resultList() const { return m_results; }
  QListWidget* stepList() const { return m_steps; }
  QString status() const;
  void setReducedPrecision(DataType type);  // kFloat16 or kBFloat16
  void setTolerance(double atol, double rtol);

  // Puts the result's constraints into the document's build config and emits
  // rebuildRequested with it. False (status says why) without a result.
  bool applyAndRebuild();
  // The result as a constraints file / a constraints file into the document's
  // build config (its rules replace the config's).
  Status saveConstraints(const QString& path) const;
  Status loadConstraints(const QString& path);

 signals:
  void rebuildRequested(const kiln::BuilderConfig& config);
  void finished(bool ok);

 private:
  void finish(Status status, std::shared_ptr<const compare::PrecisionDebugResult> result,
              bool cancelled);
  void selectResult(int row);
  void saveInteractive();
  void loadInteractive();

  StudioDocument* m_document;
  JobRunner* m_jobs;
  int m_job = 0;
  std::shared_ptr<const compare::PrecisionDebugResult> m_result;
  QComboBox* m_precision;
  QDoubleSpinBox *m_atol, *m_rtol;
  QPushButton *m_run, *m_cancel, *m_apply, *m_save;
  QProgressBar* m_progress;
  QLabel* m_status;
  QListWidget *m_steps, *m_results;
};

}  // namespace kiln::studio
