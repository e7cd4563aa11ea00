#include "error_plots.h"

#include <QComboBox>
#include <QImage>
#include <QLabel>
#include <QPainter>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

namespace kiln::studio {

namespace {

// The heatmap's red end: errors this many times the "ok" limit or more.
constexpr double kRedFactor = 1000;

// The largest error that reads as "ok": atol + rtol (the tolerance where |expected| is 1),
// or the output's largest error when no element of it is outside the tolerance.
double okLimit(const compare::ErrorStats& stats, const compare::Tolerance& tolerance) {
  const double limit = tolerance.atol + tolerance.rtol;
  return stats.outsideTolerance == 0 && stats.comparable ? std::max(limit, stats.maxAbs) : limit;
}

// Green shades (darker as they near the limit) up to `limit`; past it orange to red,
// which it reaches at kRedFactor times the limit; log scales both.
QColor errorColour(double error, double limit) {
  if (!std::isfinite(error)) return Qt::black;
  if (error <= limit) {
    const double t = error <= 0 ? 0.0 : std::clamp(1.0 + std::log10(error / limit) / 6.0, 0.0, 1.0);
    return QColor::fromRgbF(1.0 - 0.55 * t, 1.0 - 0.2 * t, 1.0 - 0.55 * t);
  }
  const double u = std::clamp(std::log10(error / limit) / std::log10(kRedFactor), 0.0, 1.0);
  return QColor::fromRgbF(1.0 - 0.2 * u, 0.7 * (1.0 - u), 0.25 * (1.0 - u));
}

}  // namespace

// Histogram (left half) and heatmap (right half) of one output's errors.
class ErrorPlotCanvas : public QWidget {
 public:
  explicit ErrorPlotCanvas(QWidget* parent) : QWidget(parent) { setMinimumHeight(180); }

  void setStats(const compare::ErrorStats* stats, double okLimit) {
    m_bars.clear();
    m_heatmap = QImage();
    if (stats) {
      m_bars.push_back(stats->histogram.belowFirst);
      m_bars.insert(m_bars.end(), stats->histogram.counts.begin(), stats->histogram.counts.end());
      m_heatmap = heatmapOf(stats->heatmap, okLimit);
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

  static QImage heatmapOf(const compare::ErrorHeatmap& h, double okLimit) {
    if (h.rows <= 0 || h.columns <= 0) return {};
    QImage image(h.columns, h.rows, QImage::Format_RGB32);
    for (int r = 0; r < h.rows; ++r)
      for (int c = 0; c < h.columns; ++c)
        image.setPixel(c, r,
                       errorColour(h.cells[static_cast<size_t>(r) * h.columns + c], okLimit).rgb());
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
  m_scale = new QLabel(this);
  m_scale->setWordWrap(true);
  layout->addWidget(m_outputs);
  layout->addWidget(m_summary);
  layout->addWidget(m_canvas, 1);
  layout->addWidget(m_scale);
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
  const double limit = stats ? okLimit(*stats, m_report->tolerance) : 0;
  m_canvas->setStats(stats, limit);
  m_scale->setText(
      stats ? tr("Heatmap: green up to %1 (ok, within the tolerance atol %2 + rtol %3), orange "
                 "past it, red from %4; black: NaN/Inf.")
                  .arg(limit, 0, 'g', 3)
                  .arg(m_report->tolerance.atol, 0, 'g', 3)
                  .arg(m_report->tolerance.rtol, 0, 'g', 3)
                  .arg(limit * kRedFactor, 0, 'g', 3)
            : QString());
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
QString ErrorPlots::heatmapScale() const {
  return m_scale->text();
}

}  // namespace kiln::studio
