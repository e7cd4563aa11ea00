#include "constraints_table.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSet>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

namespace kiln::studio {
namespace {

const QString kAny = QStringLiteral("(any)");
const DataType kRuleTypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                               DataType::kInt8, DataType::kFp8E4M3};

QString spelling(const std::optional<DataType>& type) {
  return type ? QString::fromStdString(precisionSpelling(*type)) : kAny;
}

bool needsQuantization(DataType type) {
  return type == DataType::kInt8 || type == DataType::kFp8E4M3;
}

// A combo of precisionChoices() in which the quantized types are listed but not
// selectable: they need calibration, which builds do not have yet.
QComboBox* precisionCombo(QWidget* parent) {
  auto* combo = new QComboBox(parent);
  combo->addItems(precisionChoices());
  auto* items = qobject_cast<QStandardItemModel*>(combo->model());
  for (int i = 0; i < combo->count(); ++i) {
    std::optional<DataType> type;
    if (!parsePrecisionChoice(combo->itemText(i), &type) || !type || !needsQuantization(*type))
      continue;
    items->item(i)->setEnabled(false);
    items->item(i)->setToolTip(
        QObject::tr("needs INT8/FP8 quantization (calibration), which "
                    "builds do not have yet"));
  }
  return combo;
}

// Edits the precision and output-type cells with a combo.
class PrecisionDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem&,
                        const QModelIndex&) const override {
    return precisionCombo(parent);
  }
  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    auto* combo = static_cast<QComboBox*>(editor);
    combo->setCurrentText(index.data(Qt::DisplayRole).toString());
  }
  void setModelData(QWidget* editor, QAbstractItemModel* model,
                    const QModelIndex& index) const override {
    model->setData(index, static_cast<QComboBox*>(editor)->currentText(), Qt::EditRole);
  }
};

}  // namespace

QStringList precisionChoices() {
  QStringList out{kAny};
  for (DataType type : kRuleTypes) out << QString::fromStdString(precisionSpelling(type));
  return out;
}

bool parsePrecisionChoice(const QString& text, std::optional<DataType>* out) {
  if (text == kAny || text.isEmpty()) {
    out->reset();
    return true;
  }
  for (DataType type : kRuleTypes) {
    if (text == QString::fromStdString(precisionSpelling(type))) {
      *out = type;
      return true;
    }
  }
  return false;
}

ConstraintsModel::ConstraintsModel(QObject* parent) : QAbstractTableModel(parent) {}

bool isRunInvariantNode(const Network& network, const Node& node) {
  if (!node.domain.empty()) return false;
  if (node.opType == "Constant" || node.opType == "Identity") return true;
  if (node.opType != "Shape" || node.inputs.empty()) return false;
  const ValueInfo* info = network.graph.findValueInfo(node.inputs[0]);
  for (const ValueInfo& input : network.graph.inputs)
    if (input.name == node.inputs[0]) info = &input;
  if (!info || !info->hasShape) return network.graph.initializers.count(node.inputs[0]) != 0;
  return std::all_of(info->shape.begin(), info->shape.end(),
                     [](const DimExpr& d) { return d.isConst(); });
}

void ConstraintsModel::setShowConstants(bool show) {
  if (show == m_showConstants) return;
  const std::vector<LayerPrecisionRule> precisions = precisionRules();
  const std::vector<LayerPrecisionRule> outputTypes = outputTypeRules();
  m_showConstants = show;
  setNetwork(m_network);
  setRules(precisions, outputTypes);
}

void ConstraintsModel::setNetwork(const Network* network) {
  beginResetModel();
  m_network = network;
  m_rows.clear();
  m_rowOfName.clear();
  m_otherPrecisions.clear();
  m_otherOutputTypes.clear();
  if (network) {
    m_rows.push_back({kEveryLayer, tr("(every layer)"), {}, {}});
    // Constants, Identity and Shape of fixed dims run once or fold away: a rule on
    // them acts on nothing, so they are listed only when asked for.
    for (const Node& node : network->graph.nodes) {
      if (!m_showConstants && isRunInvariantNode(*network, node)) continue;
      m_rows.push_back({QString::fromStdString(node.displayName()),
                        QString::fromStdString(node.opType),
                        {},
                        {}});
    }
    for (size_t i = 0; i < m_rows.size(); ++i)
      m_rowOfName.insert(m_rows[i].name, static_cast<int>(i));
  }
  endResetModel();
}

void ConstraintsModel::setRules(const std::vector<LayerPrecisionRule>& precisions,
                                const std::vector<LayerPrecisionRule>& outputTypes) {
  beginResetModel();
  for (Row& row : m_rows) row.precision = row.outputType = std::nullopt;
  m_otherPrecisions.clear();
  m_otherOutputTypes.clear();
  // Later rules win, as in the spec syntax: apply them in order.
  for (const LayerPrecisionRule& rule : precisions) {
    const int row = rowOf(QString::fromStdString(rule.pattern));
    if (row < 0)
      m_otherPrecisions.push_back(rule);
    else
      m_rows[row].precision = rule.precision;
  }
  for (const LayerPrecisionRule& rule : outputTypes) {
    const int row = rowOf(QString::fromStdString(rule.pattern));
    if (row < 0)
      m_otherOutputTypes.push_back(rule);
    else
      m_rows[row].outputType = rule.precision;
  }
  endResetModel();
}

std::vector<LayerPrecisionRule> ConstraintsModel::rules(Column column) const {
  std::vector<LayerPrecisionRule> out;
  for (const Row& row : m_rows) {
    const std::optional<DataType>& type = column == kPrecision ? row.precision : row.outputType;
    if (type) out.push_back({row.name.toStdString(), *type});
  }
  const auto& other = column == kPrecision ? m_otherPrecisions : m_otherOutputTypes;
  out.insert(out.end(), other.begin(), other.end());
  return out;
}

bool ConstraintsModel::setRule(int row, Column column, std::optional<DataType> type) {
  if (row < 0 || row >= static_cast<int>(m_rows.size())) return false;
  if (column != kPrecision && column != kOutputType) return false;
  (column == kPrecision ? m_rows[row].precision : m_rows[row].outputType) = type;
  emit dataChanged(index(row, column), index(row, column));
  emit rulesEdited();
  return true;
}

int ConstraintsModel::rowOf(const QString& name) const {
  return m_rowOfName.value(name, -1);
}

QString ConstraintsModel::opTypeOf(int row) const {
  return row > 0 && row < static_cast<int>(m_rows.size()) ? m_rows[row].opType : QString();
}

QStringList ConstraintsModel::opTypes() const {
  QSet<QString> seen;
  for (size_t i = 1; i < m_rows.size(); ++i) seen.insert(m_rows[i].opType);
  QStringList out(seen.begin(), seen.end());
  out.sort();
  return out;
}

int ConstraintsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int ConstraintsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant ConstraintsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(m_rows.size())) return {};
  const Row& row = m_rows[index.row()];
  if (role == Qt::DisplayRole || role == Qt::EditRole) {
    switch (index.column()) {
      case kName:
        return row.name;
      case kOpType:
        return row.opType;
      case kPrecision:
        return spelling(row.precision);
      case kOutputType:
        return spelling(row.outputType);
    }
  }
  if (role == Qt::ToolTipRole && index.row() == 0)
    return tr("A rule for every layer; a rule naming a layer wins over it.");
  if (role == Qt::ToolTipRole && index.column() == kName) return row.name;  // elided in the cell
  if (role == Qt::FontRole && (row.precision || row.outputType)) {
    QFont font;
    font.setBold(true);
    return font;
  }
  return {};
}

QVariant ConstraintsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kName:
      return tr("Node");
    case kOpType:
      return tr("Op type");
    case kPrecision:
      return tr("Precision");
    case kOutputType:
      return tr("Output type");
  }
  return {};
}

Qt::ItemFlags ConstraintsModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (index.column() == kPrecision || index.column() == kOutputType) f |= Qt::ItemIsEditable;
  return f;
}

bool ConstraintsModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || !index.isValid()) return false;
  std::optional<DataType> type;
  if (!parsePrecisionChoice(value.toString(), &type)) return false;
  return setRule(index.row(), static_cast<Column>(index.column()), type);
}

ConstraintsTable::ConstraintsTable(QWidget* parent)
    : QWidget(parent),
      m_model(new ConstraintsModel(this)),
      m_proxy(new QSortFilterProxyModel(this)),
      m_table(new QTableView(this)),
      m_filter(new QLineEdit(this)),
      m_bulkColumn(new QComboBox(this)),
      m_bulkPrecision(precisionCombo(this)),
      m_opType(new QComboBox(this)),
      m_showConstants(new QCheckBox(tr("Show constants"), this)) {
  m_proxy->setSourceModel(m_model);
  m_proxy->setFilterKeyColumn(-1);
  m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
  m_table->setModel(m_proxy);
  m_table->setItemDelegateForColumn(ConstraintsModel::kPrecision, new PrecisionDelegate(m_table));
  m_table->setItemDelegateForColumn(ConstraintsModel::kOutputType, new PrecisionDelegate(m_table));
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
  m_table->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::SelectedClicked |
                           QAbstractItemView::EditKeyPressed);
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
  m_table->horizontalHeader()->setSectionResizeMode(ConstraintsModel::kName, QHeaderView::Stretch);
  // Scoped names (/encoder/layer.6/attention/...) differ at their end: keep both ends.
  m_table->setTextElideMode(Qt::ElideMiddle);
  m_filter->setPlaceholderText(tr("Filter nodes by name or op type"));
  m_filter->setClearButtonEnabled(true);
  m_showConstants->setObjectName("ruleShowConstants");
  m_showConstants->setToolTip(
      tr("List Constant, Identity and fixed-shape Shape nodes too: the builder folds them "
         "or computes them once, so a rule on them acts on nothing"));
  m_bulkColumn->addItems({tr("precision"), tr("output type")});
  m_bulkColumn->setObjectName("bulkColumn");
  m_bulkPrecision->setObjectName("bulkPrecision");
  m_opType->setObjectName("bulkOpType");

  auto* toSelected = new QPushButton(tr("Set selected"), this);
  auto* toOpType = new QPushButton(tr("Set op type"), this);
  toSelected->setToolTip(tr("Give every selected row this rule"));
  toOpType->setToolTip(tr("Give every node of the chosen op type this rule"));
  auto* bulk = new QHBoxLayout;
  bulk->addWidget(m_bulkColumn);
  bulk->addWidget(m_bulkPrecision);
  bulk->addWidget(toSelected);
  bulk->addWidget(m_opType, 1);
  bulk->addWidget(toOpType);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* filterRow = new QHBoxLayout;
  filterRow->addWidget(m_filter, 1);
  filterRow->addWidget(m_showConstants);
  layout->addLayout(filterRow);
  layout->addWidget(m_table, 1);
  layout->addLayout(bulk);

  connect(m_filter, &QLineEdit::textChanged, this, &ConstraintsTable::setFilter);
  connect(m_showConstants, &QCheckBox::toggled, m_model, &ConstraintsModel::setShowConstants);
  connect(toSelected, &QPushButton::clicked, this, &ConstraintsTable::applyToSelected);
  connect(toOpType, &QPushButton::clicked, this, &ConstraintsTable::applyToOpType);
  connect(m_model, &ConstraintsModel::rulesEdited, this, &ConstraintsTable::rulesEdited);
  connect(m_model, &QAbstractItemModel::modelReset, this, &ConstraintsTable::refreshOpTypes);
}

void ConstraintsTable::refreshOpTypes() {
  const QString current = m_opType->currentText();
  m_opType->clear();
  m_opType->addItems(m_model->opTypes());
  if (!current.isEmpty()) m_opType->setCurrentText(current);
}

ConstraintsModel::Column ConstraintsTable::bulkColumn() const {
  return m_bulkColumn->currentIndex() == 1 ? ConstraintsModel::kOutputType
                                           : ConstraintsModel::kPrecision;
}

std::optional<DataType> ConstraintsTable::bulkPrecision() const {
  std::optional<DataType> type;
  parsePrecisionChoice(m_bulkPrecision->currentText(), &type);
  return type;
}

void ConstraintsTable::applyToSelected() {
  // Blocked per row so the panel rebuilds its config once, not once per row.
  const QModelIndexList rows = m_table->selectionModel()->selectedRows();
  if (rows.isEmpty()) return;
  {
    QSignalBlocker block(m_model);
    for (const QModelIndex& index : rows)
      m_model->setRule(m_proxy->mapToSource(index).row(), bulkColumn(), bulkPrecision());
  }
  emit m_model->dataChanged(
      m_model->index(0, 0),
      m_model->index(m_model->rowCount() - 1, ConstraintsModel::kColumnCount - 1));
  emit rulesEdited();
}

void ConstraintsTable::applyToOpType() {
  const QString opType = m_opType->currentText();
  if (opType.isEmpty()) return;
  {
    QSignalBlocker block(m_model);
    for (int row = 1; row < m_model->rowCount(); ++row)
      if (m_model->opTypeOf(row) == opType) m_model->setRule(row, bulkColumn(), bulkPrecision());
  }
  emit m_model->dataChanged(
      m_model->index(0, 0),
      m_model->index(m_model->rowCount() - 1, ConstraintsModel::kColumnCount - 1));
  emit rulesEdited();
}

void ConstraintsTable::setFilter(const QString& text) {
  if (m_filter->text() != text) m_filter->setText(text);  // re-enters through textChanged
  m_proxy->setFilterFixedString(text);
}

int ConstraintsTable::visibleRows() const {
  return m_proxy->rowCount();
}

}  // namespace kiln::studio
