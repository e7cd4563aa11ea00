// RooflineChart: the studio's Roofline tab (issue 25 item 2). Each timed layer of the
// open engine is a point at its arithmetic intensity (FLOP/B) and achieved GFLOP/s, on
// log-log axes, coloured by precision; the device's roofs are lines: the bandwidth slope
// (intensity x peak DRAM bytes/s) up to each precision's compute peak. The numbers come
// from the inspector (roofline.h: layerRooflines, peaksForDevice). The Roofs box picks the
// peaks: the engine's device when the table knows it, else one chosen by the user (a
// trtexec export names no device), or none. Layers that cannot be drawn (untimed, no
// FLOPs, unknown count) are counted in the summary line. Clicking a point selects its
// layer in the document; a layer selected elsewhere is ringed.
#pragma once

#include <QHash>
#include <QPointF>
#include <QWidget>
#include <optional>
#include <vector>

#include "roofline.h"
#include "view.h"

class QComboBox;
class QCPGraph;
class QCustomPlot;
class QLabel;

namespace kiln::studio {

class StudioDocument;

class RooflineChart : public QWidget, public View {
  Q_OBJECT
 public:
  explicit RooflineChart(StudioDocument* document, QWidget* parent = nullptr);

  QString id() const override { return "roofline"; }
  QString title() const override { return tr("Roofline"); }
  QWidget* widget() override { return this; }
  QToolBar* toolBar() override { return m_toolBar; }

  // Uses the peaks of the known device named `name` ("H100 SXM"), "" for the engine's own
  // device (when known); false when no such device is in the table.
  bool setPeaksDevice(const QString& name);
  // The peaks drawn, if any.
  const std::optional<inspector::DevicePeaks>& peaks() const { return m_peaks; }
  // A drawn layer's point: intensity (FLOP/B) and achieved GFLOP/s; false when not drawn.
  bool pointOf(int layer, double* intensity, double* gflops) const;
  QPoint pixelOf(int layer) const;  // its widget position; (-1,-1) when not drawn
  QList<int> plottedLayers() const { return m_points.keys(); }
  // The roof lines drawn: per line, its compute peak in GFLOP/s (the bandwidth slope is
  // the same for all).
  std::vector<double> roofPeaksGflops() const { return m_roofPeaks; }
  QString summaryText() const;
  QCustomPlot* plot() const { return m_plot; }

 private:
  void rebuild();
  void drawRoofs(double xMin, double xMax);
  void showSelection();
  void onClick(QMouseEvent* event);

  StudioDocument* m_document;
  QToolBar* m_toolBar;
  QComboBox* m_device;
  QLabel* m_summary;
  QCustomPlot* m_plot;
  QCPGraph* m_selected = nullptr;  // the ring round the selected layer
  std::optional<inspector::DevicePeaks> m_peaks;
  QHash<int, QPointF> m_points;  // layer index -> (intensity, GFLOP/s)
  std::vector<double> m_roofPeaks;
};

}  // namespace kiln::studio
