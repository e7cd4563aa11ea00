#include "histogram_widget.h"

#include <QPainter>
#include <algorithm>
#include <cmath>

#include "kiln/calibration.h"

namespace kiln::studio {
namespace {

constexpr int kMaxBars = 256;

}  // namespace

HistogramWidget::HistogramWidget(QWidget* parent) : QWidget(parent) {
  setMinimumSize(240, 140);
}

void HistogramWidget::setHistogram(const QString& title, const TensorHistogram* histogram,
                                   std::vector<HistogramMarker> markers) {
  m_title = title;
  m_markers = std::move(markers);
  m_counts.clear();
  m_extent = 0;
  if (histogram && histogram->count() > 0 && histogram->binWidth() > 0) {
    double right = std::max(std::fabs(histogram->minValue()), std::fabs(histogram->maxValue()));
    for (const HistogramMarker& m : m_markers) right = std::max(right, m.value);
    // Bins up to the right edge, merged so there are at most kMaxBars bars.
    const int used = std::min(TensorHistogram::kBins,
                              static_cast<int>(std::ceil(right / histogram->binWidth())) + 1);
    const int merge = std::max(1, (used + kMaxBars - 1) / kMaxBars);
    for (int i = 0; i < used; i += merge) {
      double total = 0;
      for (int j = i; j < std::min(i + merge, used); ++j) total += histogram->bins()[j];
      m_counts.push_back(total);
    }
    m_extent = histogram->binWidth() * merge * static_cast<double>(m_counts.size());
  }
  update();
}

void HistogramWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const QRect plot = rect().adjusted(8, 22, -8, -22);
  p.setPen(palette().text().color());
  p.drawText(rect().adjusted(8, 2, -8, 0), Qt::AlignLeft | Qt::AlignTop,
             m_title.isEmpty() ? tr("select a tensor") : m_title);
  if (m_counts.empty() || plot.width() <= 0 || plot.height() <= 0) return;
  const double peak = std::log1p(*std::max_element(m_counts.begin(), m_counts.end()));
  const double barWidth = double(plot.width()) / m_counts.size();
  p.setPen(Qt::NoPen);
  p.setBrush(palette().highlight().color().lighter(130));
  for (size_t i = 0; i < m_counts.size(); ++i) {
    const double h = peak > 0 ? std::log1p(m_counts[i]) / peak * plot.height() : 0;
    p.drawRect(QRectF(plot.left() + i * barWidth, plot.bottom() - h, std::max(barWidth, 1.0), h));
  }
  // Markers, labelled along the bottom in their own colours.
  int labelX = plot.left();
  for (const HistogramMarker& m : m_markers) {
    const double x = plot.left() + m.value / m_extent * plot.width();
    p.setPen(QPen(m.color, 2));
    p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
    const QString text = QString("%1 %2").arg(m.label).arg(m.value, 0, 'g', 4);
    p.drawText(QPoint(labelX, rect().bottom() - 4), text);
    labelX += p.fontMetrics().horizontalAdvance(text) + 12;
  }
  p.setPen(palette().text().color());
  p.drawText(plot.adjusted(0, 0, 0, 14), Qt::AlignRight | Qt::AlignBottom,
             QString("|x| up to %1, log counts").arg(m_extent, 0, 'g', 4));
}

}  // namespace kiln::studio
