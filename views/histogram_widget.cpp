#include "histogram_widget.h"

#include <QPainter>
#include <algorithm>
#include <cmath>

#include "kiln/calibration.h"

namespace kiln::studio {
namespace {

constexpr int kMaxBars = 256;
constexpr int kMargin = 8;
constexpr int kLegendGap = 12;  // between two legend entries of a row

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

QString HistogramWidget::legendText(const HistogramMarker& marker) const {
  return QString("%1 %2").arg(marker.label).arg(marker.value, 0, 'g', 4);
}

QString HistogramWidget::axisNote() const {
  return m_counts.empty() ? QString()
                          : QString("|x| up to %1, log counts").arg(m_extent, 0, 'g', 4);
}

int HistogramWidget::headerHeight() const {
  const QFontMetrics fm = fontMetrics();
  const QString title = m_title.isEmpty() ? tr("select a tensor") : m_title;
  const int room = width() - 2 * kMargin;
  const bool beside =
      fm.horizontalAdvance(title) + kLegendGap + fm.horizontalAdvance(axisNote()) <= room;
  return (beside || axisNote().isEmpty() ? 1 : 2) * fm.height() + 6;
}

std::vector<QRect> HistogramWidget::legendRects() const {
  const QFontMetrics fm = fontMetrics();
  const int right = width() - kMargin;
  std::vector<QRect> rects;
  int x = kMargin, row = 0;
  for (const HistogramMarker& m : m_markers) {
    const int w = fm.horizontalAdvance(legendText(m));
    if (x > kMargin && x + w > right) {
      x = kMargin;
      ++row;
    }
    rects.emplace_back(x, row, w, fm.height());
    x += w + kLegendGap;
  }
  // Rows counted from the top; the legend sits at the bottom.
  const int rows = rects.empty() ? 0 : row + 1;
  const int top = height() - 4 - rows * fm.height();
  for (QRect& r : rects) r.moveTop(top + r.top() * fm.height());
  return rects;
}

QRect HistogramWidget::axisNoteRect() const {
  const QFontMetrics fm = fontMetrics();
  const int w = fm.horizontalAdvance(axisNote());
  const bool secondLine = headerHeight() > fm.height() + 6;
  return QRect(width() - kMargin - w, 2 + (secondLine ? fm.height() : 0), w, fm.height());
}

void HistogramWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const std::vector<QRect> legend = legendRects();
  const int legendTop = legend.empty() ? height() - 4 : legend.front().top();
  const QRect plot(kMargin, headerHeight(), width() - 2 * kMargin, legendTop - 6 - headerHeight());
  p.setPen(palette().text().color());
  p.drawText(rect().adjusted(kMargin, 2, -kMargin, 0), Qt::AlignLeft | Qt::AlignTop,
             m_title.isEmpty() ? tr("select a tensor") : m_title);
  if (m_counts.empty() || plot.width() <= 0 || plot.height() <= 0) return;
  p.drawText(axisNoteRect(), Qt::AlignRight | Qt::AlignTop, axisNote());
  const double peak = std::log1p(*std::max_element(m_counts.begin(), m_counts.end()));
  const double barWidth = double(plot.width()) / m_counts.size();
  p.setPen(Qt::NoPen);
  p.setBrush(palette().highlight().color().lighter(130));
  for (size_t i = 0; i < m_counts.size(); ++i) {
    const double h = peak > 0 ? std::log1p(m_counts[i]) / peak * plot.height() : 0;
    p.drawRect(QRectF(plot.left() + i * barWidth, plot.bottom() - h, std::max(barWidth, 1.0), h));
  }
  // Markers, and their legend along the bottom in their own colours.
  for (size_t i = 0; i < m_markers.size(); ++i) {
    const HistogramMarker& m = m_markers[i];
    const double x = plot.left() + m.value / m_extent * plot.width();
    p.setPen(QPen(m.color, 2));
    p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
    p.drawText(legend[i], Qt::AlignLeft | Qt::AlignVCenter, legendText(m));
  }
}

}  // namespace kiln::studio
