// ErrorPlots: per-output error plots of an accuracy comparison, drawn with QPainter:
// a histogram of the absolute error by decade (log-scale bins, exact matches and
// errors below 1e-10 first) and a heatmap of where the largest errors are (the
// output as rows x its last dim, pooled to at most 64 x 64 cells; green up to the
// comparison's tolerance, then orange to red on a log scale, NaN/Inf cells black, with
// the scale in words below). A combo box picks the output.
#pragma once

#include <QWidget>
#include <memory>

#include "compare/accuracy_compare.h"

class QComboBox;
class QLabel;

namespace kiln::studio {

class ErrorPlotCanvas;

class ErrorPlots : public QWidget {
  Q_OBJECT
 public:
  explicit ErrorPlots(QWidget* parent = nullptr);
  void setReport(std::shared_ptr<const compare::AccuracyReport> report);
  // The output shown (index into the report's outputs; -1 when none).
  int currentOutput() const;
  void setCurrentOutput(int index);
  // What the plots show, for tests: the histogram's bars (below-first first) and the
  // heatmap image (one pixel per cell).
  std::vector<int64_t> histogramBars() const;
  QImage heatmapImage() const;
  QString summary() const;
  // The heatmap's colour scale in words (its "ok" limit from the tolerance).
  QString heatmapScale() const;

 private:
  void showOutput();

  std::shared_ptr<const compare::AccuracyReport> m_report;
  QComboBox* m_outputs;
  QLabel* m_summary;
  QLabel* m_scale;
  ErrorPlotCanvas* m_canvas;
};

}  // namespace kiln::studio
