// HistogramWidget: one tensor's |x| histogram from calibration, drawn with QPainter
// on a log count scale, with a vertical marker per calibration method (entropy,
// min-max, percentile) and the chosen range, so the methods compare side by side. The
// markers' legend wraps into as many rows as the width needs (it overlapped itself in
// a narrow pane), and the plot shrinks to make room.
#pragma once

#include <QColor>
#include <QRect>
#include <QString>
#include <QWidget>
#include <vector>

namespace kiln {
class TensorHistogram;
}

namespace kiln::studio {

struct HistogramMarker {
  QString label;
  double value = 0;
  QColor color;
};

class HistogramWidget : public QWidget {
  Q_OBJECT
 public:
  explicit HistogramWidget(QWidget* parent = nullptr);

  // Shows `histogram` (nullptr clears) under `title`, its x axis up to a little past the
  // largest marker and the largest value. The histogram is copied: bins merged to at
  // most the widget's width.
  void setHistogram(const QString& title, const TensorHistogram* histogram,
                    std::vector<HistogramMarker> markers);
  int binCount() const { return static_cast<int>(m_counts.size()); }
  const std::vector<HistogramMarker>& markers() const { return m_markers; }
  QString title() const { return m_title; }

  QSize sizeHint() const override { return {480, 220}; }
  QSize minimumSizeHint() const override { return {220, 150}; }
  // Where each marker's legend entry is drawn at the current size, in marker order:
  // left to right, wrapping to a new row rather than overlapping.
  std::vector<QRect> legendRects() const;
  // Where the axis note ("|x| up to 8.2, log counts") is drawn; it never meets the
  // title or the legend.
  QRect axisNoteRect() const;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  QString legendText(const HistogramMarker& marker) const;
  QString axisNote() const;
  int headerHeight() const;  // the title line, and the note's when it does not fit beside it

  QString m_title;
  std::vector<double> m_counts;  // merged bins over [0, m_extent)
  double m_extent = 0;
  std::vector<HistogramMarker> m_markers;
};

}  // namespace kiln::studio
