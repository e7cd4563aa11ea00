#include "compare_diff_model.h"

#include <QBrush>
#include <QColor>
#include <QStringList>
#include <algorithm>

namespace kiln::studio {
namespace {

QString joined(const std::vector<std::string>& items, const QString& separator) {
  QStringList list;
  for (const std::string& s : items) list << QString::fromStdString(s);
  return list.join(separator);
}

QString changeFlags(const compare::DiffRow& row) {
  QStringList out;
  if (row.precisionChanged) out << QStringLiteral("precision");
  if (row.tacticChanged) out << QStringLiteral("tactic");
  if (row.fusionChanged) out << QStringLiteral("fusion");
  if (row.missing) out << QStringLiteral("missing");
  return out.join(QStringLiteral(", "));
}

QString ms(double value) {
  return value < 0 ? QStringLiteral("—") : QString::number(value, 'f', 5);
}

}  // namespace

CompareDiffModel::CompareDiffModel(QObject* parent) : QAbstractTableModel(parent) {}

void CompareDiffModel::setDiff(std::shared_ptr<const compare::BuildDiff> diff,
                               std::vector<std::vector<std::string>> outputsB) {
  beginResetModel();
  m_diff = std::move(diff);
  m_outputsB = std::move(outputsB);
  m_accuracy.reset();
  computeRowErrors();
  endResetModel();
}

void CompareDiffModel::setAccuracy(std::shared_ptr<const compare::AccuracyReport> report) {
  beginResetModel();
  m_accuracy = std::move(report);
  computeRowErrors();
  endResetModel();
}

void CompareDiffModel::computeRowErrors() {
  m_rowErrors.assign(m_diff ? m_diff->rows.size() : 0, -1.0);
  if (!m_diff || !m_accuracy) return;
  std::map<std::string, double> errors;
  for (const compare::ComparedTensor& t : m_accuracy->intermediates)
    errors[t.stats.name] = t.stats.maxAbs;
  for (const compare::ErrorStats& s : m_accuracy->outputs) errors[s.name] = s.maxAbs;
  for (size_t r = 0; r < m_diff->rows.size(); ++r) {
    const compare::DiffRow& row = m_diff->rows[r];
    if (row.cells.size() < 2) continue;
    for (int layer : row.cells[1].layers) {
      if (layer < 0 || layer >= static_cast<int>(m_outputsB.size())) continue;
      for (const std::string& tensor : m_outputsB[layer]) {
        auto it = errors.find(tensor);
        if (it != errors.end()) m_rowErrors[r] = std::max(m_rowErrors[r], it->second);
      }
    }
  }
}

double CompareDiffModel::rowError(int row) const {
  return row >= 0 && row < static_cast<int>(m_rowErrors.size()) ? m_rowErrors[row] : -1.0;
}

double CompareDiffModel::largestError() const {
  double largest = -1;
  for (double e : m_rowErrors) largest = std::max(largest, e);
  return largest;
}

int CompareDiffModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !m_diff ? 0 : static_cast<int>(m_diff->rows.size());
}

int CompareDiffModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant CompareDiffModel::data(const QModelIndex& index, int role) const {
  if (!m_diff || !index.isValid() || index.row() >= rowCount()) return {};
  const compare::DiffRow& row = m_diff->rows[index.row()];
  const compare::DiffCell* a = row.cells.empty() ? nullptr : &row.cells[0];
  const compare::DiffCell* b = row.cells.size() < 2 ? nullptr : &row.cells[1];
  const double delta = row.timeDeltas.size() > 1 ? row.timeDeltas[1] : 0.0;
  const double error = rowError(index.row());
  if (role == kSortRole) {
    switch (index.column()) {
      case kTimeA:
        return a ? a->milliseconds : -1.0;
      case kTimeB:
        return b ? b->milliseconds : -1.0;
      case kTimeDelta:
        return delta;
      case kError:
        return error;
      default:
        return data(index, Qt::DisplayRole);
    }
  }
  if (role == Qt::ForegroundRole && index.column() == kTimeDelta && delta != 0)
    return QBrush(delta > 0 ? QColor(180, 30, 30) : QColor(20, 130, 40));
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  switch (index.column()) {
    case kNodes:
      return joined(row.onnxNodes, QStringLiteral(", "));
    case kLayersA:
      return a ? joined(a->names, QStringLiteral(" ; ")) : QString();
    case kLayersB:
      return b ? joined(b->names, QStringLiteral(" ; ")) : QString();
    case kPrecisionA:
      return a ? QString::fromStdString(a->precision) : QString();
    case kPrecisionB:
      return b ? QString::fromStdString(b->precision) : QString();
    case kTacticA:
      return a ? QString::fromStdString(a->tactic) : QString();
    case kTacticB:
      return b ? QString::fromStdString(b->tactic) : QString();
    case kTimeA:
      return ms(a ? a->milliseconds : -1);
    case kTimeB:
      return ms(b ? b->milliseconds : -1);
    case kTimeDelta:
      return QString::number(delta, 'f', 5);
    case kError:
      return error < 0 ? QString() : QString::number(error, 'g', 3);
    case kChanges:
      return changeFlags(row);
  }
  return {};
}

QVariant CompareDiffModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kTitles[kColumnCount] = {
      "ONNX nodes", "A layers", "B layers", "A prec", "B prec",  "A tactic",
      "B tactic",   "A ms",     "B ms",     "Δ ms",   "B error", "changes"};
  return tr(kTitles[section]);
}

}  // namespace kiln::studio
