#include "targets_dialog.h"

#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace kiln::studio {

TargetsDialog::TargetsDialog(const std::vector<RemoteTarget>& targets, const QString& filePath,
                             QWidget* parent)
    : QDialog(parent), m_table(new QTableWidget(0, 2, this)), m_problem(new QLabel(this)) {
  setWindowTitle(tr("Remote Targets"));
  auto* note = new QLabel(
      tr("Builds, profiles and calibrations can run on a GPU machine through "
         "<code>kiln --remote</code> (OpenSSH). Give <code>[user@]host[:port]</code> and, when "
         "kiln is not on the target's PATH, its path there. No password is stored: ssh uses "
         "your key or agent, and checks the host key against known_hosts.<br>Saved in %1")
          .arg(filePath.toHtmlEscaped()),
      this);
  note->setWordWrap(true);
  m_table->setObjectName("targetsTable");
  m_table->setHorizontalHeaderLabels({tr("Address"), tr("kiln on the target (optional)")});
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  m_table->verticalHeader()->hide();
  for (const RemoteTarget& t : targets) addRow(t);
  auto* add = new QPushButton(tr("Add"), this);
  auto* remove = new QPushButton(tr("Remove"), this);
  connect(add, &QPushButton::clicked, this, [this] {
    addRow({});
    m_table->setCurrentCell(m_table->rowCount() - 1, 0);
    m_table->editItem(m_table->item(m_table->rowCount() - 1, 0));
  });
  connect(remove, &QPushButton::clicked, this, [this] {
    if (m_table->currentRow() >= 0) m_table->removeRow(m_table->currentRow());
  });
  auto* rowButtons = new QHBoxLayout;
  rowButtons->addWidget(add);
  rowButtons->addWidget(remove);
  rowButtons->addStretch(1);
  m_problem->setObjectName("targetsProblem");
  m_problem->setStyleSheet("color: #b02828");
  m_problem->setWordWrap(true);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &TargetsDialog::tryAccept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(note);
  layout->addWidget(m_table, 1);
  layout->addLayout(rowButtons);
  layout->addWidget(m_problem);
  layout->addWidget(buttons);
  resize(620, 360);
}

void TargetsDialog::addRow(const RemoteTarget& target) {
  const int row = m_table->rowCount();
  m_table->insertRow(row);
  m_table->setItem(row, 0, new QTableWidgetItem(target.address));
  m_table->setItem(row, 1, new QTableWidgetItem(target.kilnPath));
}

std::vector<RemoteTarget> TargetsDialog::targets() const {
  std::vector<RemoteTarget> targets;
  for (int row = 0; row < m_table->rowCount(); ++row) {
    auto text = [this, row](int column) {
      const QTableWidgetItem* item = m_table->item(row, column);
      return item ? item->text().trimmed() : QString();
    };
    if (text(0).isEmpty() && text(1).isEmpty()) continue;
    targets.push_back({text(0), text(1)});
  }
  return targets;
}

QString TargetsDialog::problem() const {
  int row = 0;
  for (const RemoteTarget& t : targets()) {
    ++row;
    QString why;
    if (!checkTargetAddress(t.address, &why)) return tr("target %1: %2").arg(row).arg(why);
  }
  return QString();
}

void TargetsDialog::tryAccept() {
  const QString why = problem();
  m_problem->setText(why);
  if (why.isEmpty()) accept();
}

}  // namespace kiln::studio
