// The Targets dialog (Tools > Remote Targets...): the saved SSH targets as an editable
// table (address [user@]host[:port], the target's kiln path), with Add and Remove. OK
// checks every row (remote_targets.h) and refuses, naming the row, while one is invalid;
// the caller then saves targets() through TargetList::setTargets.
#pragma once

#include <QDialog>
#include <vector>

#include "remote_targets.h"

class QLabel;
class QTableWidget;

namespace kiln::studio {

class TargetsDialog : public QDialog {
  Q_OBJECT
 public:
  TargetsDialog(const std::vector<RemoteTarget>& targets, const QString& filePath,
                QWidget* parent = nullptr);
  // The rows as edited, blank rows left out.
  std::vector<RemoteTarget> targets() const;
  // Empty when every row is a valid target, else why not ("row 2: ...").
  QString problem() const;
  QTableWidget* table() const { return m_table; }
  void addRow(const RemoteTarget& target);

 private:
  void tryAccept();
  QTableWidget* m_table;
  QLabel* m_problem;
};

}  // namespace kiln::studio
