#include "sweep_model.h"

#include <QBrush>
#include <QColor>
#include <QFileInfo>
#include <QFont>

namespace kiln::studio {
namespace {

QString numberText(double value, int precision, char format = 'f') {
  return value < 0 ? QString() : QString::number(value, format, precision);
}

QColor stateColor(const SweepRow& row) {
  switch (row.state) {
    case SweepState::kQueued:
      return QColor(120, 120, 120);
    case SweepState::kRunning:
      return QColor(33, 102, 172);
    case SweepState::kCompleted:
      return QColor(0, 128, 128);
    case SweepState::kDone:
      return row.gatePassed ? QColor(26, 128, 58) : QColor(176, 96, 0);
    case SweepState::kFailed:
    case SweepState::kCancelled:
      return QColor(192, 40, 40);
  }
  return QColor();
}

}  // namespace

SweepModel::SweepModel(QObject* parent) : QAbstractTableModel(parent) {}

void SweepModel::setRows(std::vector<SweepRow> rows) {
  // A different set of keys in front (another sweep, a rewritten tasks.json): reset.
  bool sameStart = rows.size() >= m_rows.size();
  for (size_t i = 0; sameStart && i < m_rows.size(); ++i) sameStart = rows[i].key == m_rows[i].key;
  if (!sameStart) {
    beginResetModel();
    m_rows = std::move(rows);
    endResetModel();
    return;
  }
  for (size_t i = 0; i < m_rows.size(); ++i) {
    if (m_rows[i] == rows[i]) continue;
    m_rows[i] = rows[i];
    emit dataChanged(index(int(i), 0), index(int(i), kColumns - 1));
  }
  if (rows.size() > m_rows.size()) {
    beginInsertRows(QModelIndex(), int(m_rows.size()), int(rows.size()) - 1);
    for (size_t i = m_rows.size(); i < rows.size(); ++i) m_rows.push_back(std::move(rows[i]));
    endInsertRows();
  }
}

const SweepRow* SweepModel::rowAt(int row) const {
  return row >= 0 && row < int(m_rows.size()) ? &m_rows[size_t(row)] : nullptr;
}

int SweepModel::rowOfKey(const QString& key) const {
  for (size_t i = 0; i < m_rows.size(); ++i)
    if (m_rows[i].key == key) return int(i);
  return -1;
}

QString SweepModel::stateText(const SweepRow& row) {
  const QString state = sweepStateName(row.state);
  return row.slurmState.isEmpty() ? state : tr("%1 (Slurm %2)").arg(state, row.slurmState);
}

QString SweepModel::gateText(const SweepRow& row) {
  if (row.state != SweepState::kDone) return QString();
  return row.gatePassed ? tr("pass") : tr("fail");
}

int SweepModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(m_rows.size());
}

int SweepModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumns;
}

QVariant SweepModel::display(const SweepRow& row, int column) const {
  switch (column) {
    case kIndex:
      return row.index < 0 ? QVariant() : QVariant(row.index);
    case kKey:
      return row.key;
    case kState:
      return stateText(row);
    case kLatency:
      return numberText(row.medianMs, 4);
    case kMaxAbs:
      return numberText(row.maxAbs, 3, 'g');
    case kCosine:
      return numberText(row.cosine, 6);
    case kGate:
      return gateText(row);
    case kFront:
      return row.onFront ? QStringLiteral("\u2605") : QString();
    case kLog:
      return row.logPath.isEmpty() ? QString() : QFileInfo(row.logPath).fileName();
  }
  return QVariant();
}

QString SweepModel::toolTip(const SweepRow& row, int column) const {
  switch (column) {
    case kKey:
      return row.command.isEmpty() ? row.key : row.key + "\n" + row.command;
    case kState:
    case kGate: {
      QString tip = row.reason.isEmpty() ? stateText(row) : stateText(row) + ": " + row.reason;
      if (row.slurmPolled)
        tip += tr("\n(Slurm's state from squeue/sacct, at the sweep's last poll)");
      else if (!row.slurmJob.isEmpty() &&
               (row.state == SweepState::kQueued || row.state == SweepState::kRunning))
        tip += tr("\n(guessed from the task's output file: the sweep is not polling Slurm)");
      return tip;
    }
    case kFront:
      return row.onFront ? tr("on the Pareto front (latency vs error)") : QString();
    case kLog:
      return row.slurmJob.isEmpty() ? row.logPath
                                    : tr("Slurm task %1\n%2").arg(row.slurmJob, row.logPath);
  }
  return display(row, column).toString();
}

QVariant SweepModel::data(const QModelIndex& index, int role) const {
  const SweepRow* row = rowAt(index.row());
  if (!row) return QVariant();
  switch (role) {
    case Qt::DisplayRole:
      return display(*row, index.column());
    case Qt::ToolTipRole:
      return toolTip(*row, index.column());
    case Qt::ForegroundRole:
      if (index.column() == kState || index.column() == kGate) return QBrush(stateColor(*row));
      return QVariant();
    case Qt::FontRole:
      if (row->onFront) {
        QFont bold;
        bold.setBold(true);
        return bold;
      }
      return QVariant();
    case Qt::TextAlignmentRole:
      if (index.column() == kIndex || index.column() == kLatency || index.column() == kMaxAbs ||
          index.column() == kCosine)
        return int(Qt::AlignRight | Qt::AlignVCenter);
      if (index.column() == kFront) return int(Qt::AlignCenter);
      return QVariant();
  }
  return QVariant();
}

QVariant SweepModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QVariant();
  static const char* kTitles[kColumns] = {
      "#", "Configuration", "State", "Median ms", "Max abs", "Cosine", "Gate", "Front", "Log"};
  return tr(kTitles[section]);
}

}  // namespace kiln::studio
