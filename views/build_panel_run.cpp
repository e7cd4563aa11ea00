// BuildPanel: running a build (and probing for a CUDA device) through the
// JobRunner, and turning the outcome into the document's engine and Issues.
#include <QComboBox>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QStringList>
#include <algorithm>
#include <memory>

#include "build_job.h"
#include "build_panel.h"
#include "input_values.h"
#include "job_runner.h"
#include "kiln/backends.h"
#include "profiles_editor.h"
#include "remote_targets.h"
#include "shapes_dialog.h"
#include "studio_document.h"

namespace kiln::studio {

void BuildPanel::probeCuda() {
  // Probing initializes a driver, which can take a while: off the GUI thread. Every
  // backend of the registry but the first (the CPU, always usable and listed from the
  // start) is offered when its device 0 is usable; the tooltip says why one is not.
  auto probed = std::make_shared<std::vector<std::pair<std::string, BackendDevice>>>();
  QPointer<BuildPanel> self(this);
  m_jobs->start(
      tr("Looking for a CUDA device"),
      [probed](JobContext&) {
        for (size_t i = 1; i < backends().size(); ++i)
          probed->push_back({backends()[i].name, backends()[i].probe(0)});
      },
      [self, probed](const JobContext&) {
        if (!self) return;
        QStringList tips;
        for (const auto& [name, device] : *probed) {
          const QString backend = QString::fromStdString(name);
          if (device.available) {
            self->m_backend->addItem(backend);
            tips << tr("%1: %2").arg(backend, QString::fromStdString(device.name));
          } else {
            tips << tr("%1 is not offered: %2").arg(backend, QString::fromStdString(device.reason));
          }
        }
        self->m_backend->setToolTip(tips.join(QStringLiteral("\n")));
      });
}

BuildRequest BuildPanel::makeRequest() const {
  BuildRequest request;
  request.network = m_document->network();
  request.config = m_document->buildConfig();
  request.config.callbacks = BuildCallbacks{};
  request.config.timingCache = nullptr;
  request.config.replay = nullptr;
  request.backend = m_backend->currentText().toStdString();
  request.timingCachePath = m_cachePath->text().trimmed().toStdString();
  request.planPath = m_planPath->text().trimmed().toStdString();
  request.inputValues = m_inputValues;
  const QString model = m_document->modelPath();
  request.title =
      (model.isEmpty() ? QStringLiteral("model") : QFileInfo(model).fileName()).toStdString();
  return request;
}

void BuildPanel::refuse(const QString& why) {
  m_status->setText(why);
  emit buildFinished(false, why);
}

void BuildPanel::startBuild() {
  if (isBuilding()) return refuse(tr("a build is already running"));
  if (!m_document->network()) return refuse(tr("build: no model is open"));
  if (!m_profiles->isValid()) return refuse(tr("build: %1").arg(m_profiles->problem()));
  if ((m_profiles->hasDynamicInputs() && !m_shapesConfirmed) ||
      (!m_proposal.values.empty() && !m_valuesConfirmed))
    return askForShapes();
  if (m_targets && m_targets->current()) return startRemoteBuild();
  m_document->clearIssues("build");
  const BuildRequest request = makeRequest();
  auto outcome = std::make_shared<BuildOutcome>();
  QPointer<BuildPanel> self(this);
  m_buildJob = m_jobs->start(
      tr("Build %1").arg(QString::fromStdString(request.title)),
      [request, outcome](JobContext& context) { *outcome = runBuildJob(request, context); },
      [self, request, outcome](const JobContext& context) {
        if (!self) return;
        if (context.failed()) {  // the work threw: the outcome was never filled in
          BuildOutcome failed;
          failed.status = internalError(context.failure().toStdString());
          return self->finishBuild(request, failed, false);
        }
        self->finishBuild(request, *outcome, context.cancelled());
      });
  m_build->setEnabled(false);
  m_cancel->setEnabled(true);
  m_progress->setValue(0);
  m_status->setText(tr("building on %1…").arg(QString::fromStdString(request.backend)));
}

void BuildPanel::askForShapes() {
  if (m_shapesDialog) return m_shapesDialog->raise();
  const QString model = m_document->modelPath().isEmpty()
                            ? tr("the model")
                            : QFileInfo(m_document->modelPath()).fileName();
  // The dock's current profiles (the proposal, or what was loaded) are what it shows.
  ShapeProposal shown = m_proposal;
  const std::vector<OptimizationProfile> current = m_profiles->profiles();
  if (!current.empty()) shown.profile = current.front();
  auto* dialog = new ShapesDialog(*m_document->network(), model, shown, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  m_shapesDialog = dialog;
  const std::shared_ptr<const Network> network = m_document->network();
  connect(dialog, &QDialog::accepted, this, [this, dialog, network] {
    m_shapesDialog = nullptr;                      // closed; deleted later
    if (network != m_document->network()) return;  // another model opened meanwhile
    m_profiles->setNetwork(network.get(), dialog->profiles(), m_proposal.profile);
    m_shapesConfirmed = m_valuesConfirmed = true;
    m_inputValues = dialog->values();
    applyToConfig();
    startBuild();
  });
  connect(dialog, &QDialog::rejected, this, [this] {
    m_shapesDialog = nullptr;
    const QString why = tr("build cancelled: the shapes of the dynamic inputs were not confirmed");
    m_status->setText(why);
    emit buildFinished(false, why);
  });
  dialog->open();
}

ShapesDialog* BuildPanel::shapesDialog() const {
  return m_shapesDialog;
}

void BuildPanel::acceptProposedShapes() {
  m_shapesConfirmed = m_valuesConfirmed = true;
  m_inputValues.clear();
  for (const ProposedValue& proposed : m_proposal.values) {
    const auto& inputs = m_document->network()->graph.inputs;
    auto input = std::find_if(inputs.begin(), inputs.end(),
                              [&proposed](const ValueInfo& i) { return i.name == proposed.name; });
    auto value = input == inputs.end() || proposed.text.empty()
                     ? Result<Tensor>(invalidArgument("no value"))
                     : parseInputValue(*input, proposed.text);
    if (value.isOk()) m_inputValues[proposed.name] = value.value();
    m_document->addIssue({value.isOk() ? IssueSeverity::kInfo : IssueSeverity::kWarning,
                          "shapes",
                          value.isOk()
                              ? tr("input '%1' built in as the value %2 (%3)")
                                    .arg(QString::fromStdString(proposed.name),
                                         QString::fromStdString(proposed.text),
                                         QString::fromStdString(proposed.source))
                              : tr("input '%1' stays an input with random values while timing: %2")
                                    .arg(QString::fromStdString(proposed.name),
                                         QString::fromStdString(proposed.source)),
                          {}});
  }
  for (const ProposedInput& input : m_proposal.inputs) {
    const ShapeRange& r = input.range;
    m_document->addIssue(
        {input.guessed ? IssueSeverity::kWarning : IssueSeverity::kInfo,
         "shapes",
         tr("input '%1' built for min %2 opt %3 max %4 (%5)")
             .arg(QString::fromStdString(input.name), shapeToText(r.min), shapeToText(r.opt),
                  shapeToText(r.max), QString::fromStdString(input.source)),
         {}});
  }
}

void BuildPanel::cancelBuild() {
  if (isBuilding()) m_jobs->cancel(m_buildJob);
}

void BuildPanel::finishBuild(const BuildRequest& request, const BuildOutcome& outcome,
                             bool cancelled) {
  m_buildJob = -1;
  m_cancel->setEnabled(false);
  updateBuildEnabled();
  const QString model = QString::fromStdString(request.title);
  if (request.network != m_document->network()) {  // another model opened meanwhile
    const QString message = tr("%1: build discarded, another model is open").arg(model);
    m_progress->setValue(0);
    m_status->setText(message);
    emit buildFinished(false, message);
    return;
  }
  if (cancelled || outcome.status.code() == StatusCode::kCancelled) {
    m_progress->setValue(0);
    m_document->addIssue({IssueSeverity::kInfo, "build", tr("%1: build cancelled").arg(model), {}});
    m_status->setText(tr("build cancelled"));
    emit buildFinished(false, tr("build cancelled"));
    return;
  }
  if (!outcome.status.isOk() || !outcome.plan) {
    const std::string why =
        outcome.status.isOk() ? "the build returned no plan" : outcome.status.message();
    const QString message = model + ": " + QString::fromStdString(why);
    m_progress->setValue(0);
    m_document->addIssue({IssueSeverity::kError, "build", message,
                          issueNodeName(outcome.status, request.network.get())});
    m_status->setText(message);
    emit buildFinished(false, message);
    return;
  }
  // The builder's warnings are text (BuildRecord::warnings, kept in the plan file).
  for (const std::string& warning : outcome.warnings)
    m_document->addIssue({IssueSeverity::kWarning, "build", QString::fromStdString(warning),
                          nodeNamedInText(warning, request.network.get())});
  const QString path = outcome.saved ? QString::fromStdString(request.planPath) : QString();
  m_builtPlan = outcome.plan;
  m_document->setEngine(path, outcome.plan, outcome.report);
  const QString message = tr("%1: %2 layers built on %3 in %4 s, warnings: %5")
                              .arg(model)
                              .arg(outcome.plan->record.layers.size())
                              .arg(QString::fromStdString(request.backend))
                              .arg(outcome.plan->record.buildSeconds, 0, 'f', 2)
                              .arg(outcome.warnings.size());
  m_progress->setValue(1000);
  m_status->setText(message);
  emit buildFinished(true, message);
}

}  // namespace kiln::studio
