// ChartsView: the "Charts" view. One of four charts of the engine report, chosen in
// a combo: (a) per-layer latency of the top N layers, (b) time by layer type, (c)
// time and layer count per precision, (d) output and workspace bytes per layer.
// Clicking a bar of (a) or (d) selects that layer in the document. Charts are
// recomputed when the engine changes, merged through a single-shot timer; they
// export as PNG, SVG or PDF, and render to SVG for the HTML report. Untimed
// engines show layer counts and say so in the title. The only file that sees
// QCustomPlot is charts_view.cpp.
#pragma once

#include <QByteArray>
#include <QPoint>
#include <QPointer>
#include <QToolBar>  // complete for QPointer
#include <QSize>
#include <QWidget>
#include <memory>

#include "chart_series.h"
#include "kiln/status.h"
#include "view.h"

class QCheckBox;
class QComboBox;
class QCPAbstractPlottable;
class QCustomPlot;
class QMouseEvent;
class QSpinBox;
class QTimer;

namespace kiln::studio {

class StudioDocument;

class ChartsView : public QWidget, public View {
  Q_OBJECT
 public:
  explicit ChartsView(StudioDocument* document, QWidget* parent = nullptr);
  ~ChartsView() override;

  QString id() const override { return QStringLiteral("charts"); }
  QString title() const override { return tr("Charts"); }
  QWidget* widget() override { return this; }
  QToolBar* toolBar() override { return m_toolBar; }

  // `chart` is a ChartKind value (0..kChartCount-1).
  void setChart(int chart);
  int chart() const;
  void setTopN(int n);
  // Constant layers cost nothing per run; the charts leave them out unless shown.
  void setShowConstants(bool show);
  bool showConstants() const;
  // The series on screen (after any pending recompute).
  const ChartSeries& series();

  // Writes the chart on screen; the format follows the suffix (.png, .svg, .pdf).
  // Errors name the file.
  Status exportChart(const QString& path);
  // Chart `chart` of the current report as an SVG document of `size` pixels; empty
  // when no engine is open.
  QByteArray chartSvg(int chart, QSize size);

  // Bars of the first series on screen, for tests and tooltips: the widget plotting
  // them, a bar's centre in its coordinates, and the layer a bar stands for (-1).
  QWidget* plotWidget() const;
  int barCount();
  QPoint barCenter(int bar);
  int layerOfBar(int bar);
  // What a click on bar `bar` does: selects its layer when it stands for one.
  void activateBar(int bar);
  // The bar drawn highlighted: the one standing for the document's selected layer
  // (clicked here or selected anywhere else), -1 when none is.
  int highlightedBar();

 private:
  void scheduleRecompute();
  void recompute();
  void onPlottableClick(QCPAbstractPlottable* plottable, int dataIndex, QMouseEvent* event);
  void highlightSelection();
  void exportInteractive();
  QSize exportSize() const;

  StudioDocument* m_document;
  QCustomPlot* m_plot;
  QComboBox* m_chooser;
  QSpinBox* m_topN;
  QCheckBox* m_showConstants;
  QTimer* m_recompute;
  QPointer<QToolBar> m_toolBar;
  ChartSeries m_series;
};

}  // namespace kiln::studio
