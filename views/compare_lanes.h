// CompareLanes: two engines side by side, aligned: one band per aligned row of a
// BuildDiff (the layers that implement the same ONNX nodes), build A's layers on
// the left and B's on the right, a connector where both have layers. Boxes are
// coloured by the time delta of their row (B slower red, faster green), by their
// precision, or by the row's error (white to red, log scale); the selected row is
// outlined. Clicking a band emits rowClicked. Drawn with QPainter.
#pragma once

#include <QWidget>
#include <memory>

#include "compare/build_diff.h"
#include "engine_report.h"

namespace kiln::studio {

class CompareDiffModel;

enum class CompareColouring { kTimeDelta, kPrecision, kError };

class CompareLanes : public QWidget {
  Q_OBJECT
 public:
  explicit CompareLanes(QWidget* parent = nullptr);

  // `model` (for the diff and the row errors) must outlive this widget; the reports
  // are those of builds A and B.
  void setData(const CompareDiffModel* model, std::shared_ptr<const inspector::EngineReport> a,
               std::shared_ptr<const inspector::EngineReport> b);
  void setColouring(CompareColouring colouring);
  CompareColouring colouring() const { return m_colouring; }
  void setSelectedRow(int row);
  int selectedRow() const { return m_selected; }

  // Geometry and colours, for tests and the view.
  QRect rowRect(int row) const;
  int rowAt(const QPoint& point) const;
  // The fill of layer box `box` (0-based within the row) of build `build` (0: A, 1: B).
  QColor boxColour(int row, int build, int box) const;
  QSize sizeHint() const override;

 signals:
  void rowClicked(int row);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  void relayout();
  const inspector::EngineReport* report(int build) const;

  const CompareDiffModel* m_model = nullptr;
  std::shared_ptr<const inspector::EngineReport> m_a, m_b;
  CompareColouring m_colouring = CompareColouring::kTimeDelta;
  std::vector<int> m_rowTop;  // y of each band, plus the end
  double m_maxDelta = 0;
  int m_selected = -1;
};

}  // namespace kiln::studio
