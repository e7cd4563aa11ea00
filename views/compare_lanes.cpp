#include "compare_lanes.h"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "compare_diff_model.h"
#include "engine_graph_view.h"

namespace kiln::studio {
namespace {

constexpr int kMargin = 8;
constexpr int kHeader = 24;
constexpr int kBoxHeight = 26;
constexpr int kBoxGap = 4;
constexpr int kBandPadding = 6;

QColor blend(const QColor& from, const QColor& to, double t) {
  t = std::clamp(t, 0.0, 1.0);
  return QColor::fromRgbF(from.redF() + (to.redF() - from.redF()) * t,
                          from.greenF() + (to.greenF() - from.greenF()) * t,
                          from.blueF() + (to.blueF() - from.blueF()) * t);
}

}  // namespace

CompareLanes::CompareLanes(QWidget* parent) : QWidget(parent) {
  setMouseTracking(false);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void CompareLanes::setData(const CompareDiffModel* model,
                           std::shared_ptr<const inspector::EngineReport> a,
                           std::shared_ptr<const inspector::EngineReport> b) {
  m_model = model;
  m_a = std::move(a);
  m_b = std::move(b);
  m_selected = -1;
  relayout();
}

void CompareLanes::setColouring(CompareColouring colouring) {
  m_colouring = colouring;
  update();
}

void CompareLanes::setSelectedRow(int row) {
  m_selected = row;
  update();
}

void CompareLanes::relayout() {
  m_rowTop.clear();
  m_maxDelta = 0;
  int y = kHeader;
  const compare::BuildDiff* diff = m_model ? m_model->diff() : nullptr;
  if (diff) {
    for (const compare::DiffRow& row : diff->rows) {
      m_rowTop.push_back(y);
      size_t boxes = 1;
      for (const compare::DiffCell& cell : row.cells) boxes = std::max(boxes, cell.layers.size());
      y += static_cast<int>(boxes) * (kBoxHeight + kBoxGap) + kBandPadding;
      for (double d : row.timeDeltas) m_maxDelta = std::max(m_maxDelta, std::fabs(d));
    }
  }
  m_rowTop.push_back(y);
  setMinimumHeight(y + kMargin);
  updateGeometry();
  update();
}

QSize CompareLanes::sizeHint() const {
  return {560, m_rowTop.empty() ? kHeader : m_rowTop.back() + kMargin};
}

QRect CompareLanes::rowRect(int row) const {
  if (row < 0 || row + 1 >= static_cast<int>(m_rowTop.size())) return {};
  return QRect(0, m_rowTop[row], width(), m_rowTop[row + 1] - m_rowTop[row]);
}

int CompareLanes::rowAt(const QPoint& point) const {
  for (int row = 0; row + 1 < static_cast<int>(m_rowTop.size()); ++row)
    if (rowRect(row).contains(point)) return row;
  return -1;
}

const inspector::EngineReport* CompareLanes::report(int build) const {
  return build == 0 ? m_a.get() : m_b.get();
}

QColor CompareLanes::boxColour(int row, int build, int box) const {
  const compare::BuildDiff* diff = m_model ? m_model->diff() : nullptr;
  if (!diff || row < 0 || row >= static_cast<int>(diff->rows.size())) return {};
  const compare::DiffRow& r = diff->rows[row];
  const compare::DiffCell& cell = r.cells[build];
  if (box < 0 || box >= static_cast<int>(cell.layers.size()) || !report(build)) return {};
  switch (m_colouring) {
    case CompareColouring::kPrecision:
      return layerColour(report(build)->layers[cell.layers[box]], EngineColouring::kPrecision, 0);
    case CompareColouring::kTimeDelta: {
      if (build == 0 || m_maxDelta <= 0) return QColor(235, 235, 235);
      const double delta = r.timeDeltas[build];
      return blend(Qt::white, delta > 0 ? QColor(220, 50, 40) : QColor(40, 170, 70),
                   std::fabs(delta) / m_maxDelta);
    }
    case CompareColouring::kError: {
      const double error = m_model->rowError(row), largest = m_model->largestError();
      if (error < 0 || largest <= 0) return QColor(235, 235, 235);
      // Six decades below the largest error are white; the largest is red.
      const double t = error <= 0 ? 0.0 : 1.0 + std::log10(error / largest) / 6.0;
      return blend(Qt::white, QColor(210, 30, 30), t);
    }
  }
  return {};
}

void CompareLanes::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const int half = width() / 2;
  const int columnWidth = half - 2 * kMargin;
  p.setPen(palette().text().color());
  const QString titleA = m_a ? QString::fromStdString(m_a->title) : tr("A: no engine");
  const QString titleB = m_b ? QString::fromStdString(m_b->title) : tr("B: no engine");
  p.drawText(QRect(kMargin, 0, columnWidth, kHeader), Qt::AlignVCenter, tr("A: %1").arg(titleA));
  p.drawText(QRect(half + kMargin, 0, columnWidth, kHeader), Qt::AlignVCenter,
             tr("B: %1").arg(titleB));
  const compare::BuildDiff* diff = m_model ? m_model->diff() : nullptr;
  if (!diff) return;
  for (int row = 0; row < static_cast<int>(diff->rows.size()); ++row) {
    const QRect band = rowRect(row);
    if (row == m_selected) p.fillRect(band, palette().highlight().color().lighter(170));
    p.setPen(QColor(220, 220, 220));
    p.drawLine(band.bottomLeft(), band.bottomRight());
    QRect firstBox[2];
    for (int build = 0; build < 2; ++build) {
      const compare::DiffCell& cell = diff->rows[row].cells[build];
      for (int box = 0; box < static_cast<int>(cell.layers.size()); ++box) {
        const QRect r(build * half + kMargin, band.top() + 3 + box * (kBoxHeight + kBoxGap),
                      columnWidth, kBoxHeight);
        if (box == 0) firstBox[build] = r;
        p.setPen(row == m_selected ? palette().highlight().color() : QColor(120, 120, 120));
        p.setBrush(boxColour(row, build, box));
        p.drawRoundedRect(r, 4, 4);
        const inspector::ReportLayer& layer = report(build)->layers[cell.layers[box]];
        const QString text = QString::fromStdString(layer.name) + QStringLiteral("  ·  ") +
                             QString::fromStdString(layer.precision);
        p.setPen(Qt::black);
        p.drawText(r.adjusted(6, 0, -6, 0), Qt::AlignVCenter,
                   p.fontMetrics().elidedText(text, Qt::ElideMiddle, r.width() - 12));
      }
    }
    if (firstBox[0].isValid() && firstBox[1].isValid()) {
      p.setPen(QPen(QColor(150, 150, 150), 1, Qt::DashLine));
      p.drawLine(firstBox[0].right(), firstBox[0].center().y(), firstBox[1].left(),
                 firstBox[1].center().y());
    }
  }
}

void CompareLanes::mousePressEvent(QMouseEvent* event) {
  const int row = rowAt(event->pos());
  if (row < 0) return;
  setSelectedRow(row);
  emit rowClicked(row);
}

}  // namespace kiln::studio
