#include "compare_view.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QPointer>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>

#include "build_job.h"
#include "compare_diff_model.h"
#include "compare_jobs.h"
#include "error_plots.h"
#include "job_runner.h"
#include "precision_debug_panel.h"
#include "studio_document.h"
#include "variant_form.h"

namespace kiln::studio {

namespace {

// What kind of total a report holds: times of different kinds do not compare (a
// profile's medians run end to end; build timings time each tactic alone).
enum class TotalKind { kUntimed, kBuildTiming, kProfiled };

TotalKind totalKind(const inspector::EngineReport& report) {
  if (report.totalMs < 0) return TotalKind::kUntimed;
  return report.profileIterations > 0 ? TotalKind::kProfiled : TotalKind::kBuildTiming;
}

QString totalText(const inspector::EngineReport& report) {
  switch (totalKind(report)) {
    case TotalKind::kUntimed:
      return CompareView::tr("untimed");
    case TotalKind::kBuildTiming:
      return CompareView::tr("%1 ms (build timing)").arg(report.totalMs, 0, 'f', 4);
    case TotalKind::kProfiled:
      return CompareView::tr("%1 ms (profiled median)").arg(report.totalMs, 0, 'f', 4);
  }
  return QString();
}

// "total 5.1100 ms (profiled median) → 3.2700 ms (profiled median), B/A 0.64×" when both
// totals are of one kind; else both, labelled, and what would make them comparable.
QString totalsText(const inspector::EngineReport& a, const inspector::EngineReport& b) {
  const TotalKind kindA = totalKind(a), kindB = totalKind(b);
  if (kindA == kindB && kindA != TotalKind::kUntimed)
    return CompareView::tr("total %1 → %2, B/A %3×")
        .arg(totalText(a), totalText(b))
        .arg(a.totalMs > 0 ? b.totalMs / a.totalMs : 0.0, 0, 'f', 2);
  const QString missing = kindA == TotalKind::kProfiled   ? QStringLiteral("B")
                          : kindB == TotalKind::kProfiled ? QStringLiteral("A")
                                                          : QStringLiteral("A and B");
  return CompareView::tr("totals not comparable: A %1, B %2; profile %3 to compare")
      .arg(totalText(a), totalText(b), missing);
}

}  // namespace

CompareView::CompareView(StudioDocument* document, JobRunner* jobs, QWidget* parent)
    : QWidget(parent), m_document(document), m_jobs(jobs) {
  m_toolBar = createToolBar();
  m_variant = new VariantForm(this);
  m_model = new CompareDiffModel(this);
  m_proxy = new QSortFilterProxyModel(this);
  m_proxy->setSourceModel(m_model);
  m_proxy->setSortRole(CompareDiffModel::kSortRole);
  m_table = new QTableView(this);
  m_table->setModel(m_proxy);
  m_table->setSortingEnabled(true);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->sortByColumn(-1, Qt::AscendingOrder);  // execution order until a header is clicked
  m_lanes = new CompareLanes(this);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(m_lanes);
  scroll->setWidgetResizable(true);
  m_plots = new ErrorPlots(this);
  m_debug = new PrecisionDebugPanel(document, jobs, this);
  auto* tabs = new QTabWidget(this);
  // In scroll areas: the precision debugging panel wants ~400 px, which with the form
  // and the diff table made the view taller than a 1366 x 768 screen.
  auto scrolled = [this](QWidget* page) {
    auto* area = new QScrollArea(this);
    area->setWidget(page);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    return area;
  };
  tabs->addTab(scrolled(m_plots), tr("Output errors"));
  tabs->addTab(scrolled(m_debug), tr("Precision debugging"));

  auto* right = new QSplitter(Qt::Vertical, this);
  auto* top = new QWidget(right);
  auto* topLayout = new QVBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  topLayout->addWidget(m_variant);
  topLayout->addWidget(m_table, 1);
  right->addWidget(top);
  right->addWidget(tabs);
  // The diff table keeps room for a header and six rows whatever the plots below want
  // (it was one row tall at 1366 x 768); the splitter gives it the larger share.
  m_table->setMinimumHeight(m_table->horizontalHeader()->sizeHint().height() +
                            6 * m_table->verticalHeader()->defaultSectionSize() +
                            2 * m_table->frameWidth());
  right->setChildrenCollapsible(false);
  right->setStretchFactor(0, 3);
  right->setStretchFactor(1, 2);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(scroll);
  split->addWidget(right);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(split);

  connect(m_lanes, &CompareLanes::rowClicked, this, &CompareView::selectRow);
  connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &CompareView::onTableSelection);
  connect(m_document, &StudioDocument::engineChanged, this, &CompareView::refreshDiff);
  connect(m_document, &StudioDocument::selectionChanged, this, &CompareView::onDocumentSelection);
  connect(m_variant, &VariantForm::buildRequested, this, &CompareView::buildVariantFromForm);
  connect(m_jobs, &JobRunner::jobProgress, this, [this](int id, double, const QString& text) {
    if (id == m_job) m_status->setText(text);
  });
  connect(m_debug, &PrecisionDebugPanel::rebuildRequested, this,
          [this](const BuilderConfig& config) { buildVariant(config, tr("precision-debugged")); });
  refreshDiff();
}

QToolBar* CompareView::createToolBar() {
  auto* bar = new QToolBar(tr("Compare"), this);
  bar->addAction(tr("Open B…"), this, &CompareView::openBInteractive);
  bar->addAction(tr("Compare accuracy"), this, &CompareView::compareAccuracy);
  m_cancel = bar->addAction(tr("Cancel"), this, &CompareView::cancel);
  m_cancel->setEnabled(false);
  m_cancel->setToolTip(tr("Stop the build of B or the accuracy comparison (also on a target)"));
  bar->addSeparator();
  bar->addWidget(new QLabel(tr(" Colour by "), bar));
  m_colouring = new QComboBox(bar);
  m_colouring->addItem(tr("time delta"), static_cast<int>(CompareColouring::kTimeDelta));
  m_colouring->addItem(tr("precision"), static_cast<int>(CompareColouring::kPrecision));
  m_colouring->addItem(tr("error"), static_cast<int>(CompareColouring::kError));
  bar->addWidget(m_colouring);
  connect(m_colouring, &QComboBox::currentIndexChanged, this, [this] {
    m_lanes->setColouring(static_cast<CompareColouring>(m_colouring->currentData().toInt()));
  });
  m_status = new QLabel(bar);
  bar->addSeparator();
  bar->addWidget(m_status);
  return bar;
}

QString CompareView::statusText() const {
  return m_status->text();
}

void CompareView::setColouring(CompareColouring colouring) {
  m_colouring->setCurrentIndex(m_colouring->findData(static_cast<int>(colouring)));
}

void CompareView::setBuildB(const QString& title, std::shared_ptr<const Plan> plan) {
  m_titleB = title;
  m_planB = std::move(plan);
  m_reportB = m_planB ? std::make_shared<const inspector::EngineReport>(
                            inspector::reportFromPlan(*m_planB, title.toStdString()))
                      : nullptr;
  refreshDiff();
}

Status CompareView::openB(const QString& path) {
  KILN_ASSIGN_OR_RETURN(Plan plan, loadPlanFile(path.toStdString()));
  setBuildB(QFileInfo(path).fileName(), std::make_shared<const Plan>(std::move(plan)));
  return Status::ok();
}

void CompareView::refreshDiff() {
  m_accuracy.reset();
  m_plots->setReport(nullptr);
  auto reportA = m_document->report();
  if (!reportA || !m_reportB) {
    m_model->setDiff(nullptr, {});
    m_lanes->setData(m_model, reportA, m_reportB);
    m_status->setText(!reportA ? tr("A: build or open an engine first")
                               : tr("B: open a plan or build a variant"));
    emit comparisonChanged();
    return;
  }
  auto diff = std::make_shared<const compare::BuildDiff>(
      compare::diffBuilds({reportA.get(), m_reportB.get()}));
  std::vector<std::vector<std::string>> outputsB;
  for (const inspector::ReportLayer& layer : m_reportB->layers) {
    outputsB.emplace_back();
    for (const inspector::ReportTensor& t : layer.outputs) outputsB.back().push_back(t.name);
  }
  m_model->setDiff(diff, std::move(outputsB));
  m_lanes->setData(m_model, reportA, m_reportB);
  int changed = 0;
  for (const compare::DiffRow& row : diff->rows)
    changed += row.precisionChanged || row.tacticChanged || row.fusionChanged || row.missing;
  m_status->setText(tr("%1 aligned rows, %2 differ; %3")
                        .arg(diff->rows.size())
                        .arg(changed)
                        .arg(totalsText(*reportA, *m_reportB)));
  emit comparisonChanged();
}

void CompareView::setJob(int job) {
  m_job = job;
  m_cancel->setEnabled(job >= 0);
}

void CompareView::cancel() {
  if (m_job >= 0) m_jobs->cancel(m_job);
}

void CompareView::buildVariant(const BuilderConfig& config, const QString& title) {
  if (!m_document->network()) {
    m_status->setText(tr("build B: no model is open"));
    emit variantFinished(false);
    return;
  }
  if (buildVariantRemotely(config, title)) return;
  BuildRequest request;
  request.network = m_document->network();
  request.config = config;
  request.config.callbacks = {};
  request.config.timingCache = nullptr;
  request.config.replay = nullptr;
  request.title = title.toStdString();
  auto outcome = std::make_shared<BuildOutcome>();
  QPointer<CompareView> self(this);
  m_status->setText(tr("building B (%1)…").arg(title));
  setJob(m_jobs->start(
      tr("Build B: %1").arg(title),
      [request, outcome](JobContext& context) { *outcome = runBuildJob(request, context); },
      [self, title, outcome](const JobContext& context) {
        if (!self) return;
        self->setJob(-1);
        if (context.failed()) outcome->status = internalError(context.failure().toStdString());
        const bool ok = !context.cancelled() && outcome->status.isOk() && outcome->plan;
        if (ok)
          self->setBuildB(title, outcome->plan);
        else
          self->m_status->setText(
              tr("build B failed: %1").arg(QString::fromStdString(outcome->status.message())));
        emit self->variantFinished(ok);
      }));
}

void CompareView::buildVariantFromForm() {
  auto config = m_variant->config(m_document->buildConfig());
  if (!config.isOk()) {
    m_status->setText(QString::fromStdString(config.status().message()));
    return;
  }
  buildVariant(config.value(), tr("variant"));
}

void CompareView::compareAccuracy() {
  auto planA = m_document->plan();
  if (!planA || !m_planB) {
    m_status->setText(tr("accuracy: both A and B must be Kiln plans"));
    emit accuracyFinished(false);
    return;
  }
  if (compareAccuracyRemotely(planA, m_planB)) return;
  auto outcome = std::make_shared<AccuracyOutcome>();
  QPointer<CompareView> self(this);
  auto planB = m_planB;
  setJob(m_jobs->start(
      tr("Compare accuracy"),
      [planA, planB, outcome](JobContext& context) {
        *outcome = runAccuracyJob(planA, planB, {1e-2, 1e-2}, context);
      },
      [self, outcome](const JobContext& context) {
        if (!self) return;
        self->setJob(-1);
        if (context.failed()) outcome->status = internalError(context.failure().toStdString());
        const bool ok = !context.cancelled() && outcome->status.isOk() && outcome->report;
        if (ok)
          self->showAccuracy(outcome->report, QString());
        else
          self->m_status->setText(
              context.cancelled() ? tr("accuracy cancelled")
                                  : tr("accuracy failed: %1")
                                        .arg(QString::fromStdString(outcome->status.message())));
        emit self->accuracyFinished(ok);
      }));
}

void CompareView::showAccuracy(std::shared_ptr<const compare::AccuracyReport> report,
                               const QString& where) {
  m_accuracy = report;
  m_model->setAccuracy(report);
  m_plots->setReport(report);
  m_lanes->update();
  const QString verdict = report->pass ? tr("within tolerance") : tr("outside tolerance");
  m_status->setText(where.isEmpty() ? tr("accuracy of B against A: %1").arg(verdict)
                                    : tr("accuracy of B against A on %1: %2").arg(where, verdict));
}

void CompareView::selectRow(int row) {
  const compare::BuildDiff* diff = m_model->diff();
  if (!diff || row < 0 || row >= static_cast<int>(diff->rows.size()) || m_syncing) return;
  m_syncing = true;
  m_lanes->setSelectedRow(row);
  const QModelIndex index = m_proxy->mapFromSource(m_model->index(row, 0));
  m_table->selectionModel()->select(
      index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  m_table->scrollTo(index);
  QStringList nodes;
  for (const std::string& n : diff->rows[row].onnxNodes) nodes << QString::fromStdString(n);
  m_document->selectNodes(nodes);
  m_syncing = false;
}

void CompareView::onTableSelection() {
  const QModelIndexList rows = m_table->selectionModel()->selectedRows();
  if (!rows.isEmpty()) selectRow(m_proxy->mapToSource(rows.front()).row());
}

void CompareView::onDocumentSelection() {
  const compare::BuildDiff* diff = m_model->diff();
  const QStringList nodes = m_document->selectedNodes();
  if (!diff || nodes.isEmpty() || m_syncing) return;
  const std::string first = nodes.front().toStdString();
  for (size_t row = 0; row < diff->rows.size(); ++row) {
    const auto& names = diff->rows[row].onnxNodes;
    if (std::find(names.begin(), names.end(), first) == names.end()) continue;
    m_syncing = true;
    m_lanes->setSelectedRow(static_cast<int>(row));
    m_syncing = false;
    return;
  }
}

void CompareView::openBInteractive() {
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Open build B"), QString(), tr("Kiln plans (*.kiln)"));
  if (path.isEmpty()) return;
  const Status s = openB(path);
  if (!s.isOk()) m_status->setText(QString::fromStdString(s.message()));
}

}  // namespace kiln::studio
