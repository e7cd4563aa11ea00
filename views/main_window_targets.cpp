// MainWindow: where the work runs and what goes past one workstation (issue 29): the
// Target toolbar (Local or a saved SSH target, as Nsight's host/target split), Tools >
// Remote Targets..., the Build menu's sweep entries, and the Sweep view's plans opening
// in the studio.
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QToolBar>

#include "build_panel.h"
#include "calibration_session.h"
#include "calibration_view.h"
#include "compare_view.h"
#include "main_window.h"
#include "profile_panel.h"
#include "remote_targets.h"
#include "sweep_view.h"
#include "targets_dialog.h"

namespace kiln::studio {
namespace {

QMenu* menuTitled(QMenuBar* bar, const QString& title) {
  for (QAction* action : bar->actions())
    if (action->menu() && action->text() == title) return action->menu();
  return nullptr;
}

}  // namespace

void MainWindow::createScaleOut() {
  m_targets = new TargetList(QString(), this);
  for (const QString& problem : m_targets->problems())
    m_document.addIssue({IssueSeverity::kWarning, "targets", problem, {}});
  if (auto* build = qobject_cast<BuildPanel*>(panel("build"))) build->setTargets(m_targets);
  if (auto* profile = qobject_cast<ProfilePanel*>(panel("profile"))) profile->setTargets(m_targets);
  if (auto* calibration = dynamic_cast<CalibrationView*>(view("calibration")))
    calibration->session()->setTargets(m_targets);
  if (auto* compare = dynamic_cast<CompareView*>(view("compare"))) compare->setTargets(m_targets);

  auto* bar = addToolBar(tr("Target"));
  bar->setObjectName("toolbar_target");
  bar->addWidget(new QLabel(tr(" Target: "), bar));
  m_targetBox = new QComboBox(bar);
  m_targetBox->setObjectName("targetBox");
  m_targetBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_targetBox->setToolTip(
      tr("Where Build, Profile, Calibration and Compare run: this machine, or a GPU machine "
         "reached over SSH (kiln --remote)"));
  bar->addWidget(m_targetBox);
  bar->addAction(tr("Targets…"), this, &MainWindow::editTargets)
      ->setToolTip(tr("Add or remove SSH targets"));
  connect(m_targetBox, &QComboBox::activated, this,
          [this](int index) { m_targets->setCurrent(m_targetBox->itemData(index).toString()); });
  connect(m_targets, &TargetList::changed, this, &MainWindow::updateTargetBox);
  updateTargetBox();

  if (QMenu* tools = menuTitled(menuBar(), tr("&Tools")))
    tools->addAction(tr("&Remote Targets…"), this, &MainWindow::editTargets);
  auto* sweep = dynamic_cast<SweepView*>(view("sweep"));
  if (QMenu* build = menuTitled(menuBar(), tr("&Build")); build && sweep) {
    build->addSeparator();
    build->addAction(tr("New &Sweep…"), this, [this, sweep] {
      showView("sweep");
      const QString model =
          m_document.modelPath().endsWith(".onnx") ? m_document.modelPath() : QString();
      sweep->newSweep(model);
    });
    build->addAction(tr("Open Sweep &Log…"), this, [this, sweep] {
      showView("sweep");
      sweep->chooseLog();
    });
  }
  if (sweep)
    connect(sweep, &SweepView::openPlanRequested, this,
            [this](const QString& plan, const QString& key) {
              statusBar()->showMessage(tr("Opening the plan of %1").arg(key), 10000);
              openFile(plan);
            });
}

void MainWindow::updateTargetBox() {
  m_targetBox->clear();
  m_targetBox->addItem(tr("Local"), QString());
  for (const RemoteTarget& t : m_targets->targets()) m_targetBox->addItem(t.address, t.address);
  const RemoteTarget* current = m_targets->current();
  m_targetBox->setCurrentIndex(current ? m_targetBox->findData(current->address) : 0);
}

void MainWindow::editTargets() {
  TargetsDialog dialog(m_targets->targets(), m_targets->path(), this);
  if (dialog.exec() != QDialog::Accepted) return;
  QString error;
  if (!m_targets->setTargets(dialog.targets(), &error))
    QMessageBox::warning(this, tr("Remote Targets"), error);
}

}  // namespace kiln::studio
