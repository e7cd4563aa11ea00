// GraphScene: a laid-out graph as QGraphicsItems (boxes, edges with arrowheads and
// shape labels), with lookup by node id, programmatic selection that does not count
// as the user's, case-insensitive search, recolouring without a new layout, and SVG
// export. The expensive part (edge paths) is prepared off the GUI thread by
// prepareSceneGraph; populate() then only creates items.
#pragma once

#include <QByteArray>
#include <QGraphicsScene>
#include <QHash>
#include <memory>
#include <vector>

#include "graph_items.h"
#include "graph_layout.h"

namespace kiln::studio {

// A graph ready to become items: its description, look, layout and edge geometry.
struct SceneGraph {
  LayoutGraph graph;
  std::vector<NodeLook> looks;  // per node
  LayoutResult layout;
  std::vector<QPainterPath> edgePaths;  // per edge, ending at the arrowhead's base
  std::vector<QPolygonF> arrowHeads;
  // An expanded name-scope group (scope_layout.h), drawn as a titled frame behind the
  // boxes it holds.
  struct GroupFrame {
    QRectF rect;
    QString title;  // "▾ layer.6 · 24 layers · 0.8 ms · FP16 20 · FP32 4"
    QString path;   // "/encoder/layer.6"
  };
  std::vector<GroupFrame> frames;
};

// Builds the edge paths and arrowheads of `layout` (any thread). `looks` must have one
// entry per node.
std::shared_ptr<SceneGraph> prepareSceneGraph(LayoutGraph graph, std::vector<NodeLook> looks,
                                              LayoutResult layout);

// Indices of the `lowered` (lower-cased) texts that contain `text`, case-insensitively,
// in order; none for blank text.
std::vector<int> searchLowered(const std::vector<QString>& lowered, const QString& text);

class GraphScene : public QGraphicsScene {
  Q_OBJECT
 public:
  explicit GraphScene(QObject* parent = nullptr);

  // Replaces the contents with `graph` (GUI thread; creates one item per node and edge).
  void populate(std::shared_ptr<const SceneGraph> graph);
  void clearGraph();
  const SceneGraph* graph() const { return m_graph.get(); }

  int nodeCount() const { return static_cast<int>(m_nodes.size()); }
  int edgeCount() const { return static_cast<int>(m_edges.size()); }
  GraphNodeItem* nodeItem(int index) const;
  GraphEdgeItem* edgeItem(int index) const;
  int indexOf(const QString& id) const;  // -1 when absent
  void setNodeFill(int index, const QColor& fill);

  // Selects the nodes with these ids (others deselected) without emitting
  // userSelectionChanged. Unknown ids are ignored.
  void selectIds(const QStringList& ids);
  QStringList selectedIds() const;
  std::vector<int> selectedIndices() const;  // in node order

  // The group path of the frame at `scenePos` (the innermost), "" when none.
  QString frameAt(const QPointF& scenePos) const;
  int frameCount() const { return static_cast<int>(m_frames.size()); }

  // Node indices whose search text contains `text`, case-insensitively, in node order.
  std::vector<int> search(const QString& text) const;

  // The whole scene as an SVG document (full detail, scene units = SVG pixels).
  QByteArray toSvg(const QString& title) const;

 signals:
  // The selection changed through the user (click, search), not through selectIds.
  void userSelectionChanged();

 private:
  void addFrames();

  std::shared_ptr<const SceneGraph> m_graph;
  std::vector<GraphNodeItem*> m_nodes;
  std::vector<GraphEdgeItem*> m_edges;
  std::vector<QGraphicsItem*> m_frames;
  QHash<QString, int> m_index;
  std::vector<QString> m_searchText;  // lower-cased
  bool m_quiet = false;
};

}  // namespace kiln::studio
