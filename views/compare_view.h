// CompareView (View "compare", "Compare"): two builds of the open model side by
// side. A is the document's engine; B is a plan file, or a variant built from the
// current configuration with edits, or the rebuild the precision debugger asks for.
// Both engines are drawn aligned through ONNX provenance (CompareLanes) with
// per-layer colouring by time delta, precision or error; a diff table sortable by
// delta or error; after "Compare accuracy" (B against A, per tensor) per-output
// error histograms and heatmaps; and the precision-debugging run. Selecting a row
// (lanes or table) selects its ONNX nodes in the document, and the reverse. With a
// remote target chosen (setTargets), a variant builds and the accuracy runs on the
// target through `kiln --remote` (compare_view_remote.cpp).
#pragma once

#include <QWidget>
#include <memory>

#include "compare/accuracy_compare.h"
#include "compare/build_diff.h"
#include "compare_lanes.h"
#include "kiln/builder_config.h"
#include "kiln/plan.h"
#include "view.h"

class QAction;
class QComboBox;
class QLabel;
class QSortFilterProxyModel;
class QTableView;
class QToolBar;

namespace kiln::studio {

class CompareDiffModel;
class ErrorPlots;
class JobRunner;
class PrecisionDebugPanel;
class StudioDocument;
class TargetList;
class VariantForm;

class CompareView : public QWidget, public View {
  Q_OBJECT
 public:
  CompareView(StudioDocument* document, JobRunner* jobs, QWidget* parent = nullptr);

  QString id() const override { return QStringLiteral("compare"); }
  QString title() const override { return tr("Compare"); }
  QWidget* widget() override { return this; }
  QToolBar* toolBar() override { return m_toolBar; }

  // Where variants build and accuracy runs: the current target of `targets` (Local
  // when none); must outlive this view.
  void setTargets(TargetList* targets);
  // Cancels the running build of B or accuracy comparison (also a remote one).
  void cancel();
  bool isBusy() const { return m_job >= 0; }

  // Build B. The diff against A follows; an accuracy result is dropped.
  void setBuildB(const QString& title, std::shared_ptr<const Plan> plan);
  Status openB(const QString& path);  // a .kiln plan
  // Builds `config` on the CPU backend as a job (on the target, for A's backend, when
  // one is chosen); the plan becomes B.
  void buildVariant(const BuilderConfig& config, const QString& title);
  // B against A on the same inputs, per tensor (a job; `kiln compare B A` on the target
  // when one is chosen).
  void compareAccuracy();
  void setColouring(CompareColouring colouring);

  std::shared_ptr<const Plan> planB() const { return m_planB; }
  std::shared_ptr<const compare::AccuracyReport> accuracy() const { return m_accuracy; }
  CompareDiffModel* diffModel() const { return m_model; }
  QSortFilterProxyModel* proxy() const { return m_proxy; }
  QTableView* table() const { return m_table; }
  CompareLanes* lanes() const { return m_lanes; }
  ErrorPlots* errorPlots() const { return m_plots; }
  PrecisionDebugPanel* debugPanel() const { return m_debug; }
  VariantForm* variantForm() const { return m_variant; }
  QString statusText() const;

 signals:
  void comparisonChanged();        // a new diff (A or B changed)
  void accuracyFinished(bool ok);  // after compareAccuracy()
  void variantFinished(bool ok);   // after buildVariant()

 private:
  QToolBar* createToolBar();
  void refreshDiff();
  void selectRow(int row);  // model row: table, lanes and document
  void onTableSelection();
  void onDocumentSelection();
  void openBInteractive();
  void buildVariantFromForm();
  // The job now running (its progress goes to the status line, Cancel to it); -1 none.
  void setJob(int job);
  void showAccuracy(std::shared_ptr<const compare::AccuracyReport> report, const QString& where);
  // compare_view_remote.cpp: false when no target is chosen (then the work runs here).
  bool buildVariantRemotely(const BuilderConfig& config, const QString& title);
  bool compareAccuracyRemotely(std::shared_ptr<const Plan> planA,
                               std::shared_ptr<const Plan> planB);

  StudioDocument* m_document;
  JobRunner* m_jobs;
  TargetList* m_targets = nullptr;
  int m_job = -1;
  QToolBar* m_toolBar;
  QAction* m_cancel = nullptr;
  QComboBox* m_colouring;
  QLabel* m_status;
  VariantForm* m_variant;
  CompareDiffModel* m_model;
  QSortFilterProxyModel* m_proxy;
  QTableView* m_table;
  CompareLanes* m_lanes;
  ErrorPlots* m_plots;
  PrecisionDebugPanel* m_debug;
  QString m_titleB;
  std::shared_ptr<const Plan> m_planB;
  std::shared_ptr<const inspector::EngineReport> m_reportB;
  std::shared_ptr<const compare::AccuracyReport> m_accuracy;
  bool m_syncing = false;
};

}  // namespace kiln::studio
