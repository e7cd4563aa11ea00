// ConstraintsTable: the per-layer precision rules of a build, one row per ONNX node
// of the open model (plus a "*" row for every layer): name, op type, compute
// precision and output type, "(any)" meaning no rule. Rows can be filtered, edited
// one by one (a combo in the cell), in bulk (the selected rows) or by op type. The
// table produces the LayerPrecisionRule lists of a BuilderConfig and reads them back.
#pragma once

#include <QAbstractTableModel>
#include <QHash>
#include <QWidget>
#include <optional>
#include <vector>

#include "kiln/builder_config.h"
#include "kiln/graph.h"

class QCheckBox;
class QComboBox;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace kiln::studio {

// The rows of the table; a model without a view so tests and the panel share it.
class ConstraintsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kName, kOpType, kPrecision, kOutputType, kColumnCount };
  // The row of the rule that applies to every layer.
  static constexpr const char* kEveryLayer = "*";

  explicit ConstraintsModel(QObject* parent = nullptr);

  // One row per node of `network` (in graph order) after the "*" row; no rules. Nodes
  // that cost nothing per run (isRunInvariantNode) are left out unless shown.
  void setNetwork(const Network* network);
  // Lists the run-invariant nodes too (or again not); the rules are kept.
  void setShowConstants(bool show);
  bool showConstants() const { return m_showConstants; }
  // Rules for the rows by pattern; patterns naming no row are kept and returned as
  // they were (a config written for another version of the model stays intact).
  void setRules(const std::vector<LayerPrecisionRule>& precisions,
                const std::vector<LayerPrecisionRule>& outputTypes);
  std::vector<LayerPrecisionRule> precisionRules() const { return rules(kPrecision); }
  std::vector<LayerPrecisionRule> outputTypeRules() const { return rules(kOutputType); }

  // Sets (or with nullopt clears) the rule of `column` for `row`; false when the
  // row or column does not exist. Emits rulesEdited() once per call.
  bool setRule(int row, Column column, std::optional<DataType> type);
  int rowOf(const QString& name) const;  // -1 when no such node
  QString opTypeOf(int row) const;
  QStringList opTypes() const;  // distinct op types, sorted

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role) override;

 signals:
  void rulesEdited();

 private:
  struct Row {
    QString name, opType;
    std::optional<DataType> precision, outputType;
  };
  std::vector<LayerPrecisionRule> rules(Column column) const;
  std::vector<Row> m_rows;
  QHash<QString, int> m_rowOfName;  // large models: no linear search per rule
  std::vector<LayerPrecisionRule> m_otherPrecisions, m_otherOutputTypes;
  const Network* m_network = nullptr;
  bool m_showConstants = false;
};

// True for a node the builder folds or computes once, so a precision rule on it has
// nothing to act on: Constant, Identity, and Shape of an input whose dims are all fixed.
bool isRunInvariantNode(const Network& network, const Node& node);

// The spellings the combos offer: "(any)", then fp32, fp16, bf16, int8, fp8.
QStringList precisionChoices();
// "(any)" -> nullopt; "fp16" -> kFloat16; false for text that is neither.
bool parsePrecisionChoice(const QString& text, std::optional<DataType>* out);

class ConstraintsTable : public QWidget {
  Q_OBJECT
 public:
  explicit ConstraintsTable(QWidget* parent = nullptr);

  ConstraintsModel* model() { return m_model; }
  // Sets the chosen precision (bulk combo) on every selected row / every row whose
  // op type is the chosen one, in the chosen column.
  void applyToSelected();
  void applyToOpType();
  void setFilter(const QString& text);
  int visibleRows() const;
  // The "Show constants" toggle over ConstraintsModel::setShowConstants.
  QCheckBox* showConstantsBox() const { return m_showConstants; }

 signals:
  void rulesEdited();

 private:
  void refreshOpTypes();
  ConstraintsModel::Column bulkColumn() const;
  std::optional<DataType> bulkPrecision() const;

  ConstraintsModel* m_model;
  QSortFilterProxyModel* m_proxy;
  QTableView* m_table;
  QLineEdit* m_filter;
  QComboBox* m_bulkColumn;
  QComboBox* m_bulkPrecision;
  QComboBox* m_opType;
  QCheckBox* m_showConstants;
};

}  // namespace kiln::studio
