#include "memory_timeline_chart.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "advisor_panel.h"
#include "layer_table_model.h"
#include "memory_timeline.h"
#include "studio_document.h"

namespace kiln::studio {
namespace {

const QColor kBarColor(59, 125, 216);
const QColor kPeakColor(230, 126, 34);

// MiB when the peak reaches one, KiB otherwise: the axis keeps short numbers.
std::pair<double, QString> axisUnit(int64_t peakBytes) {
  if (peakBytes >= (int64_t(1) << 20)) return {double(1 << 20), QStringLiteral("MiB")};
  return {1024.0, QStringLiteral("KiB")};
}

QTableWidgetItem* cell(const QString& text) {
  auto* item = new QTableWidgetItem(text);
  item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
  item->setToolTip(text);
  return item;
}

}  // namespace

MemoryTimelineChart::MemoryTimelineChart(StudioDocument* document, QWidget* parent)
    : QWidget(parent),
      m_document(document),
      m_summary(new QLabel(this)),
      m_plot(new QCustomPlot(this)),
      m_tensors(new QTableWidget(0, 2, this)) {
  m_summary->setObjectName("memorySummary");
  m_summary->setWordWrap(true);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_plot->setMinimumHeight(120);
  m_plot->xAxis->setLabel(tr("layer (execution order)"));
  m_plot->xAxis->grid()->setVisible(false);
  // Layers are counted: whole-number ticks only.
  auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
  ticker->setTickStep(1);
  ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  m_plot->xAxis->setTicker(ticker);
  m_tensors->setObjectName("peakTensors");
  m_tensors->setHorizontalHeaderLabels({tr("Alive at the peak"), tr("Size")});
  m_tensors->verticalHeader()->hide();
  m_tensors->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
  m_tensors->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  m_tensors->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
  m_tensors->setTextElideMode(Qt::ElideMiddle);
  auto* body = new QHBoxLayout;
  body->addWidget(m_plot, 3);
  body->addWidget(m_tensors, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(m_summary);
  layout->addLayout(body, 1);
  connect(m_plot, &QCustomPlot::plottableClick, this,
          [this](QCPAbstractPlottable*, int dataIndex, QMouseEvent*) { onBarClick(dataIndex); });
}

void MemoryTimelineChart::showPlan(const std::shared_ptr<const Plan>& plan,
                                   const QString& placeholder) {
  m_layers.clear();
  m_peakBytes = 0;
  m_peakLayer.clear();
  m_tensors->setRowCount(0);
  const inspector::MemoryTimeline timeline =
      plan ? inspector::memoryTimeline(*plan) : inspector::MemoryTimeline{};
  const bool empty = timeline.steps.empty();
  m_plot->setVisible(!empty);
  m_tensors->setVisible(!empty);
  if (empty) {
    m_plot->clearPlottables();
    m_summary->setText(plan ? tr("The plan has no layers: no activation memory to show.")
                            : placeholder);
    return;
  }
  const auto& peak = timeline.steps[timeline.peakStep];
  m_peakBytes = peak.liveBytes;
  m_peakLayer = QString::fromStdString(peak.layer);
  std::vector<double> values;
  for (const auto& step : timeline.steps) {
    m_layers << QString::fromStdString(step.layer);
    values.push_back(static_cast<double>(step.liveBytes));
  }
  const auto [unit, unitName] = axisUnit(m_peakBytes);
  m_plot->yAxis->setLabel(tr("live %1").arg(unitName));
  drawBars(values, timeline.peakStep, unit);
  m_tensors->setRowCount(static_cast<int>(timeline.peakTensors.size()));
  for (size_t i = 0; i < timeline.peakTensors.size(); ++i) {
    const auto& tensor = timeline.peakTensors[i];
    m_tensors->setItem(static_cast<int>(i), 0, cell(QString::fromStdString(tensor.name)));
    m_tensors->setItem(static_cast<int>(i), 1, cell(formatBytes(tensor.bytes)));
  }
  m_summary->setText(tr("Peak %1 at %2 (layer %3 of %4), %5 tensor(s) alive. Arena %6, "
                        "weights %7. Click a bar to select its layer.")
                         .arg(formatBytes(m_peakBytes), m_peakLayer)
                         .arg(timeline.peakStep + 1)
                         .arg(timeline.steps.size())
                         .arg(timeline.peakTensors.size())
                         .arg(formatBytes(timeline.arenaBytes), formatBytes(timeline.weightBytes)));
}

// Two bar series share the keys: every layer in blue, the peak alone in orange on top.
void MemoryTimelineChart::drawBars(const std::vector<double>& values, size_t peak, double unit) {
  m_plot->clearPlottables();
  QVector<double> keys, live, peakOnly;
  for (size_t i = 0; i < values.size(); ++i) {
    keys << static_cast<double>(i + 1);
    live << values[i] / unit;
    peakOnly << (i == peak ? values[i] / unit : 0.0);
  }
  auto addBars = [&](const QVector<double>& data, const QColor& color) {
    auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    bars->setWidth(values.size() > 60 ? 1.0 : 0.8);
    bars->setPen(Qt::NoPen);
    bars->setBrush(color);
    bars->setData(keys, data, true);
  };
  addBars(live, kBarColor);
  addBars(peakOnly, kPeakColor);
  m_plot->xAxis->setRange(0.3, values.size() + 0.7);
  m_plot->yAxis->setRange(0, values[peak] > 0 ? values[peak] / unit * 1.1 : 1);
  m_plot->replot();
}

void MemoryTimelineChart::onBarClick(int dataIndex) {
  if (dataIndex < 0 || dataIndex >= m_layers.size()) return;
  const auto report = m_document->report();
  const int layer = report ? reportLayerNamed(*report, m_layers[dataIndex].toStdString()) : -1;
  if (layer >= 0) m_document->selectLayer(layer);
}

QString MemoryTimelineChart::summaryText() const {
  return m_summary->text();
}

int MemoryTimelineChart::barCount() const {
  return static_cast<int>(m_layers.size());
}

}  // namespace kiln::studio
