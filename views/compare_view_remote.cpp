// CompareView on a remote target (issue 29 item 1): with a target chosen in the Target
// toolbar, build B is `kiln build` of the open model with the variant's options, for A's
// backend, on the target, and "Compare accuracy" is `kiln compare B A --per-tensor` there
// (both plans saved to a private folder and uploaded by content hash), each through
// `kiln --remote` (remote_run.h) as a JobRunner job: progress in the status line and the
// status bar's job list, Cancel interrupts the remote kiln, a failure is one line naming
// the host. The plan and the report come back and show as local ones do.
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QPointer>
#include <QTemporaryDir>
#include <memory>

#include "compare_view.h"
#include "job_runner.h"
#include "kiln/builder.h"
#include "kiln/file_io.h"
#include "remote_run.h"
#include "remote_targets.h"
#include "studio_document.h"

namespace kiln::studio {
namespace {

// The one line a remote job ends with: the work function's own error, else kiln
// --remote's; "" when it succeeded.
QString remoteFailure(const JobContext& context, const RemoteRun& run, const QString& own) {
  if (context.failed()) return context.failure();
  if (!own.isEmpty()) return own;
  return run.error;
}

}  // namespace

void CompareView::setTargets(TargetList* targets) {
  m_targets = targets;
}

bool CompareView::buildVariantRemotely(const BuilderConfig& config, const QString& title) {
  if (!m_targets || !m_targets->current()) return false;
  const RemoteTarget target = *m_targets->current();
  const QString model = m_document->modelPath();
  if (!model.endsWith(".onnx") || !QFileInfo(model).isFile()) {
    m_status->setText(tr("build B on %1: the open model is not an ONNX file").arg(target.address));
    emit variantFinished(false);
    return true;
  }
  const auto planA = m_document->plan();
  const std::string backend = planA ? planA->identity.backend : std::string("cpu");
  auto folder = std::make_shared<QTemporaryDir>();
  const QString plan = folder->filePath("B.kiln");
  QStringList args = kilnArgumentsOf(QString::fromStdString(
      kilnBuildCommandLine(config, model.toStdString(), plan.toStdString(), backend)));
  args << "--progress";
  auto run = std::make_shared<RemoteRun>();
  auto loaded = std::make_shared<std::shared_ptr<const Plan>>();
  auto why = std::make_shared<QString>();
  QPointer<CompareView> self(this);
  const QString named = tr("%1 on %2").arg(title, target.address);
  m_status->setText(tr("building B (%1) on %2 (kiln --remote)…").arg(title, target.address));
  setJob(m_jobs->start(
      tr("Build B: %1").arg(named),
      [target, args, plan, run, loaded, why](JobContext& context) {
        *run = runRemoteKiln(target, args, context);
        if (!run->error.isEmpty() || run->cancelled) return;
        Result<Plan> read = loadPlanFile(plan.toStdString());
        if (read.isOk())
          *loaded = std::make_shared<const Plan>(std::move(read.value()));
        else
          *why = QString::fromStdString(read.status().message());
      },
      [self, named, run, loaded, why, folder](const JobContext& context) {
        if (!self) return;
        self->setJob(-1);
        const QString failure = remoteFailure(context, *run, *why);
        const bool cancelled = run->cancelled || context.cancelled();
        const bool ok = !cancelled && failure.isEmpty() && *loaded;
        if (ok)
          self->setBuildB(named, *loaded);
        else
          self->m_status->setText(cancelled ? tr("build B cancelled")
                                            : tr("build B failed: %1").arg(failure));
        emit self->variantFinished(ok);
      }));
  return true;
}

bool CompareView::compareAccuracyRemotely(std::shared_ptr<const Plan> planA,
                                          std::shared_ptr<const Plan> planB) {
  if (!m_targets || !m_targets->current()) return false;
  const RemoteTarget target = *m_targets->current();
  auto folder = std::make_shared<QTemporaryDir>();
  const QString fileA = folder->filePath("A.kiln"), fileB = folder->filePath("B.kiln");
  const QString output = folder->filePath("accuracy.json");
  // B is the actual side, A the expected one, on seed 1's inputs at A's opt shapes, with
  // the tolerance the local comparison uses.
  const QStringList args = {"compare", fileB,    fileA, "--per-tensor", "--atol", "0.01", "--rtol",
                            "0.01",    "--seed", "1",   "--output",     output};
  auto run = std::make_shared<RemoteRun>();
  auto report = std::make_shared<std::shared_ptr<const compare::AccuracyReport>>();
  auto why = std::make_shared<QString>();
  QPointer<CompareView> self(this);
  m_status->setText(tr("comparing on %1 (kiln --remote)…").arg(target.address));
  setJob(m_jobs->start(
      tr("Compare accuracy on %1").arg(target.address),
      [=](JobContext& context) {
        context.progress(0.02, QObject::tr("saving A and B for %1").arg(target.address));
        for (const auto& [plan, file] : {std::pair{planA, fileA}, {planB, fileB}})
          if (const Status saved = savePlan(*plan, file.toStdString()); !saved.isOk()) {
            *why = QString::fromStdString(saved.message());
            return;
          }
        *run = runRemoteKiln(target, args, context);
        // Exit 3: compared, some output outside the tolerance; the report came back.
        if (run->cancelled || (run->exitCode != 0 && run->exitCode != 3)) return;
        run->error.clear();
        auto text = readRegularFile(output.toStdString(), kMaxTextFileBytes);
        auto parsed = text.isOk() ? compare::accuracyReportFromJson(
                                        nlohmann::json::parse(text.value(), nullptr, false))
                                  : Result<compare::AccuracyReport>(text.status());
        if (parsed.isOk())
          *report = std::make_shared<const compare::AccuracyReport>(std::move(parsed.value()));
        else
          *why = QObject::tr("remote %1: %2")
                     .arg(targetHost(target.address),
                          QString::fromStdString(parsed.status().message()));
      },
      [self, run, report, why, folder, target](const JobContext& context) {
        if (!self) return;
        self->setJob(-1);
        const QString failure = remoteFailure(context, *run, *why);
        const bool cancelled = run->cancelled || context.cancelled();
        const bool ok = !cancelled && failure.isEmpty() && *report;
        if (ok)
          self->showAccuracy(*report, target.address);
        else
          self->m_status->setText(cancelled ? tr("accuracy cancelled")
                                            : tr("accuracy failed: %1").arg(failure));
        emit self->accuracyFinished(ok);
      }));
  return true;
}

}  // namespace kiln::studio
