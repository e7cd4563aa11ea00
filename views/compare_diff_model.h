// CompareDiffModel: the aligned rows of two builds (compare::BuildDiff) as a table
// for the Compare view: ONNX nodes, each build's layers, precision, tactic and time,
// the time delta (B - A), the largest error of B's outputs in that row (after an
// accuracy run) and the change flags. Numbers sort numerically (Qt::UserRole), so a
// QSortFilterProxyModel over it sorts by delta or error.
#pragma once

#include <QAbstractTableModel>
#include <map>
#include <memory>
#include <string>

#include "compare/accuracy_compare.h"
#include "compare/build_diff.h"

namespace kiln::studio {

class CompareDiffModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    kNodes,
    kLayersA,
    kLayersB,
    kPrecisionA,
    kPrecisionB,
    kTacticA,
    kTacticB,
    kTimeA,
    kTimeB,
    kTimeDelta,
    kError,
    kChanges,
    kColumnCount
  };
  static constexpr int kSortRole = Qt::UserRole;

  explicit CompareDiffModel(QObject* parent = nullptr);

  // A two-build diff; `outputsB` names each of build B's layers' output tensors
  // (per layer index) so accuracy results map to rows.
  void setDiff(std::shared_ptr<const compare::BuildDiff> diff,
               std::vector<std::vector<std::string>> outputsB);
  // Per-tensor errors of B against A (nullptr clears them).
  void setAccuracy(std::shared_ptr<const compare::AccuracyReport> report);

  const compare::BuildDiff* diff() const { return m_diff.get(); }
  // The largest max-abs error among the row's compared tensors; -1 when none.
  double rowError(int row) const;
  double largestError() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  void computeRowErrors();

  std::shared_ptr<const compare::BuildDiff> m_diff;
  std::vector<std::vector<std::string>> m_outputsB;
  std::shared_ptr<const compare::AccuracyReport> m_accuracy;
  std::vector<double> m_rowErrors;
};

}  // namespace kiln::studio
