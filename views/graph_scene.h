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
};

// Builds the edge paths and arrowheads of `layout` (any thread). `looks` must have one
// entry per node.
std::shared_ptr<SceneGraph> prepareSceneGraph(LayoutGraph graph, std::vector<NodeLook> looks,
                                              LayoutResult layout);

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

  // Node indices whose search text contains `text`, case-insensitively, in node order.
  std::vector<int> search(const QString& text) const;

  // The whole scene as an SVG document (full detail, scene units = SVG pixels).
  QByteArray toSvg(const QString& title) const;

 signals:
  // The selection changed through the user (click, search), not through selectIds.
  void userSelectionChanged();

 private:
  std::shared_ptr<const SceneGraph> m_graph;
  std::vector<GraphNodeItem*> m_nodes;
  std::vector<GraphEdgeItem*> m_edges;
  QHash<QString, int> m_index;
  std::vector<QString> m_searchText;  // lower-cased
  bool m_quiet = false;
};

}  // namespace kiln::studio
