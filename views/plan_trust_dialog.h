// PlanTrustDialog (Tools > Plan Trust...): edits the list of trusted plan keys, the
// studio's face of `kiln --trust`. Lists each public key file with whether it loads
// (its key id, or the one-line error), adds files through a file dialog, removes the
// selected ones, and says what the list means. It only edits: the main window applies
// and saves the list when the dialog is accepted.
#pragma once

#include <QDialog>
#include <QStringList>

class QLabel;
class QTreeWidget;

namespace kiln::studio {

class PlanTrustDialog : public QDialog {
  Q_OBJECT
 public:
  // `sessionKeys` non-empty: this session was started with --trust, which the dialog notes.
  PlanTrustDialog(const QStringList& keyFiles, const QStringList& sessionKeys,
                  QWidget* parent = nullptr);

  QStringList keyFiles() const;
  // Appends files not yet listed (Add... after its file dialog).
  void addKeyFiles(const QStringList& files);
  void removeSelected();
  // Per row: "FILE\tSTATE" (STATE is the key id, or the error less its "FILE: "), for tests.
  QStringList rowTexts() const;
  QTreeWidget* list() const { return m_list; }

 private:
  void chooseKeyFiles();
  void updatePolicyLine();

  QTreeWidget* m_list;
  QLabel* m_policy;
};

}  // namespace kiln::studio
