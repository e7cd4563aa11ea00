// SweepModel: the Sweep view's table, one row per configuration of a sweep
// (sweep_scan.h). setRows replaces the rows and signals only the cells that changed, so a
// view following a growing log keeps its selection and scroll position.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "sweep_scan.h"

namespace kiln::studio {

class SweepModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kIndex, kKey, kState, kLatency, kMaxAbs, kCosine, kGate, kFront, kLog, kColumns };
  explicit SweepModel(QObject* parent = nullptr);

  // Replaces the rows; rows with the same key keep their place (a log only grows).
  void setRows(std::vector<SweepRow> rows);
  const std::vector<SweepRow>& rows() const { return m_rows; }
  const SweepRow* rowAt(int row) const;
  int rowOfKey(const QString& key) const;  // -1 when absent
  // The State column's words: "done", "failed (Slurm TIMEOUT)", "queued (PENDING)", ...
  static QString stateText(const SweepRow& row);
  // The Gate column's words: "pass", "fail", or "" before the row is judged.
  static QString gateText(const SweepRow& row);

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  QVariant display(const SweepRow& row, int column) const;
  QString toolTip(const SweepRow& row, int column) const;
  std::vector<SweepRow> m_rows;
};

}  // namespace kiln::studio
