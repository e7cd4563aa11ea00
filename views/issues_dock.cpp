#include "issues_dock.h"

#include <QHeaderView>
#include <QLabel>
#include <QStyle>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "studio_document.h"

namespace kiln::studio {

namespace {
QString severityName(IssueSeverity severity) {
  switch (severity) {
    case IssueSeverity::kInfo:
      return "info";
    case IssueSeverity::kWarning:
      return "warning";
    case IssueSeverity::kError:
      return "error";
  }
  return "error";
}
QStyle::StandardPixmap severityIcon(IssueSeverity severity) {
  switch (severity) {
    case IssueSeverity::kInfo:
      return QStyle::SP_MessageBoxInformation;
    case IssueSeverity::kWarning:
      return QStyle::SP_MessageBoxWarning;
    case IssueSeverity::kError:
      return QStyle::SP_MessageBoxCritical;
  }
  return QStyle::SP_MessageBoxCritical;
}
}  // namespace

IssuesDock::IssuesDock(StudioDocument* document, QWidget* parent)
    : QWidget(parent),
      m_document(document),
      m_tree(new QTreeWidget(this)),
      m_summary(new QLabel(this)) {
  m_tree->setColumnCount(4);
  m_tree->setHeaderLabels({"Severity", "Source", "Node", "Message"});
  m_tree->setRootIsDecorated(false);
  m_tree->setWordWrap(true);
  m_tree->header()->setStretchLastSection(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(m_summary);
  layout->addWidget(m_tree);
  connect(m_document, &StudioDocument::issuesChanged, this, &IssuesDock::rebuild);
  connect(m_tree, &QTreeWidget::itemActivated, this,
          [this](QTreeWidgetItem* item) { activateRow(m_tree->indexOfTopLevelItem(item)); });
  rebuild();
}

void IssuesDock::rebuild() {
  m_tree->clear();
  int errors = 0, warnings = 0;
  for (const Issue& issue : m_document->issues()) {
    auto* item = new QTreeWidgetItem(m_tree);
    item->setIcon(0, style()->standardIcon(severityIcon(issue.severity)));
    item->setText(0, severityName(issue.severity));
    item->setText(1, issue.source);
    item->setText(2, issue.nodeName);
    item->setText(3, issue.message);
    item->setToolTip(3, issue.message);
    errors += issue.severity == IssueSeverity::kError;
    warnings += issue.severity == IssueSeverity::kWarning;
  }
  m_summary->setText(m_document->issues().empty()
                         ? tr("No issues.")
                         : tr("%1 error(s), %2 warning(s). Double-click a row with a node to "
                              "jump to it.")
                               .arg(errors)
                               .arg(warnings));
  if (m_tree->topLevelItemCount())
    m_tree->scrollToItem(m_tree->topLevelItem(m_tree->topLevelItemCount() - 1));
}

int IssuesDock::rowCount() const {
  return m_tree->topLevelItemCount();
}

QString IssuesDock::rowText(int row) const {
  QTreeWidgetItem* item = m_tree->topLevelItem(row);
  if (!item) return {};
  return item->text(0) + "  " + item->text(1) + "  " + item->text(2) + "  " + item->text(3);
}

void IssuesDock::activateRow(int row) {
  if (row < 0 || row >= static_cast<int>(m_document->issues().size())) return;
  const QString node = m_document->issues()[row].nodeName;
  if (node.isEmpty()) return;
  m_document->selectNodes({node});
  emit jumpToNode(node);
}

}  // namespace kiln::studio
