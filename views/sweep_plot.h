// SweepPlot: the Sweep view's latency-vs-error scatter (QCustomPlot). Accepted
// configurations are blue dots, rejected ones grey crosses, the Pareto front orange and
// joined by a step line; failed configurations have no latency and are not drawn. The
// error axis is the gate's first metric (1 - cosine for a cosine gate), logarithmic when the
// errors span more than 100x (0 then drawn at a tenth of the smallest). Clicking a point
// reports its configuration's key; setSelectedKey rings the selected one.
#pragma once

#include <QHash>
#include <QPointF>
#include <QString>
#include <QWidget>
#include <vector>

#include "sweep_scan.h"

class QCustomPlot;
class QCPGraph;

namespace kiln::studio {

class SweepPlot : public QWidget {
  Q_OBJECT
 public:
  explicit SweepPlot(QWidget* parent = nullptr);

  // Redraws from `rows`; `errorLabel` names the error axis.
  void setRows(const std::vector<SweepRow>& rows, const QString& errorLabel);
  void setSelectedKey(const QString& key);
  // What is drawn, for tests: the keys of each series' points, in drawing order.
  QStringList acceptedKeys() const { return m_keys[kAccepted]; }
  QStringList rejectedKeys() const { return m_keys[kRejected]; }
  QStringList frontKeys() const { return m_keys[kFront]; }
  // A point's position in data coordinates (latency ms, error); false when not drawn.
  bool pointOf(const QString& key, double* latency, double* error) const;
  // The widget position of a drawn point (for clicks in tests); (-1,-1) when not drawn.
  QPoint pixelOf(const QString& key) const;
  QCustomPlot* plot() const { return m_plot; }

 signals:
  void pointClicked(const QString& key);

 protected:
  // The legend's three entries in one row when they fit the plot's width, else wrapped
  // (two per row, or one), so no label is cut on a narrow plot beside the table.
  void resizeEvent(QResizeEvent* event) override;

 private:
  enum Series { kAccepted, kRejected, kFront, kSeriesCount };
  void onClick(QMouseEvent* event);
  void chooseScale(const std::vector<SweepRow>& rows);
  double drawnError(double error) const;  // where an error is drawn (0 at m_zeroAt on a log axis)

  QCustomPlot* m_plot;
  QCPGraph* m_graphs[kSeriesCount];
  QCPGraph* m_frontLine;
  QCPGraph* m_selected;
  QStringList m_keys[kSeriesCount];
  double m_zeroAt = 0;               // > 0: the error axis is logarithmic and 0 is drawn there
  QHash<QString, QPointF> m_points;  // drawn points by key, in data coordinates
};

}  // namespace kiln::studio
