#include "layer_table_view.h"

#include <QAction>
#include <QCheckBox>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLineEdit>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>

#include "kiln/file_io.h"
#include "layer_table_model.h"
#include "studio_document.h"

namespace kiln::studio {
namespace {

constexpr int kMaxColumnWidth = 320;  // pixels
constexpr int kWidthSampleRows = 100;

}  // namespace

LayerTableView::LayerTableView(StudioDocument* document, QWidget* parent)
    : QWidget(parent),
      m_document(document),
      m_model(new LayerTableModel(this)),
      m_proxy(new LayerFilterProxy(this)),
      m_table(new QTableView(this)),
      m_filter(new QLineEdit(this)),
      m_showConstants(new QCheckBox(tr("Show constants"), this)) {
  m_proxy->setSourceModel(m_model);
  m_table->setModel(m_proxy);
  m_table->setSortingEnabled(true);
  m_table->sortByColumn(LayerTableModel::kIndex, Qt::AscendingOrder);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  m_table->horizontalHeader()->setStretchLastSection(true);
  // Column widths from the first rows only: measuring every row of a 2,000-layer
  // engine costs tens of milliseconds of text shaping on the GUI thread.
  m_table->horizontalHeader()->setResizeContentsPrecision(kWidthSampleRows);
  m_filter->setPlaceholderText(tr("Filter by name, type, precision, tactic or source node"));
  m_filter->setClearButtonEnabled(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  m_showConstants->setToolTip(
      tr("Constant, Shape and Identity layers are computed once or alias their input: they cost "
         "nothing per run"));
  auto* filterRow = new QHBoxLayout;
  filterRow->addWidget(m_filter, 1);
  filterRow->addWidget(m_showConstants);
  layout->addLayout(filterRow);
  layout->addWidget(m_table, 1);

  // Not parented to this widget: the main window places it above the view.
  m_toolBar = new QToolBar(tr("Layers"));
  QAction* exportAction = m_toolBar->addAction(tr("Export CSV…"));
  exportAction->setToolTip(tr("Write the layer table as CSV"));
  connect(exportAction, &QAction::triggered, this, &LayerTableView::exportCsvInteractive);

  connect(m_filter, &QLineEdit::textChanged, this, &LayerTableView::setFilterText);
  connect(m_showConstants, &QCheckBox::toggled, this, &LayerTableView::setShowConstants);
  connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &LayerTableView::onTableSelection);
  connect(m_document, &StudioDocument::engineChanged, this, &LayerTableView::onEngineChanged);
  connect(m_document, &StudioDocument::selectionChanged, this,
          &LayerTableView::onDocumentSelection);
  onEngineChanged();
}

LayerTableView::~LayerTableView() {
  if (m_toolBar && !m_toolBar->parent()) delete m_toolBar;
}

void LayerTableView::onEngineChanged() {
  m_syncing = true;
  m_model->setReport(m_document->report());
  m_table->resizeColumnsToContents();
  // Long fused names and source-node lists would push the numbers off screen.
  for (int column = 0; column < LayerTableModel::kColumnCount; ++column)
    m_table->setColumnWidth(column, std::min(m_table->columnWidth(column), kMaxColumnWidth));
  m_syncing = false;
  onDocumentSelection();
}

void LayerTableView::setFilterText(const QString& text) {
  if (m_filter->text() != text) m_filter->setText(text);  // re-enters through textChanged
  m_proxy->setFilterText(text);
}

void LayerTableView::setShowConstants(bool show) {
  if (m_showConstants->isChecked() != show) m_showConstants->setChecked(show);  // re-enters
  m_proxy->setShowConstants(show);
}

void LayerTableView::onDocumentSelection() {
  if (m_syncing) return;
  m_syncing = true;
  const int layer = m_document->selectedLayer();
  const QModelIndex index =
      layer >= 0 ? m_proxy->mapFromSource(m_model->index(layer, 0)) : QModelIndex();
  if (index.isValid()) {
    m_table->selectionModel()->select(
        index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_table->scrollTo(index);
  } else {
    m_table->clearSelection();
  }
  m_syncing = false;
}

void LayerTableView::onTableSelection() {
  if (m_syncing) return;
  const QModelIndexList rows = m_table->selectionModel()->selectedRows();
  if (rows.isEmpty()) return;  // a filter hid the row: keep the document's selection
  m_syncing = true;
  m_document->selectLayer(m_proxy->mapToSource(rows.front()).row());
  m_syncing = false;
}

Status LayerTableView::exportCsv(const QString& path) const {
  const auto report = m_document->report();
  if (!report) return notFound("no engine is open: nothing to export to " + path.toStdString());
  return writeFileAtomically(path.toStdString(), inspector::reportCsv(*report), "the CSV");
}

void LayerTableView::exportCsvInteractive() {
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Export layer table"), QString(), tr("CSV (*.csv)"));
  if (path.isEmpty()) return;
  Status s = exportCsv(path);
  if (!s.isOk())
    m_document->addIssue(
        {IssueSeverity::kError, "export", QString::fromStdString(s.message()), {}});
}

}  // namespace kiln::studio
