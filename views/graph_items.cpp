#include "graph_items.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QRegularExpression>
#include <QStyleOptionGraphicsItem>
#include <algorithm>

namespace kiln::studio {

namespace {

// Levels of detail (device pixels per scene unit) below which parts are skipped: text
// under ~5 px cannot be read, and skipping it is what keeps big scenes fluid.
constexpr double kTextLod = 0.45;
constexpr double kEdgeLabelLod = 0.7;
constexpr double kArrowLod = 0.2;
constexpr double kOutlineLod = 0.12;

const QColor kBorder(0x55, 0x55, 0x60);
const QColor kSelected(0x1f, 0x5f, 0xd0);
const QColor kEdge(0x80, 0x80, 0x88);
const QColor kEdgeLabel(0x50, 0x50, 0x58);

double lodOf(const QStyleOptionGraphicsItem* option, const QPainter* painter) {
  return option->levelOfDetailFromTransform(painter->worldTransform());
}

}  // namespace

QColor GraphStyle::pluginMarker() {
  return QColor(0x8e, 0x24, 0xaa);
}

// Pixel sizes, not point sizes: scene units are then the same on screen, in SVG and
// in QImage exports, whatever their DPI.
QFont GraphStyle::titleFont() {
  QFont font;
  font.setPixelSize(12);
  font.setBold(true);
  return font;
}

QFont GraphStyle::bodyFont() {
  QFont font;
  font.setPixelSize(11);
  return font;
}

QFont GraphStyle::edgeFont() {
  QFont font;
  font.setPixelSize(10);
  return font;
}

QSizeF GraphStyle::nodeSize(const QStringList& lines) {
  const QFontMetricsF title(titleFont()), body(bodyFont());
  double width = 0, height = 0;
  for (int i = 0; i < lines.size(); ++i) {
    const QFontMetricsF& fm = i == 0 ? title : body;
    width = std::max(width, std::min(kMaxTextWidth, fm.horizontalAdvance(lines[i])));
    height += fm.height();
  }
  return {std::max(56.0, width + 2 * kPadX), std::max(24.0, height + 2 * kPadY)};
}

QSizeF GraphStyle::edgeLabelSize(const QString& text) {
  const QFontMetricsF fm(edgeFont());
  return {fm.horizontalAdvance(text) + 2, fm.height()};
}

QString GraphStyle::shortName(const QString& text) {
  // TensorRT's reformat layers: what tells two apart is the tensor and the layer they feed.
  static const QRegularExpression reformat(
      QStringLiteral("^Reformatt(?:ing CopyNode for|ed) (Input|Output) Tensor (\\d+) to (.+)$"));
  const QRegularExpressionMatch m = reformat.match(text);
  if (!m.hasMatch()) return text;
  return QStringLiteral("Reformat %1%2 \u2192 %3")
      .arg(m.captured(1) == QLatin1String("Input") ? "in" : "out", m.captured(2), m.captured(3));
}

QString GraphStyle::elide(const QString& text, int line) {
  const QFontMetricsF fm(line == 0 ? titleFont() : bodyFont());
  const QString name = shortName(text);
  if (fm.horizontalAdvance(name) <= kMaxTextWidth) return name;
  // A fused name keeps its first and last nodes whole ("Conv_5 + ... + Relu_7"): the
  // middle of "Conv_5 + Add_6 + Relu_7" is where two such names are alike.
  const QStringList pieces = name.split(QStringLiteral(" + "));
  if (pieces.size() > 2) {
    const QString ends = pieces.front() + QStringLiteral(" + \u2026 + ") + pieces.back();
    if (fm.horizontalAdvance(ends) <= kMaxTextWidth) return ends;
  }
  return fm.elidedText(name, Qt::ElideMiddle, kMaxTextWidth);
}

GraphNodeItem::GraphNodeItem(int index, const QString& id, const QStringList& lines,
                             const QSizeF& size, const NodeLook& look)
    : m_index(index),
      m_id(id),
      m_lines(lines),
      m_rect(-size.width() / 2, -size.height() / 2, size.width(), size.height()),
      m_fill(look.fill),
      m_terminal(look.terminal),
      m_plugin(look.plugin) {
  setFlag(ItemIsSelectable);
  setZValue(1);  // boxes above edges
  if (!look.toolTip.isEmpty()) setToolTip(look.toolTip);
}

void GraphNodeItem::setFill(const QColor& fill) {
  if (fill == m_fill) return;
  m_fill = fill;
  update();
}

QRectF GraphNodeItem::boundingRect() const {
  return m_rect.adjusted(-2, -2, 2, 2);
}

void GraphNodeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const double lod = lodOf(option, painter);
  const bool selected = isSelected();
  if (lod < kOutlineLod) {  // far out: a filled rectangle is all that shows
    painter->fillRect(m_rect, selected ? kSelected : m_fill);
    return;
  }
  painter->setRenderHint(QPainter::Antialiasing, lod > kTextLod);
  QPen pen(selected ? kSelected : kBorder, selected ? 3 : 1);
  if (m_plugin && !selected) pen = QPen(GraphStyle::pluginMarker(), 2.5, Qt::DashLine);
  pen.setCosmetic(true);
  painter->setPen(pen);
  painter->setBrush(m_fill);
  const double radius = m_terminal ? m_rect.height() / 2 : 3;
  painter->drawRoundedRect(m_rect, radius, radius);
  if (lod < kTextLod) return;
  painter->setPen(Qt::black);
  // Painting happens on the GUI thread only: the fonts and metrics are made once.
  static const QFont title = GraphStyle::titleFont(), body = GraphStyle::bodyFont();
  static const QFontMetricsF titleMetrics(title), bodyMetrics(body);
  const double textWidth = m_rect.width() - 2 * GraphStyle::kPadX;
  double y = m_rect.top() + GraphStyle::kPadY;
  for (int i = 0; i < m_lines.size(); ++i) {
    painter->setFont(i == 0 ? title : body);
    const QFontMetricsF& fm = i == 0 ? titleMetrics : bodyMetrics;
    const QRectF line(m_rect.left() + GraphStyle::kPadX, y, textWidth, fm.height());
    painter->drawText(line, Qt::AlignCenter, fm.elidedText(m_lines[i], Qt::ElideMiddle, textWidth));
    y += fm.height();
  }
}

QVariant GraphNodeItem::itemChange(GraphicsItemChange change, const QVariant& value) {
  // Edges of a selected box are drawn highlighted: repaint them.
  if (change == ItemSelectedHasChanged)
    for (GraphEdgeItem* edge : m_edges) edge->update();
  return QGraphicsItem::itemChange(change, value);
}

GraphEdgeItem::GraphEdgeItem(const QPainterPath& path, const QPolygonF& arrowHead,
                             const QString& label, const QRectF& labelRect, GraphNodeItem* from,
                             GraphNodeItem* to)
    : m_path(path),
      m_arrowHead(arrowHead),
      m_label(label),
      m_labelRect(labelRect),
      m_from(from),
      m_to(to) {
  m_bounds = m_path.boundingRect() | m_arrowHead.boundingRect();
  if (!m_label.isEmpty()) m_bounds |= m_labelRect;
  m_bounds.adjust(-2, -2, 2, 2);
  setAcceptedMouseButtons(Qt::NoButton);  // clicks go through to the background
  if (m_from) m_from->addEdge(this);
  if (m_to) m_to->addEdge(this);
}

QPainterPath GraphEdgeItem::shape() const {
  QPainterPathStroker stroker;
  stroker.setWidth(6);
  QPainterPath shape = stroker.createStroke(m_path);
  shape.addPolygon(m_arrowHead);
  if (!m_label.isEmpty()) shape.addRect(m_labelRect);
  shape.setFillRule(Qt::WindingFill);
  return shape;
}

void GraphEdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const double lod = lodOf(option, painter);
  const bool selected = (m_from && m_from->isSelected()) || (m_to && m_to->isSelected());
  painter->setRenderHint(QPainter::Antialiasing, lod > kTextLod);
  QPen pen(selected ? kSelected : kEdge, selected ? 2 : 1);
  pen.setCosmetic(true);
  painter->setPen(pen);
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(m_path);
  if (lod < kArrowLod) return;
  painter->setBrush(selected ? kSelected : kEdge);
  painter->drawPolygon(m_arrowHead);
  if (lod < kEdgeLabelLod || m_label.isEmpty()) return;
  static const QFont font = GraphStyle::edgeFont();
  painter->setPen(kEdgeLabel);
  painter->setFont(font);
  painter->drawText(m_labelRect, Qt::AlignCenter, m_label);
}

}  // namespace kiln::studio
