// Graph items: the boxes and edges a GraphScene holds, and GraphStyle, the fonts and
// box sizes they share with the graph builders. Items paint with a level of detail
// (text only when it can be read, no arrowheads far out) so scenes of several
// thousand nodes stay smooth. GraphStyle's functions are reentrant (QFontMetricsF
// on its own fonts), so builders measure boxes on JobRunner threads.
#pragma once

#include <QColor>
#include <QFont>
#include <QGraphicsItem>
#include <QPainterPath>
#include <QPolygonF>
#include <QStringList>
#include <vector>

namespace kiln::studio {

class GraphStyle {
 public:
  static constexpr double kMaxTextWidth = 190;  // longer lines are elided
  static constexpr double kPadX = 8;
  static constexpr double kPadY = 4;
  static QFont titleFont();  // first line of a box (op type, layer name)
  static QFont bodyFont();   // other lines
  static QFont edgeFont();   // edge labels (shapes)
  // The dashed border (and legend swatch) that marks plugin layers.
  static QColor pluginMarker();
  // Box size for `lines` (the first in the title font), at least 56 x 24 points.
  static QSizeF nodeSize(const QStringList& lines);
  static QSizeF edgeLabelSize(const QString& text);
  // `text` shortened to kMaxTextWidth in the font of line `line`, keeping what tells
  // names apart: shortName() first; a fused "A + B + C" keeps A and C whole
  // ("A + … + C"); anything else is elided in the middle.
  static QString elide(const QString& text, int line);
  // TensorRT's "Reformatting CopyNode for Input Tensor 0 to X" (and "Reformatted ...")
  // as "Reformat in0 → X"; other names unchanged.
  static QString shortName(const QString& text);
};

// How one node looks, beside its layout (GraphNodeItem reads both).
struct NodeLook {
  QColor fill = Qt::white;
  bool terminal = false;  // graph input/output or engine binding: rounded ends
  bool plugin = false;    // a plugin layer (custom op): dashed pluginMarker() border
  QString toolTip;
  QString searchText;  // what search matches (case-insensitive substring)
};

class GraphEdgeItem;

class GraphNodeItem : public QGraphicsItem {
 public:
  GraphNodeItem(int index, const QString& id, const QStringList& lines, const QSizeF& size,
                const NodeLook& look);
  int index() const { return m_index; }
  const QString& id() const { return m_id; }
  const QStringList& lines() const { return m_lines; }
  QColor fill() const { return m_fill; }
  bool isPlugin() const { return m_plugin; }
  void setFill(const QColor& fill);
  void addEdge(GraphEdgeItem* edge) { m_edges.push_back(edge); }

  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 protected:
  QVariant itemChange(GraphicsItemChange change, const QVariant& value) override;

 private:
  int m_index;
  QString m_id;
  QStringList m_lines;
  QRectF m_rect;
  QColor m_fill;
  bool m_terminal;
  bool m_plugin;
  std::vector<GraphEdgeItem*> m_edges;
};

// An edge: a path ending in an arrowhead, with an optional label (a tensor shape).
class GraphEdgeItem : public QGraphicsItem {
 public:
  GraphEdgeItem(const QPainterPath& path, const QPolygonF& arrowHead, const QString& label,
                const QRectF& labelRect, GraphNodeItem* from, GraphNodeItem* to);
  GraphNodeItem* from() const { return m_from; }
  GraphNodeItem* to() const { return m_to; }
  const QString& label() const { return m_label; }

  QRectF boundingRect() const override { return m_bounds; }
  // The line, arrowhead and label, not the bounding box: a tooltip shows only over them.
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  QPainterPath m_path;
  QPolygonF m_arrowHead;
  QString m_label;
  QRectF m_labelRect;
  QRectF m_bounds;
  GraphNodeItem* m_from;
  GraphNodeItem* m_to;
};

}  // namespace kiln::studio
