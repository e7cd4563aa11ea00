#include "roofline_chart.h"

#include <QComboBox>
#include <QLabel>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>
#include <qcustomplot.h>

#include "op_category.h"
#include "studio_document.h"

namespace kiln::studio {
namespace {

constexpr double kGiga = 1e9;
const QColor kRoofColor(90, 90, 90);

QString rate(double gflops) {
  return gflops >= 1000 ? QObject::tr("%1 TFLOP/s").arg(gflops / 1000, 0, 'g', 4)
                        : QObject::tr("%1 GFLOP/s").arg(gflops, 0, 'g', 4);
}

}  // namespace

RooflineChart::RooflineChart(StudioDocument* document, QWidget* parent)
    : QWidget(parent),
      m_document(document),
      m_toolBar(new QToolBar(tr("Roofline"), this)),
      m_device(new QComboBox(this)),
      m_summary(new QLabel(this)),
      m_plot(new QCustomPlot(this)) {
  setObjectName("rooflineChart");
  m_device->setObjectName("rooflineDevice");
  m_device->setToolTip(tr("Whose peaks the roofs show: vendor numbers (dense, no sparsity)"));
  m_device->addItem(tr("Engine's device"), QString());
  for (const inspector::DevicePeaks& p : inspector::knownDevicePeaks())
    m_device->addItem(QString::fromStdString(p.name), QString::fromStdString(p.name));
  m_toolBar->addWidget(new QLabel(tr(" Roofs: "), m_toolBar));
  m_toolBar->addWidget(m_device);
  m_summary->setObjectName("rooflineSummary");
  m_summary->setWordWrap(true);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
    axis->setScaleType(QCPAxis::stLogarithmic);
    axis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    axis->setNumberFormat("eb");
    axis->setNumberPrecision(0);
  }
  m_plot->xAxis->setLabel(tr("arithmetic intensity (FLOP per byte moved)"));
  m_plot->yAxis->setLabel(tr("achieved GFLOP/s"));
  m_plot->legend->setVisible(true);
  m_plot->legend->setFont(font());
  m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignRight);
  m_plot->setMinimumHeight(200);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(m_summary);
  layout->addWidget(m_plot, 1);
  connect(m_device, &QComboBox::currentIndexChanged, this, &RooflineChart::rebuild);
  connect(m_document, &StudioDocument::engineChanged, this, &RooflineChart::rebuild);
  connect(m_document, &StudioDocument::selectionChanged, this, &RooflineChart::showSelection);
  connect(m_plot, &QCustomPlot::mousePress, this, &RooflineChart::onClick);
  rebuild();
}

bool RooflineChart::setPeaksDevice(const QString& name) {
  const int index = m_device->findData(name);
  if (index < 0) return false;
  m_device->setCurrentIndex(index);
  return true;
}

void RooflineChart::rebuild() {
  m_plot->clearGraphs();
  m_selected = nullptr;
  m_points.clear();
  m_roofPeaks.clear();
  const auto report = m_document->report();
  const QString chosen = m_device->currentData().toString();
  m_peaks = chosen.isEmpty() ? (report ? inspector::peaksForDevice(report->device) : std::nullopt)
                             : inspector::peaksForDevice(chosen.toStdString());
  if (!report || report->layers.empty()) {
    m_summary->setText(tr("Open or build an engine: each timed layer becomes a point."));
    m_plot->replot();
    return;
  }
  const std::vector<inspector::LayerRoofline> roofs =
      inspector::layerRooflines(*report, m_peaks ? &*m_peaks : nullptr);
  std::map<QString, QCPGraph*> byPrecision;
  int untimed = 0, noFlops = 0, unknown = 0;
  double xMin = 1e300, xMax = 0, yMax = 0;
  for (size_t i = 0; i < roofs.size(); ++i) {
    const inspector::LayerRoofline& r = roofs[i];
    if (!r.unknown.empty()) {
      ++unknown;
      continue;
    }
    if (r.flops <= 0) {
      ++noFlops;
      continue;
    }
    if (r.achievedFlops <= 0 || r.intensity <= 0) {
      ++untimed;
      continue;
    }
    QString precision = normalizePrecision(QString::fromStdString(report->layers[i].precision));
    if (precision.isEmpty()) precision = tr("other");
    QCPGraph*& graph = byPrecision[precision];
    if (!graph) {
      graph = m_plot->addGraph();
      graph->setName(precision);
      graph->setLineStyle(QCPGraph::lsNone);
      const QColor color = precisionColor(precision);
      graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color.darker(120), color, 8));
    }
    const double gflops = r.achievedFlops / kGiga;
    graph->addData(r.intensity, gflops);
    m_points.insert(int(i), QPointF(r.intensity, gflops));
    xMin = std::min(xMin, r.intensity), xMax = std::max(xMax, r.intensity);
    yMax = std::max(yMax, gflops);
  }
  if (m_points.isEmpty()) xMin = 0.1, xMax = 100, yMax = 1;
  // Room for every roof's ridge point (where the slope meets the flat compute roof).
  if (m_peaks && m_peaks->dramBytesPerSecond > 0)
    for (double peak : {m_peaks->fp32Flops, m_peaks->fp16Flops, m_peaks->int8Ops})
      xMax = std::max(xMax, peak / m_peaks->dramBytesPerSecond);
  if (m_peaks) drawRoofs(xMin / 4, xMax * 4);
  double yMin = yMax;
  for (const QPointF& p : m_points) yMin = std::min(yMin, p.y());
  for (double peak : m_roofPeaks) yMax = std::max(yMax, peak);
  m_plot->xAxis->setRange(xMin / 4, xMax * 4);
  m_plot->yAxis->setRange(yMin / 4, yMax * 3);
  m_selected = m_plot->addGraph();
  m_selected->setLineStyle(QCPGraph::lsNone);
  m_selected->setScatterStyle(
      QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(Qt::black, 2), Qt::NoBrush, 16));
  m_selected->removeFromLegend();
  QString text = tr("%1 of %2 layers drawn").arg(m_points.size()).arg(report->layers.size());
  QStringList left;
  if (untimed) left << tr("%1 untimed").arg(untimed);
  if (noFlops) left << tr("%1 with no FLOPs (data movement)").arg(noFlops);
  if (unknown) left << tr("%1 of unknown FLOPs or bytes").arg(unknown);
  if (!left.isEmpty()) text += " (" + left.join(", ") + ")";
  text +=
      m_peaks
          ? tr(" · roofs: %1, %2 GB/s DRAM (%3)")
                .arg(QString::fromStdString(m_peaks->name))
                .arg(m_peaks->dramBytesPerSecond / kGiga, 0, 'f', 0)
                .arg(QString::fromStdString(m_peaks->source))
          : tr(" · no roofs: no peaks for this device (kiln device --calibrate measures a CPU's; "
               "or pick a GPU under Roofs)");
  m_summary->setText(text);
  showSelection();
}

// One roof per distinct compute peak of the precisions: the bandwidth slope up to the
// ridge point, then flat.
void RooflineChart::drawRoofs(double xMin, double xMax) {
  const double bandwidth = m_peaks->dramBytesPerSecond / kGiga;  // GB/s
  struct Roof {
    const char* name;
    double peak;
  };
  const Roof roofs[] = {{"FP32", m_peaks->fp32Flops},
                        {"FP16/BF16", m_peaks->fp16Flops},
                        {"INT8/FP8", m_peaks->int8Ops}};
  for (const Roof& roof : roofs) {
    if (roof.peak <= 0) continue;
    const double peak = roof.peak / kGiga;
    const double ridge = peak / bandwidth;
    QCPGraph* line = m_plot->addGraph();
    line->setName(tr("%1 roof (%2)").arg(roof.name, rate(peak)));
    static const Qt::PenStyle kStyles[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine};
    line->setPen(QPen(kRoofColor, 1.5, kStyles[std::min<size_t>(m_roofPeaks.size(), 2)]));
    const double left = std::min(xMin, ridge / 10);
    line->setData(QVector<double>{left, ridge, std::max(xMax, ridge * 10)},
                  QVector<double>{left * bandwidth, peak, peak});
    m_roofPeaks.push_back(peak);
  }
}

void RooflineChart::showSelection() {
  if (!m_selected) return;
  const int layer = m_document->selectedLayer();
  const auto it = m_points.find(layer);
  if (it != m_points.end())
    m_selected->setData(QVector<double>{it->x()}, QVector<double>{it->y()});
  else
    m_selected->data()->clear();
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

bool RooflineChart::pointOf(int layer, double* intensity, double* gflops) const {
  const auto it = m_points.find(layer);
  if (it == m_points.end()) return false;
  *intensity = it->x();
  *gflops = it->y();
  return true;
}

QPoint RooflineChart::pixelOf(int layer) const {
  double x, y;
  if (!pointOf(layer, &x, &y)) return QPoint(-1, -1);
  return QPoint(int(std::lround(m_plot->xAxis->coordToPixel(x))),
                int(std::lround(m_plot->yAxis->coordToPixel(y))));
}

QString RooflineChart::summaryText() const {
  return m_summary->text();
}

// The nearest point within 10 px selects its layer.
void RooflineChart::onClick(QMouseEvent* event) {
  int best = -1;
  double bestDistance = 10;
  for (auto it = m_points.begin(); it != m_points.end(); ++it) {
    const QPointF d = QPointF(pixelOf(it.key())) - event->position();
    const double distance = std::hypot(d.x(), d.y());
    if (distance <= bestDistance) bestDistance = distance, best = it.key();
  }
  if (best >= 0) m_document->selectLayer(best);
}

}  // namespace kiln::studio
