// LayerTableView: the "Layers" view, the engine's layers as a sortable, filterable
// table (#, name, type, precision, tactic, source, time, %, workspace, output bytes,
// source nodes). Selecting a row selects that layer in the document (and so its
// ONNX nodes in the graph); a layer selected elsewhere is selected here. Exports the
// table as CSV (the inspector's reportCsv, so the CLI writes the same file).
#pragma once

#include <QPointer>
#include <QToolBar>  // complete for QPointer
#include <QWidget>

#include "kiln/status.h"
#include "view.h"

class QCheckBox;
class QLineEdit;
class QTableView;

namespace kiln::studio {

class LayerFilterProxy;
class LayerTableModel;
class StudioDocument;

class LayerTableView : public QWidget, public View {
  Q_OBJECT
 public:
  explicit LayerTableView(StudioDocument* document, QWidget* parent = nullptr);
  ~LayerTableView() override;

  QString id() const override { return QStringLiteral("layers"); }
  QString title() const override { return tr("Layers"); }
  QWidget* widget() override { return this; }
  QToolBar* toolBar() override { return m_toolBar; }

  // Writes the report's layer table as CSV; an error naming the file when it cannot
  // be written or no engine is open.
  Status exportCsv(const QString& path) const;
  void setFilterText(const QString& text);
  // The "Show constants" toggle: Constant layers are hidden by default.
  void setShowConstants(bool show);
  QCheckBox* showConstantsBox() const { return m_showConstants; }
  // For tests and the main window: the table and its models.
  QTableView* table() const { return m_table; }
  LayerTableModel* model() const { return m_model; }
  LayerFilterProxy* proxy() const { return m_proxy; }

 private:
  void onEngineChanged();
  void onDocumentSelection();
  void onTableSelection();
  void exportCsvInteractive();

  StudioDocument* m_document;
  LayerTableModel* m_model;
  LayerFilterProxy* m_proxy;
  QTableView* m_table;
  QLineEdit* m_filter;
  QCheckBox* m_showConstants;
  QPointer<QToolBar> m_toolBar;
  bool m_syncing = false;
};

}  // namespace kiln::studio
