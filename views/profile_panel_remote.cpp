// ProfilePanel: profiling on a remote target. `kiln run PLAN --iterations N
// --export-profile FILE` runs there through `kiln --remote` (remote_run.h) as a JobRunner
// job (status-bar progress and Cancel); the profile comes back to a temporary file and is
// applied to the open report as a local profile is.
#include <QFileInfo>
#include <QPushButton>
#include <QSpinBox>
#include <QTemporaryDir>
#include <memory>

#include "engine_report.h"
#include "job_runner.h"
#include "profile_panel.h"
#include "remote_run.h"
#include "remote_targets.h"
#include "studio_document.h"

namespace kiln::studio {

bool ProfilePanel::runRemotely() {
  if (!m_targets || !m_targets->current()) return false;
  const RemoteTarget target = *m_targets->current();
  const auto report = m_document->report();
  const QString plan = m_document->enginePath();
  if (!plan.endsWith(".kiln") || !QFileInfo(plan).isFile()) {
    const QString why = tr("profile on %1: the engine is not a saved .kiln file (give the Build "
                           "dock a plan file, or open one)")
                            .arg(target.address);
    m_document->addIssue({IssueSeverity::kError, "profile", why, {}});
    emit profileFinished(false, why);
    return true;
  }
  auto folder = std::make_shared<QTemporaryDir>();
  const QString profile = folder->filePath("profile.json");
  const int iterations = m_iterations->value();
  const QStringList args = {
      "run", plan, "--iterations", QString::number(iterations), "--export-profile", profile};
  auto run = std::make_shared<RemoteRun>();
  m_running = true;
  updateState();
  m_jobs->start(
      tr("Profile %1 x%2 on %3")
          .arg(QFileInfo(plan).fileName())
          .arg(iterations)
          .arg(target.address),
      [target, args, run](JobContext& context) { *run = runRemoteKiln(target, args, context); },
      [this, run, report, profile, folder, plan](const JobContext& context) {
        m_running = false;
        updateState();
        m_document->clearIssues("profile");
        if (m_document->enginePath() != plan) return;  // another engine opened meanwhile
        QString why = context.failed() ? context.failure() : run->error;
        if (run->cancelled && why.isEmpty()) why = tr("profile cancelled");
        auto profiled = std::make_shared<inspector::EngineReport>(*report);
        if (why.isEmpty()) {
          const Status applied = inspector::applyProfileFile(profile.toStdString(), profiled.get());
          if (!applied.isOk()) why = QString::fromStdString(applied.message());
        }
        if (!why.isEmpty()) {
          m_document->addIssue(
              {run->cancelled ? IssueSeverity::kInfo : IssueSeverity::kError, "profile", why, {}});
          emit profileFinished(false, why);
          return;
        }
        m_document->setReport(profiled);
        emit profileFinished(true, summaryText());
      });
  return true;
}

}  // namespace kiln::studio
