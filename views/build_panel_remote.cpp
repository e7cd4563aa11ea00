// BuildPanel: a build on a remote target. The panel's own `kiln build` line (the one it
// shows) runs on the target through `kiln --remote` (remote_run.h) as a JobRunner job, so
// its progress bar, the status bar's job list and Cancel work as for a local build; the
// plan comes back to the local -o path and opens as a local build's plan would.
#include <QComboBox>
#include <QFileInfo>
#include <QLabel>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <memory>

#include "build_job.h"
#include "build_panel.h"
#include "file_loader.h"
#include "job_runner.h"
#include "remote_run.h"
#include "remote_targets.h"
#include "studio_document.h"

namespace kiln::studio {

void BuildPanel::setTargets(TargetList* targets) {
  m_targets = targets;
  // A remote target may have a GPU where this machine has none.
  auto offerCuda = [this] {
    if (m_targets && m_targets->current() && m_backend->findText("cuda") < 0)
      m_backend->addItem("cuda");
  };
  connect(targets, &TargetList::changed, this, offerCuda);
  offerCuda();
}

void BuildPanel::startRemoteBuild() {
  const RemoteTarget target = *m_targets->current();
  m_document->clearIssues("build");
  BuildRequest request = makeRequest();
  QStringList args = kilnArgumentsOf(commandLine());
  const qsizetype output = args.indexOf("-o");
  const QString plan = output >= 0 && output + 1 < args.size() ? args[output + 1] : QString();
  if (plan.isEmpty()) return refuse(tr("build: the command line names no plan file (-o)"));
  args << "--progress";  // one line per timed layer, also when not on a terminal
  request.planPath = plan.toStdString();
  request.backend += " on " + target.address.toStdString();
  auto outcome = std::make_shared<BuildOutcome>();
  auto run = std::make_shared<RemoteRun>();
  QPointer<BuildPanel> self(this);
  m_buildJob = m_jobs->start(
      tr("Build %1 on %2").arg(QString::fromStdString(request.title), target.address),
      [target, args, plan, outcome, run](JobContext& context) {
        *run = runRemoteKiln(target, args, context);
        if (!run->error.isEmpty() || run->cancelled) return;
        context.progress(0.97, QObject::tr("loading the plan built on %1").arg(target.address));
        Result<LoadedEngine> loaded = loadPlan(plan.toStdString());
        if (!loaded.isOk()) {
          outcome->status = loaded.status();
          return;
        }
        outcome->plan = loaded.value().plan;
        outcome->report = loaded.value().report;
        outcome->saved = true;
      },
      [self, request, outcome, run](const JobContext& context) {
        if (!self) return;
        if (context.failed())
          outcome->status = internalError(context.failure().toStdString());
        else if (!run->error.isEmpty())
          outcome->status = unsupported(run->error.toStdString());
        self->finishBuild(request, *outcome, run->cancelled);
      });
  m_build->setEnabled(false);
  m_cancel->setEnabled(true);
  m_progress->setValue(0);
  m_status->setText(tr("building on %1 (kiln --remote)…").arg(target.address));
}

}  // namespace kiln::studio
