// IssuesDock: the warnings and errors of import, build, profile and export, one row
// each with its source; activating a row that names a node selects that node and
// asks the window to show the model graph.
#pragma once

#include <QWidget>

class QTreeWidget;
class QLabel;

namespace kiln::studio {

class StudioDocument;

class IssuesDock : public QWidget {
  Q_OBJECT
 public:
  explicit IssuesDock(StudioDocument* document, QWidget* parent = nullptr);
  int rowCount() const;
  QString rowText(int row) const;  // "error  build  message" for tests
  void activateRow(int row);       // as a double click

 signals:
  void jumpToNode(const QString& nodeName);

 private:
  void rebuild();
  StudioDocument* m_document;
  QTreeWidget* m_tree;
  QLabel* m_summary;
};

}  // namespace kiln::studio
