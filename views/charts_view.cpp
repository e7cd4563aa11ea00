#include "charts_view.h"

#include <QAction>
#include <QBuffer>
#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QSvgGenerator>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

#include "studio_document.h"

namespace kiln::studio {
namespace {

constexpr int kMaxLabels = 40;  // category labels shown on one axis before thinning
const QColor kSeriesColors[] = {QColor(59, 125, 216), QColor(230, 126, 34)};

QString elided(const std::string& text) {
  const QString label = QString::fromStdString(text);
  return label.size() <= 32 ? label : label.left(15) + QChar(0x2026) + label.right(15);
}

// A plot with a title row above its axis rect (done once per plot).
void preparePlot(QCustomPlot* plot) {
  plot->plotLayout()->insertRow(0);
  auto* title = new QCPTextElement(plot, QString(), QFont(plot->font().family(), 11, QFont::Bold));
  plot->plotLayout()->addElement(0, 0, title);
  plot->legend->setFont(QFont(plot->font().family(), 8));
}

void setTitle(QCustomPlot* plot, const QString& text) {
  if (auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0)))
    title->setText(text);
}

void labelCategories(QCPAxis* axis, const ChartSeries& chart) {
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  const int n = static_cast<int>(chart.categories.size());
  const int step = std::max(1, static_cast<int>(std::ceil(n / static_cast<double>(kMaxLabels))));
  for (int i = 0; i < n; i += step) ticker->addTick(i + 1, elided(chart.categories[i]));
  axis->setTicker(ticker);
  axis->setRange(0.3, n + 0.7);
  axis->setTickLabelRotation(chart.horizontal ? 0 : (n > 6 ? 60 : 0));
  axis->grid()->setVisible(false);
}

// Both primary axes back to plain numbers, the secondary ones hidden.
void resetAxes(QCustomPlot* plot) {
  for (QCPAxis* axis : {plot->xAxis, plot->yAxis}) {
    axis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    axis->setTickLabelRotation(0);
    axis->grid()->setVisible(true);
    axis->setRangeReversed(false);
    axis->setLabel(QString());
  }
  plot->xAxis2->setVisible(false);
  plot->yAxis2->setVisible(false);
}

void drawChart(QCustomPlot* plot, const ChartSeries& chart) {
  plot->clearPlottables();
  qDeleteAll(plot->findChildren<QCPBarsGroup*>());  // after their bars
  resetAxes(plot);
  setTitle(plot, QString::fromStdString(chart.title));
  QCPAxis* keyAxis = chart.horizontal ? plot->yAxis : plot->xAxis;
  QCPAxis* valueAxis = chart.horizontal ? plot->xAxis : plot->yAxis;
  QCPAxis* secondAxis = chart.horizontal ? plot->xAxis2 : plot->yAxis2;
  labelCategories(keyAxis, chart);
  keyAxis->setRangeReversed(chart.horizontal);  // horizontal: the first (largest) bar on top
  valueAxis->setLabel(QString::fromStdString(chart.valueLabel));
  bool usesSecond = false;
  for (const ChartValues& s : chart.series) usesSecond = usesSecond || s.secondAxis;
  secondAxis->setVisible(usesSecond);
  secondAxis->setLabel(QString::fromStdString(chart.secondValueLabel));

  QVector<double> keys;
  for (size_t i = 0; i < chart.categories.size(); ++i) keys << static_cast<double>(i + 1);
  QCPBarsGroup* group = chart.series.size() > 1 ? new QCPBarsGroup(plot) : nullptr;
  double maxValue[2] = {0, 0};
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const ChartValues& values = chart.series[s];
    auto* bars = new QCPBars(keyAxis, values.secondAxis ? secondAxis : valueAxis);
    bars->setName(QString::fromStdString(values.name));
    bars->setWidth(group ? 0.8 / chart.series.size() : 0.7);
    bars->setPen(Qt::NoPen);
    bars->setBrush(kSeriesColors[s % 2]);
    bars->setData(keys, QVector<double>(values.values.begin(), values.values.end()), true);
    if (group) bars->setBarsGroup(group);
    for (double v : values.values)
      maxValue[values.secondAxis] = std::max(maxValue[values.secondAxis], v);
  }
  // Headroom above the tallest bar; more when the legend sits in the top corner.
  const double headroom = chart.series.size() > 1 ? 1.3 : 1.08;
  valueAxis->setRange(0, maxValue[0] > 0 ? maxValue[0] * headroom : 1);
  secondAxis->setRange(0, maxValue[1] > 0 ? maxValue[1] * headroom : 1);
  plot->legend->setVisible(chart.series.size() > 1);
  plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
}

QCPBars* firstBars(QCustomPlot* plot) {
  return plot->plottableCount() > 0 ? qobject_cast<QCPBars*>(plot->plottable(0)) : nullptr;
}

Status writeSvg(QCustomPlot* plot, QIODevice* device, QSize size, const QString& title) {
  QSvgGenerator generator;
  generator.setOutputDevice(device);
  generator.setSize(size);
  generator.setViewBox(QRect(QPoint(0, 0), size));
  generator.setTitle(title);
  QCPPainter painter;
  if (!painter.begin(&generator)) return Status(StatusCode::kIoError, "cannot start SVG output");
  plot->toPainter(&painter, size.width(), size.height());
  painter.end();
  return Status::ok();
}

}  // namespace

ChartsView::ChartsView(StudioDocument* document, QWidget* parent)
    : QWidget(parent),
      m_document(document),
      m_plot(new QCustomPlot(this)),
      m_chooser(new QComboBox(this)),
      m_topN(new QSpinBox(this)),
      m_showConstants(new QCheckBox(tr("Show constants"), this)),
      m_recompute(new QTimer(this)) {
  for (int k = 0; k < kChartCount; ++k)
    m_chooser->addItem(tr(chartName(static_cast<ChartKind>(k))));
  m_topN->setRange(1, 500);
  m_topN->setValue(20);
  m_topN->setPrefix(tr("top "));
  m_topN->setToolTip(tr("Layers shown in the latency chart"));
  preparePlot(m_plot);
  m_recompute->setSingleShot(true);
  m_recompute->setInterval(30);

  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Chart:"), this));
  controls->addWidget(m_chooser);
  controls->addWidget(m_topN);
  controls->addWidget(m_showConstants);
  controls->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(controls);
  layout->addWidget(m_plot, 1);

  m_toolBar = new QToolBar(tr("Charts"));  // placed by the main window
  QAction* exportAction = m_toolBar->addAction(tr("Export chart…"));
  exportAction->setToolTip(tr("Save the chart as PNG, SVG or PDF"));
  connect(exportAction, &QAction::triggered, this, &ChartsView::exportInteractive);

  connect(m_recompute, &QTimer::timeout, this, &ChartsView::recompute);
  connect(m_chooser, &QComboBox::currentIndexChanged, this, &ChartsView::scheduleRecompute);
  connect(m_topN, &QSpinBox::valueChanged, this, &ChartsView::scheduleRecompute);
  connect(m_showConstants, &QCheckBox::toggled, this, &ChartsView::scheduleRecompute);
  connect(m_document, &StudioDocument::engineChanged, this, &ChartsView::scheduleRecompute);
  connect(m_plot, &QCustomPlot::plottableClick, this, &ChartsView::onPlottableClick);
  connect(m_document, &StudioDocument::selectionChanged, this, &ChartsView::highlightSelection);
  recompute();
}

ChartsView::~ChartsView() {
  if (m_toolBar && !m_toolBar->parent()) delete m_toolBar;
}

void ChartsView::setChart(int chart) {
  if (chart >= 0 && chart < kChartCount) m_chooser->setCurrentIndex(chart);
}

int ChartsView::chart() const {
  return m_chooser->currentIndex();
}

void ChartsView::setTopN(int n) {
  m_topN->setValue(n);
}

void ChartsView::setShowConstants(bool show) {
  m_showConstants->setChecked(show);
}

bool ChartsView::showConstants() const {
  return m_showConstants->isChecked();
}

void ChartsView::scheduleRecompute() {
  m_recompute->start();
}

void ChartsView::recompute() {
  m_recompute->stop();
  const auto report = m_document->report();
  const auto kind = static_cast<ChartKind>(chart());
  m_topN->setEnabled(kind == ChartKind::kLayerLatency);
  m_series = report ? computeChart(*report, kind, m_topN->value(), showConstants()) : ChartSeries{};
  if (!report) m_series.title = tr("No engine: build or open one to see charts").toStdString();
  drawChart(m_plot, m_series);
  highlightSelection();  // replots
}

void ChartsView::highlightSelection() {
  QCPBars* bars = firstBars(m_plot);
  if (bars) {
    const int layer = m_document->selectedLayer();
    int bar = -1;
    for (int i = 0; layer >= 0 && i < static_cast<int>(m_series.layers.size()); ++i)
      if (m_series.layers[i] == layer) bar = i;
    bars->setSelectable(QCP::stSingleData);
    bars->selectionDecorator()->setBrush(QColor("#f39c12"));
    bars->selectionDecorator()->setPen(QPen(QColor("#7e5109"), 1.5));
    bars->setSelection(bar >= 0 && bar < bars->dataCount()
                           ? QCPDataSelection(QCPDataRange(bar, bar + 1))
                           : QCPDataSelection());
  }
  m_plot->replot();
}

int ChartsView::highlightedBar() {
  series();
  QCPBars* bars = firstBars(m_plot);
  if (!bars || bars->selection().isEmpty()) return -1;
  return bars->selection().dataRange(0).begin();
}

const ChartSeries& ChartsView::series() {
  if (m_recompute->isActive()) recompute();
  return m_series;
}

QWidget* ChartsView::plotWidget() const {
  return m_plot;
}

int ChartsView::barCount() {
  series();
  QCPBars* bars = firstBars(m_plot);
  return bars ? bars->dataCount() : 0;
}

QPoint ChartsView::barCenter(int bar) {
  series();
  QCPBars* bars = firstBars(m_plot);
  if (!bars || bar < 0 || bar >= bars->dataCount()) return QPoint(-1, -1);
  m_plot->replot();  // pixel positions follow the current widget size
  const QPointF tip = bars->dataPixelPosition(bar);
  const double base = bars->valueAxis()->coordToPixel(0);
  const bool horizontal = bars->keyAxis()->orientation() == Qt::Vertical;
  return (horizontal ? QPointF((tip.x() + base) / 2, tip.y())
                     : QPointF(tip.x(), (tip.y() + base) / 2))
      .toPoint();
}

int ChartsView::layerOfBar(int bar) {
  const ChartSeries& s = series();
  return bar >= 0 && bar < static_cast<int>(s.layers.size()) ? s.layers[bar] : -1;
}

void ChartsView::activateBar(int bar) {
  const int layer = layerOfBar(bar);
  if (layer >= 0) m_document->selectLayer(layer);
}

void ChartsView::onPlottableClick(QCPAbstractPlottable*, int dataIndex, QMouseEvent*) {
  activateBar(dataIndex);  // every series of a chart shares its categories
}

QSize ChartsView::exportSize() const {
  const QSize shown = m_plot->size();
  return shown.width() >= 400 && shown.height() >= 300 ? shown : QSize(1000, 700);
}

Status ChartsView::exportChart(const QString& path) {
  series();
  const QString suffix = QFileInfo(path).suffix().toLower();
  const QSize size = exportSize();
  bool ok = false;
  if (suffix == "png") {
    ok = m_plot->savePng(path, size.width(), size.height());
  } else if (suffix == "pdf") {
    ok = m_plot->savePdf(path, size.width(), size.height());
  } else if (suffix == "svg") {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
      return Status(StatusCode::kIoError, path.toStdString() + ": cannot write (" +
                                              file.errorString().toStdString() + ")");
    KILN_RETURN_IF_ERROR_CTX(writeSvg(m_plot, &file, size, QString::fromStdString(m_series.title)),
                             path.toStdString());
    ok = file.error() == QFile::NoError;
  } else {
    return invalidArgument(path.toStdString() + ": unknown chart format '" + suffix.toStdString() +
                           "' (use .png, .svg or .pdf)");
  }
  if (!ok) return Status(StatusCode::kIoError, path.toStdString() + ": could not write the chart");
  return Status::ok();
}

QByteArray ChartsView::chartSvg(int chart, QSize size) {
  const auto report = m_document->report();
  if (!report || chart < 0 || chart >= kChartCount || size.isEmpty()) return QByteArray();
  QCustomPlot plot;  // offscreen: the view on screen keeps its chart
  plot.resize(size);
  preparePlot(&plot);
  drawChart(&plot,
            computeChart(*report, static_cast<ChartKind>(chart), m_topN->value(), showConstants()));
  QByteArray svg;
  QBuffer buffer(&svg);
  buffer.open(QIODevice::WriteOnly);
  if (!writeSvg(&plot, &buffer, size, QString::fromUtf8(chartName(static_cast<ChartKind>(chart))))
           .isOk())
    return QByteArray();
  return svg;
}

void ChartsView::exportInteractive() {
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export chart"), QString(), tr("PNG image (*.png);;SVG (*.svg);;PDF (*.pdf)"));
  if (path.isEmpty()) return;
  Status s = exportChart(path);
  if (!s.isOk())
    m_document->addIssue(
        {IssueSeverity::kError, "export", QString::fromStdString(s.message()), {}});
}

}  // namespace kiln::studio
