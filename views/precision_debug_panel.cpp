#include "precision_debug_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include "compare_jobs.h"
#include "job_runner.h"
#include "studio_document.h"

namespace kiln::studio {
namespace {

QDoubleSpinBox* toleranceBox(double value, QWidget* parent) {
  auto* box = new QDoubleSpinBox(parent);
  box->setDecimals(6);
  box->setRange(0, 1e3);
  box->setSingleStep(1e-3);
  box->setValue(value);
  return box;
}

}  // namespace

PrecisionDebugPanel::PrecisionDebugPanel(StudioDocument* document, JobRunner* jobs, QWidget* parent)
    : QWidget(parent), m_document(document), m_jobs(jobs) {
  m_precision = new QComboBox(this);
  m_precision->addItem(QStringLiteral("fp16"), static_cast<int>(DataType::kFloat16));
  m_precision->addItem(QStringLiteral("bf16"), static_cast<int>(DataType::kBFloat16));
  m_atol = toleranceBox(1e-2, this);
  m_rtol = toleranceBox(1e-2, this);
  m_run = new QPushButton(tr("Debug precision"), this);
  m_cancel = new QPushButton(tr("Cancel"), this);
  m_cancel->setEnabled(false);
  m_progress = new QProgressBar(this);
  m_status = new QLabel(tr("Finds the layers that must stay in FP32 for the outputs to meet the "
                           "tolerance (CPU backend)."),
                        this);
  m_status->setWordWrap(true);
  m_steps = new QListWidget(this);
  m_results = new QListWidget(this);
  m_apply = new QPushButton(tr("Apply as constraints and rebuild"), this);
  m_save = new QPushButton(tr("Save constraints…"), this);
  auto* load = new QPushButton(tr("Load constraints…"), this);
  m_apply->setEnabled(false);
  m_save->setEnabled(false);

  auto* form = new QFormLayout;
  form->addRow(tr("Reduced precision"), m_precision);
  form->addRow(tr("atol"), m_atol);
  form->addRow(tr("rtol"), m_rtol);
  auto* runRow = new QHBoxLayout;
  runRow->addWidget(m_run);
  runRow->addWidget(m_cancel);
  auto* resultRow = new QHBoxLayout;
  resultRow->addWidget(m_apply);
  resultRow->addWidget(m_save);
  resultRow->addWidget(load);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(runRow);
  layout->addWidget(m_progress);
  layout->addWidget(m_status);
  layout->addWidget(new QLabel(tr("Builds"), this));
  layout->addWidget(m_steps, 1);
  layout->addWidget(new QLabel(tr("Keep in FP32 (click to select the ONNX nodes)"), this));
  layout->addWidget(m_results, 1);
  layout->addLayout(resultRow);

  connect(m_run, &QPushButton::clicked, this, &PrecisionDebugPanel::start);
  connect(m_cancel, &QPushButton::clicked, this, [this] {
    if (m_job) m_jobs->cancel(m_job);
  });
  connect(m_results, &QListWidget::currentRowChanged, this, &PrecisionDebugPanel::selectResult);
  connect(m_apply, &QPushButton::clicked, this, &PrecisionDebugPanel::applyAndRebuild);
  connect(m_save, &QPushButton::clicked, this, &PrecisionDebugPanel::saveInteractive);
  connect(load, &QPushButton::clicked, this, &PrecisionDebugPanel::loadInteractive);
}

QString PrecisionDebugPanel::status() const {
  return m_status->text();
}

void PrecisionDebugPanel::setReducedPrecision(DataType type) {
  m_precision->setCurrentIndex(type == DataType::kBFloat16 ? 1 : 0);
}

void PrecisionDebugPanel::setTolerance(double atol, double rtol) {
  m_atol->setValue(atol);
  m_rtol->setValue(rtol);
}

void PrecisionDebugPanel::start() {
  if (m_job) return m_status->setText(tr("precision debugging is already running"));
  if (!m_document->network()) return m_status->setText(tr("precision debugging: no model is open"));
  PrecisionDebugRequest request;
  request.network = m_document->network();
  request.config = m_document->buildConfig();
  request.reduced = static_cast<DataType>(m_precision->currentData().toInt());
  request.tolerance = {m_atol->value(), m_rtol->value()};
  auto outcome = std::make_shared<PrecisionDebugOutcome>();
  QPointer<PrecisionDebugPanel> self(this);
  m_steps->clear();
  m_results->clear();
  m_result.reset();
  m_apply->setEnabled(false);
  m_save->setEnabled(false);
  m_run->setEnabled(false);
  m_cancel->setEnabled(true);
  m_progress->setValue(0);
  m_status->setText(tr("debugging %1 precision…").arg(m_precision->currentText()));
  m_job = m_jobs->start(
      tr("Precision debugging"),
      [request, outcome](JobContext& context) {
        *outcome = runPrecisionDebugJob(request, context);
      },
      [self, outcome](const JobContext& context) {
        if (context.failed()) outcome->status = internalError(context.failure().toStdString());
        if (self) self->finish(outcome->status, outcome->result, context.cancelled());
      });
  connect(m_jobs, &JobRunner::jobProgress, this, [this](int id, double fraction, const QString&) {
    if (id == m_job && fraction >= 0) m_progress->setValue(static_cast<int>(100 * fraction));
  });
}

void PrecisionDebugPanel::finish(Status status,
                                 std::shared_ptr<const compare::PrecisionDebugResult> result,
                                 bool cancelled) {
  m_job = 0;
  disconnect(m_jobs, &JobRunner::jobProgress, this, nullptr);
  m_run->setEnabled(true);
  m_cancel->setEnabled(false);
  if (cancelled || !status.isOk() || !result) {
    m_progress->setValue(0);
    m_status->setText(
        cancelled
            ? tr("precision debugging cancelled")
            : tr("precision debugging failed: %1").arg(QString::fromStdString(status.message())));
    emit finished(false);
    return;
  }
  m_result = std::move(result);
  m_progress->setValue(100);
  for (const compare::PrecisionDebugStep& step : m_result->steps)
    m_steps->addItem(tr("build %1: %2 — %3 (max abs %4)")
                         .arg(step.build)
                         .arg(QString::fromStdString(step.description))
                         .arg(step.pass ? tr("pass") : tr("FAIL"))
                         .arg(step.maxAbs, 0, 'g', 3));
  for (const compare::DebugLayer& layer : m_result->keep) {
    QStringList nodes;
    for (const std::string& n : layer.sourceNodes) nodes << QString::fromStdString(n);
    auto* item = new QListWidgetItem(
        tr("%1  (ONNX: %2)").arg(QString::fromStdString(layer.name), nodes.join(", ")));
    item->setData(Qt::UserRole, nodes);
    m_results->addItem(item);
  }
  m_status->setText(
      m_result->reducedPasses
          ? tr("every layer may run in reduced precision (%1 build)").arg(m_result->builds)
          : tr("%1 layer(s) must stay in FP32; %2 builds over %3 layers")
                .arg(m_result->keep.size())
                .arg(m_result->builds)
                .arg(m_result->candidates.size()));
  m_apply->setEnabled(true);
  m_save->setEnabled(true);
  emit finished(true);
}

void PrecisionDebugPanel::selectResult(int row) {
  if (row < 0) return;
  m_document->selectNodes(m_results->item(row)->data(Qt::UserRole).toStringList());
}

bool PrecisionDebugPanel::applyAndRebuild() {
  if (!m_result) {
    m_status->setText(tr("run precision debugging first"));
    return false;
  }
  BuilderConfig config = m_document->buildConfig();
  config.layerPrecisions.clear();
  config.layerOutputTypes.clear();
  applyPrecisionConstraints(m_result->constraints, &config);
  m_document->setBuildConfig(config);
  emit rebuildRequested(config);
  return true;
}

Status PrecisionDebugPanel::saveConstraints(const QString& path) const {
  if (!m_result) return invalidArgument("no precision-debugging result to save");
  return savePrecisionConstraints(m_result->constraints, path.toStdString());
}

Status PrecisionDebugPanel::loadConstraints(const QString& path) {
  KILN_ASSIGN_OR_RETURN(PrecisionConstraints loaded, loadPrecisionConstraints(path.toStdString()));
  BuilderConfig config = m_document->buildConfig();
  config.layerPrecisions.clear();
  config.layerOutputTypes.clear();
  applyPrecisionConstraints(loaded, &config);
  m_document->setBuildConfig(config);
  m_status->setText(tr("constraints loaded from %1").arg(path));
  return Status::ok();
}

void PrecisionDebugPanel::saveInteractive() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save constraints"), QString(),
                                                    tr("Kiln constraints (*.json)"));
  if (path.isEmpty()) return;
  const Status s = saveConstraints(path);
  m_status->setText(s.isOk() ? tr("constraints written to %1").arg(path)
                             : QString::fromStdString(s.message()));
}

void PrecisionDebugPanel::loadInteractive() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Load constraints"), QString(),
                                                    tr("Kiln constraints (*.json)"));
  if (path.isEmpty()) return;
  const Status s = loadConstraints(path);
  if (!s.isOk()) m_status->setText(QString::fromStdString(s.message()));
}

}  // namespace kiln::studio
