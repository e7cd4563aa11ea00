#include "sweep_plot.h"

#include <QResizeEvent>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

namespace kiln::studio {
namespace {

const QColor kAcceptedColor(59, 125, 216);
const QColor kRejectedColor(150, 150, 150);
const QColor kFrontColor(230, 126, 34);

QCPGraph* scatter(QCustomPlot* plot, const QString& name, QCPScatterStyle style) {
  QCPGraph* graph = plot->addGraph();
  graph->setName(name);
  graph->setLineStyle(QCPGraph::lsNone);
  graph->setScatterStyle(style);
  return graph;
}

}  // namespace

SweepPlot::SweepPlot(QWidget* parent) : QWidget(parent), m_plot(new QCustomPlot(this)) {
  m_plot->setObjectName("sweepPlot");
  m_plot->setMinimumSize(260, 200);
  m_frontLine = m_plot->addGraph();
  m_frontLine->setName(tr("Pareto front"));
  m_frontLine->setLineStyle(QCPGraph::lsStepLeft);
  m_frontLine->setPen(QPen(kFrontColor, 1.5, Qt::DashLine));
  m_graphs[kRejected] = scatter(m_plot, tr("rejected by the gate"),
                                QCPScatterStyle(QCPScatterStyle::ssCross, kRejectedColor, 8));
  m_graphs[kAccepted] =
      scatter(m_plot, tr("accepted"),
              QCPScatterStyle(QCPScatterStyle::ssDisc, kAcceptedColor, kAcceptedColor, 8));
  m_graphs[kFront] =
      scatter(m_plot, tr("on the front"),
              QCPScatterStyle(QCPScatterStyle::ssDisc, kFrontColor, kFrontColor, 11));
  m_selected =
      scatter(m_plot, tr("selected"),
              QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(Qt::black, 2), Qt::NoBrush, 17));
  m_selected->removeFromLegend();
  m_frontLine->removeFromLegend();
  m_plot->xAxis->setLabel(tr("median latency (ms)"));
  // The legend in a row under the axes: inside them it hid points (a sweep's points go
  // anywhere).
  m_plot->legend->setVisible(true);
  m_plot->legend->setFont(font());
  m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  m_plot->legend->setBorderPen(Qt::NoPen);
  m_plot->plotLayout()->addElement(1, 0, m_plot->legend);
  m_plot->plotLayout()->setRowStretchFactor(1, 0.001);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(m_plot);
  connect(m_plot, &QCustomPlot::mousePress, this, &SweepPlot::onClick);
}

void SweepPlot::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  QCPLegend* legend = m_plot->legend;
  int widest = 0, total = 0, n = 0;
  for (int i = 0; i < legend->itemCount(); ++i) {
    const QCPAbstractLegendItem* item = legend->item(i);  // null: an empty cell of a wrap
    if (!item) continue;
    const int w = item->minimumOuterSizeHint().width();
    widest = std::max(widest, w);
    total += w;
    ++n;
  }
  // What a row needs besides the items: the legend's margins and the spacing between its
  // columns, and the plot's own outer margins.
  const int extra = legend->margins().left() + legend->margins().right() +
                    m_plot->plotLayout()->margins().left() +
                    m_plot->plotLayout()->margins().right() + 12;
  const int width = event->size().width();
  const int perRow = total + (n - 1) * legend->columnSpacing() + extra <= width ? 0
                     : 2 * widest + legend->columnSpacing() + extra <= width ? 2
                                                                             : 1;  // 0: no wrap
  if (legend->wrap() == perRow) return;
  legend->setWrap(perRow);
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

// Errors of a sweep span orders of magnitude (FP32 0, FP16 1e-6, INT8 1e-3): past 100x the
// error axis is logarithmic, with 0 drawn at a tenth of the smallest non-zero error.
void SweepPlot::chooseScale(const std::vector<SweepRow>& rows) {
  double low = 0, high = 0;
  for (const SweepRow& row : rows) {
    if (row.state != SweepState::kDone || row.medianMs < 0 || row.paretoError <= 0) continue;
    low = low == 0 ? row.paretoError : std::min(low, row.paretoError);
    high = std::max(high, row.paretoError);
  }
  m_zeroAt = low > 0 && high / low > 100 ? low / 10 : 0;
  const bool log = m_zeroAt > 0;
  m_plot->yAxis->setScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  if (log)
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  else
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  m_plot->yAxis->setNumberFormat(log ? "eb" : "gb");
  m_plot->yAxis->setNumberPrecision(log ? 0 : 6);
}

double SweepPlot::drawnError(double error) const {
  return m_zeroAt > 0 ? std::max(error, m_zeroAt) : error;
}

void SweepPlot::setRows(const std::vector<SweepRow>& rows, const QString& errorLabel) {
  m_points.clear();
  chooseScale(rows);
  QVector<double> x[kSeriesCount], y[kSeriesCount];
  for (QStringList& keys : m_keys) keys.clear();
  std::vector<std::pair<double, double>> front;
  for (const SweepRow& row : rows) {
    if (row.state != SweepState::kDone || row.medianMs < 0 || row.paretoError < 0) continue;
    const Series series = row.onFront ? kFront : row.gatePassed ? kAccepted : kRejected;
    x[series] << row.medianMs;
    y[series] << drawnError(row.paretoError);
    m_keys[series] << row.key;
    m_points.insert(row.key, QPointF(row.medianMs, row.paretoError));
    if (row.onFront) front.emplace_back(row.medianMs, drawnError(row.paretoError));
  }
  for (int s = 0; s < kSeriesCount; ++s) m_graphs[s]->setData(x[s], y[s]);
  std::sort(front.begin(), front.end());
  QVector<double> fx, fy;
  for (const auto& [latency, error] : front) fx << latency, fy << error;
  m_frontLine->setData(fx, fy, true);
  // Short enough for a 1366 x 768 screen, where the scatter sits under the table.
  m_plot->yAxis->setLabel(m_zeroAt > 0 ? tr("%1 (0 at %2)").arg(errorLabel).arg(m_zeroAt, 0, 'g', 2)
                                       : tr("error (%1)").arg(errorLabel));
  m_plot->rescaleAxes();
  // Room around the points so none sits on a border; an axis of one value gets a span.
  for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
    const QCPRange range = axis->range();
    if (axis->scaleType() == QCPAxis::stLogarithmic) {
      axis->setRange(range.lower / 3, range.upper * 3);
      continue;
    }
    const double pad =
        range.size() > 0 ? range.size() * 0.08 : std::max(std::abs(range.lower) * 0.1, 1e-6);
    axis->setRange(range.lower - pad, range.upper + pad);
  }
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SweepPlot::setSelectedKey(const QString& key) {
  double latency, error;
  if (pointOf(key, &latency, &error))
    m_selected->setData(QVector<double>{latency}, QVector<double>{drawnError(error)});
  else
    m_selected->data()->clear();
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

bool SweepPlot::pointOf(const QString& key, double* latency, double* error) const {
  const auto it = m_points.find(key);
  if (it == m_points.end()) return false;
  *latency = it->x();
  *error = it->y();
  return true;
}

QPoint SweepPlot::pixelOf(const QString& key) const {
  double latency, error;
  if (!pointOf(key, &latency, &error)) return QPoint(-1, -1);
  return QPoint(int(std::lround(m_plot->xAxis->coordToPixel(latency))),
                int(std::lround(m_plot->yAxis->coordToPixel(drawnError(error)))));
}

// The nearest drawn point within 12 px of the click.
void SweepPlot::onClick(QMouseEvent* event) {
  QString best;
  double bestDistance = 12;
  for (int s = 0; s < kSeriesCount; ++s) {
    for (const QString& key : m_keys[s]) {
      const QPointF d = QPointF(pixelOf(key)) - event->position();
      const double distance = std::hypot(d.x(), d.y());
      if (distance <= bestDistance) bestDistance = distance, best = key;
    }
  }
  if (!best.isEmpty()) emit pointClicked(best);
}

}  // namespace kiln::studio
