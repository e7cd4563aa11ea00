// MemoryTimelineChart: a Kiln plan's activation memory over its execution
// (inspector/memory_timeline.h) as a bar per layer in execution order, the peak bar
// highlighted, with the tensors alive at the peak listed beside the chart. Clicking a
// bar selects that layer in the document. A trtexec export records no memory plan, so
// the chart shows only a Kiln plan's timeline.
#pragma once

#include <QWidget>
#include <cstdint>
#include <memory>

#include "kiln/plan.h"

class QCustomPlot;
class QLabel;
class QTableWidget;

namespace kiln::studio {

class StudioDocument;

class MemoryTimelineChart : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryTimelineChart(StudioDocument* document, QWidget* parent = nullptr);

  // Draws the timeline of `plan`; null shows `placeholder` instead of a chart.
  void showPlan(const std::shared_ptr<const Plan>& plan, const QString& placeholder);

  int64_t peakBytes() const { return m_peakBytes; }  // 0 when no plan is shown
  QString peakLayer() const { return m_peakLayer; }
  QString summaryText() const;
  int barCount() const;
  QTableWidget* peakTensors() const { return m_tensors; }

 private:
  void drawBars(const std::vector<double>& values, size_t peak, double unit);
  void onBarClick(int dataIndex);

  StudioDocument* m_document;
  QLabel* m_summary;
  QCustomPlot* m_plot;
  QTableWidget* m_tensors;
  QStringList m_layers;  // the bars' layers, in execution order
  int64_t m_peakBytes = 0;
  QString m_peakLayer;
};

}  // namespace kiln::studio
