#include "error_plots.h"

#include <QComboBox>
#include <QImage>
#include <QLabel>
#include <QPainter>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

namespace kiln::studio {

// Histogram (left half) and heatmap (right half) of one output's errors.
class ErrorPlotCanvas : public QWidget {
 public:
  explicit ErrorPlotCanvas(QWidget* parent) : QWidget(parent) { setMinimumHeight(180); }

  void setStats(const compare::ErrorStats* stats) {
    m_bars.clear();
    m_heatmap = QImage();
    if (stats) {
      m_bars.push_back(stats->histogram.belowFirst);
      m_bars.insert(m_bars.end(), stats->histogram.counts.begin(), stats->histogram.counts.end());
      m_heatmap = heatmapOf(stats->heatmap);
    }
    update();
  }
  const std::vector<int64_t>& bars() const { return m_bars; }
  const QImage& heatmap() const { return m_heatmap; }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    const QRect histogram(8, 8, width() / 2 - 16, height() - 32);
    const QRect heat(width() / 2 + 8, 8, width() / 2 - 16, height() - 32);
    paintHistogram(p, histogram);
    if (!m_heatmap.isNull()) {
      p.drawImage(heat, m_heatmap);
      p.setPen(Qt::gray);
      p.drawRect(heat);
    }
    p.setPen(palette().text().color());
    p.drawText(QRect(histogram.left(), height() - 22, histogram.width(), 20), Qt::AlignCenter,
               tr("|error| by decade: <1e-10, 1e-10 … 1e3+"));
    p.drawText(QRect(heat.left(), height() - 22, heat.width(), 20), Qt::AlignCenter,
               tr("largest |error| by region (rows × last dim)"));
  }

 private:
  void paintHistogram(QPainter& p, const QRect& area) {
    if (m_bars.empty()) return;
    const int64_t peak = std::max<int64_t>(1, *std::max_element(m_bars.begin(), m_bars.end()));
    const double width = static_cast<double>(area.width()) / m_bars.size();
    for (size_t i = 0; i < m_bars.size(); ++i) {
      const int h = static_cast<int>(area.height() * static_cast<double>(m_bars[i]) / peak);
      const QRectF bar(area.left() + i * width + 1, area.bottom() - h, width - 2, h);
      p.fillRect(bar, i == 0 ? QColor(120, 170, 230) : QColor(230, 120, 80));
    }
    p.setPen(Qt::gray);
    p.drawLine(area.bottomLeft(), area.bottomRight());
  }

  static QImage heatmapOf(const compare::ErrorHeatmap& h) {
    if (h.rows <= 0 || h.columns <= 0) return {};
    double largest = 0;
    for (double c : h.cells)
      if (std::isfinite(c)) largest = std::max(largest, c);
    QImage image(h.columns, h.rows, QImage::Format_RGB32);
    for (int r = 0; r < h.rows; ++r) {
      for (int c = 0; c < h.columns; ++c) {
        const double v = h.cells[static_cast<size_t>(r) * h.columns + c];
        QColor colour = Qt::black;  // NaN/Inf somewhere in the cell
        if (std::isfinite(v)) {
          const double t = (v <= 0 || largest <= 0)
                               ? 0.0
                               : std::clamp(1.0 + std::log10(v / largest) / 6.0, 0.0, 1.0);
          colour = QColor::fromRgbF(1.0, 1.0 - 0.85 * t, 1.0 - 0.85 * t);
        }
        image.setPixel(c, r, colour.rgb());
      }
    }
    return image;
  }

  std::vector<int64_t> m_bars;
  QImage m_heatmap;
};

ErrorPlots::ErrorPlots(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  m_outputs = new QComboBox(this);
  m_summary = new QLabel(this);
  m_summary->setWordWrap(true);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_canvas = new ErrorPlotCanvas(this);
  layout->addWidget(m_outputs);
  layout->addWidget(m_summary);
  layout->addWidget(m_canvas, 1);
  connect(m_outputs, &QComboBox::currentIndexChanged, this, &ErrorPlots::showOutput);
}

void ErrorPlots::setReport(std::shared_ptr<const compare::AccuracyReport> report) {
  m_report = std::move(report);
  QSignalBlocker block(m_outputs);
  m_outputs->clear();
  if (m_report)
    for (const compare::ErrorStats& s : m_report->outputs)
      m_outputs->addItem(QString::fromStdString(s.name));
  showOutput();
}

int ErrorPlots::currentOutput() const {
  return m_outputs->currentIndex();
}

void ErrorPlots::setCurrentOutput(int index) {
  m_outputs->setCurrentIndex(index);
}

void ErrorPlots::showOutput() {
  const int index = m_outputs->currentIndex();
  const compare::ErrorStats* stats =
      m_report && index >= 0 && index < static_cast<int>(m_report->outputs.size())
          ? &m_report->outputs[index]
          : nullptr;
  m_canvas->setStats(stats);
  m_summary->setText(stats ? QString::fromStdString(compare::formatErrorStatsLine(*stats, 0))
                           : tr("Run an accuracy comparison to see per-output errors."));
}

std::vector<int64_t> ErrorPlots::histogramBars() const {
  return m_canvas->bars();
}
QImage ErrorPlots::heatmapImage() const {
  return m_canvas->heatmap();
}
QString ErrorPlots::summary() const {
  return m_summary->text();
}

}  // namespace kiln::studio
