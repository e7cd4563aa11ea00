// The main window's plan trust (the keys a plan's signature is checked against, the
// status-bar label) and the prompt before opening the source model a plan names
// (issue 27: a plan is untrusted input; its recorded path is shown and asked about).
#include "main_window.h"

#include <QFileInfo>
#include <QMessageBox>

#include "file_loader.h"
#include "plan_trust.h"
#include "plan_trust_dialog.h"

namespace kiln::studio {

Status MainWindow::setTrustedKeys(const QStringList& keyFiles, bool save) {
  KILN_RETURN_IF_ERROR(applyTrustedKeys(keyFiles));
  m_trustedKeys = keyFiles;
  m_sessionKeys = save ? QStringList() : keyFiles;
  if (save) saveTrustedKeys(keyFiles);
  m_document.clearIssues("trust");  // what start-up said about the saved keys
  updateTrustLabel();
  return Status::ok();
}

void MainWindow::editPlanTrust() {
  PlanTrustDialog dialog(m_sessionKeys.isEmpty() ? savedTrustedKeys() : m_sessionKeys,
                         m_sessionKeys, this);
  if (dialog.exec() != QDialog::Accepted) return;
  const Status status = setTrustedKeys(dialog.keyFiles(), true);
  if (status.isOk()) {
    statusBar()->showMessage(policyText(static_cast<int>(m_trustedKeys.size())), 10000);
    return;
  }
  QMessageBox::warning(this, tr("Plan Trust"),
                       tr("%1\n\nThe trusted keys in force are unchanged.")
                           .arg(QString::fromStdString(status.message())));
}

// The saved keys, before any plan opens. A key file that went away must not switch
// signatures off for the others: those stay in force, and an issue names it.
void MainWindow::restoreTrust() {
  const QStringList saved = savedTrustedKeys();
  QStringList usable;
  for (const QString& key : saved) {
    const KeyFileState state = keyFileState(key);
    if (state.ok)
      usable << key;
    else
      m_document.addIssue({IssueSeverity::kError,
                           "trust",
                           tr("trusted plan key not loaded: %1").arg(state.text),
                           {}});
  }
  if (const Status status = applyTrustedKeys(usable); !status.isOk()) {
    // A key file changed since it was checked: nothing was applied.
    m_document.addIssue(
        {IssueSeverity::kError, "trust", QString::fromStdString(status.message()), {}});
    return updateTrustLabel();
  }
  if (!saved.isEmpty() && usable.isEmpty())
    m_document.addIssue({IssueSeverity::kError,
                         "trust",
                         tr("no saved trusted key loads: plan signatures are not required "
                            "(Tools > Plan Trust...)"),
                         {}});
  m_trustedKeys = usable;
  updateTrustLabel();
}

// The open plan's trust state as it loaded; with no plan from a file, the policy.
void MainWindow::updateTrustLabel() {
  const std::optional<PlanTrust>& trust = m_document.planTrust();
  const QString policy = policyText(static_cast<int>(m_trustedKeys.size()));
  m_trustLabel->setText(trust ? tr("Plan: %1").arg(planTrustText(*trust)) : policy);
  QString tip = policy;
  for (const QString& key : m_trustedKeys) tip += "\n" + key;
  if (!m_sessionKeys.isEmpty()) tip += "\n" + tr("(from --trust, this session only)");
  m_trustLabel->setToolTip(tip);
}

void MainWindow::setSourceModelPrompt(SourceModelPrompt prompt) {
  m_sourceModelPrompt = std::move(prompt);
}

bool MainWindow::askToOpenSourceModel(const QString& planPath, const QString& modelPath) {
  const QString text =
      tr("The plan %1 says it was built from this ONNX model:\n\n%2\n\nOpen that file to show "
         "the model's original nodes? The path comes from the plan: open it only if you "
         "trust the plan and know the file.")
          .arg(QFileInfo(planPath).fileName(), modelPath);
  return QMessageBox::question(this, tr("Open the plan's source model?"), text,
                               QMessageBox::Yes | QMessageBox::No,
                               QMessageBox::No) == QMessageBox::Yes;
}

void MainWindow::offerSourceModel(const QString& planPath, const QString& modelPath) {
  if (m_document.enginePath() != planPath) return;  // another engine came meanwhile
  // Shown escaped; a path that needs escaping is not opened at all.
  const QString shown = QString::fromStdString(escapeControlCharacters(modelPath.toStdString()));
  const bool open =
      shown == modelPath && m_sourceModelPrompt && m_sourceModelPrompt(planPath, shown);
  if (!open) {
    m_document.addIssue(
        {IssueSeverity::kInfo,
         "open",
         tr("%1 records its source model %2, not opened: the graph shows the network as built")
             .arg(QFileInfo(planPath).fileName(), shown),
         {}});
    return;
  }
  auto result = std::make_shared<Result<LoadedModel>>(Status::ok());
  const std::string file = modelPath.toStdString();
  m_jobs.start(
      tr("Import %1").arg(QFileInfo(modelPath).fileName()),
      [result, file](JobContext&) { *result = loadModel(file); },
      [this, result, planPath, modelPath](const JobContext& context) {
        if (context.failed()) *result = internalError(context.failure().toStdString());
        if (m_document.enginePath() != planPath) return;
        if (!result->isOk()) {
          m_document.addIssue(
              {IssueSeverity::kWarning,
               "open",
               tr("source model %1 did not load (%2); the graph shows the "
                  "network as built")
                   .arg(modelPath, QString::fromStdString(result->status().message())),
               {}});
          return;
        }
        m_document.setModel(modelPath, result->value().network);
      });
}

}  // namespace kiln::studio
