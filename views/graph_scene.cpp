#include "graph_scene.h"

#include <QBuffer>
#include <QFontMetricsF>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QPen>
#include <QPainter>
#include <QSvgGenerator>
#include <QLineF>
#include <algorithm>
#include <cmath>

namespace kiln::studio {

namespace {

constexpr double kArrowLength = 8;
constexpr double kArrowHalfWidth = 3.5;
constexpr double kSceneMargin = 40;
// How many scene-sized spans the edges may cover in all before the scene goes
// unindexed (see usesIndexFor).
constexpr double kMaxIndexedEdgeSpans = 256;

QPointF unit(const QPointF& v) {
  const double length = std::hypot(v.x(), v.y());
  return length > 1e-9 ? v / length : QPointF(0, 1);
}

// Path and arrowhead of one route. dot ends its splines at the arrowhead's base and
// gives the tip; the layered layout ends at the tip, so the base is found by backing
// off along the last segment.
void edgeGeometry(const EdgeRoute& route, QPainterPath* path, QPolygonF* arrow) {
  std::vector<QPointF> p = route.points;
  if (p.size() < 2) return;
  QPointF tip = route.arrowTip;
  QPointF base = p.back();
  if (QLineF(tip, base).length() < 1) {
    base = tip - unit(tip - p[p.size() - 2]) * kArrowLength;
    p.back() = base;
  }
  path->moveTo(p[0]);
  if (route.bezier) {
    for (size_t i = 1; i + 2 < p.size(); i += 3) path->cubicTo(p[i], p[i + 1], p[i + 2]);
  } else {
    for (size_t i = 1; i < p.size(); ++i) path->lineTo(p[i]);
  }
  const QPointF d = unit(tip - base);
  const QPointF n(-d.y(), d.x());
  *arrow << tip << base + n * kArrowHalfWidth << base - n * kArrowHalfWidth;
}

// Qt's BSP index files an item under every leaf its bounding rectangle crosses, so
// edges that span much of a huge graph make it quadratic in memory: a trtexec export
// of 40,000 layers that all read one tensor took 5.4 GB (200,000 layers ran out of
// memory) where the CLI reads the file in under a second. Past a budget of such spans
// the scene is left unindexed: painting and hit tests then scan the items linearly,
// which costs milliseconds at that size (the same 40,000 layers: 0.7 GB, 3.7 s).
bool usesIndexFor(const SceneGraph& graph) {
  const QRectF bounds = graph.layout.bounds;
  if (bounds.width() <= 0 || bounds.height() <= 0) return true;
  double spans = 0;
  for (const QPainterPath& path : graph.edgePaths) {
    const QRectF r = path.boundingRect();
    spans += r.width() / bounds.width() + r.height() / bounds.height();
    if (spans > kMaxIndexedEdgeSpans) return false;
  }
  return true;
}

}  // namespace

std::shared_ptr<SceneGraph> prepareSceneGraph(LayoutGraph graph, std::vector<NodeLook> looks,
                                              LayoutResult layout) {
  auto scene = std::make_shared<SceneGraph>();
  scene->edgePaths.resize(layout.edges.size());
  scene->arrowHeads.resize(layout.edges.size());
  for (size_t e = 0; e < layout.edges.size(); ++e)
    edgeGeometry(layout.edges[e], &scene->edgePaths[e], &scene->arrowHeads[e]);
  looks.resize(graph.nodes.size());
  scene->graph = std::move(graph);
  scene->looks = std::move(looks);
  scene->layout = std::move(layout);
  return scene;
}

GraphScene::GraphScene(QObject* parent) : QGraphicsScene(parent) {
  connect(this, &QGraphicsScene::selectionChanged, this, [this] {
    if (!m_quiet) emit userSelectionChanged();
  });
}

void GraphScene::clearGraph() {
  m_quiet = true;
  clear();
  m_quiet = false;
  m_nodes.clear();
  m_edges.clear();
  m_frames.clear();
  m_index.clear();
  m_searchText.clear();
  m_graph.reset();
  setSceneRect(QRectF());
}

void GraphScene::populate(std::shared_ptr<const SceneGraph> graph) {
  clearGraph();
  m_graph = std::move(graph);
  setItemIndexMethod(usesIndexFor(*m_graph) ? QGraphicsScene::BspTreeIndex
                                            : QGraphicsScene::NoIndex);
  const LayoutGraph& g = m_graph->graph;
  const LayoutResult& layout = m_graph->layout;
  m_nodes.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const LayoutNode& node = g.nodes[i];
    auto* item = new GraphNodeItem(static_cast<int>(i), node.id, node.lines,
                                   QSizeF(node.width, node.height), m_graph->looks[i]);
    item->setPos(layout.centres[i]);
    addItem(item);
    m_nodes.push_back(item);
    m_index.insert(node.id, static_cast<int>(i));
    m_searchText.push_back(m_graph->looks[i].searchText.toLower());
  }
  m_edges.reserve(g.edges.size());
  for (size_t e = 0; e < g.edges.size(); ++e) {
    const LayoutEdge& edge = g.edges[e];
    const QRectF labelRect(
        layout.edges[e].labelCentre - QPointF(edge.labelWidth / 2, edge.labelHeight / 2),
        QSizeF(edge.labelWidth, edge.labelHeight));
    auto* item = new GraphEdgeItem(m_graph->edgePaths[e], m_graph->arrowHeads[e], edge.label,
                                   labelRect, m_nodes[edge.from], m_nodes[edge.to]);
    if (!edge.toolTip.isEmpty()) item->setToolTip(edge.toolTip);
    addItem(item);
    m_edges.push_back(item);
  }
  addFrames();
  setSceneRect(layout.bounds.adjusted(-kSceneMargin, -kSceneMargin, kSceneMargin, kSceneMargin));
}

void GraphScene::addFrames() {
  // Outer frames first, so inner ones paint over them; all behind edges and boxes.
  const QFont font = GraphStyle::bodyFont();
  const QFontMetricsF metrics(font);
  for (const SceneGraph::GroupFrame& frame : m_graph->frames) {
    auto* rect = new QGraphicsRectItem(frame.rect);
    rect->setPen(QPen(QColor(0x8a, 0x92, 0xb8), 1, Qt::DashLine));
    rect->setBrush(QColor(0x5a, 0x66, 0xb0, 16));
    rect->setZValue(-1);
    rect->setData(0, frame.path);
    rect->setToolTip(frame.path + tr("\nDouble-click the frame to close it"));
    auto* title = new QGraphicsSimpleTextItem(
        metrics.elidedText(frame.title, Qt::ElideRight, frame.rect.width() - 12), rect);
    title->setFont(font);
    title->setBrush(QColor(0x3a, 0x40, 0x68));
    title->setPos(frame.rect.topLeft() + QPointF(6, 5));
    addItem(rect);
    m_frames.push_back(rect);
  }
}

QString GraphScene::frameAt(const QPointF& scenePos) const {
  for (auto it = m_frames.rbegin(); it != m_frames.rend(); ++it)
    if ((*it)->sceneBoundingRect().contains(scenePos)) return (*it)->data(0).toString();
  return QString();
}

GraphNodeItem* GraphScene::nodeItem(int index) const {
  return index >= 0 && index < nodeCount() ? m_nodes[index] : nullptr;
}

GraphEdgeItem* GraphScene::edgeItem(int index) const {
  return index >= 0 && index < edgeCount() ? m_edges[index] : nullptr;
}

int GraphScene::indexOf(const QString& id) const {
  return m_index.value(id, -1);
}

void GraphScene::setNodeFill(int index, const QColor& fill) {
  if (GraphNodeItem* item = nodeItem(index)) item->setFill(fill);
}

void GraphScene::selectIds(const QStringList& ids) {
  m_quiet = true;
  clearSelection();
  for (const QString& id : ids)
    if (GraphNodeItem* item = nodeItem(indexOf(id))) item->setSelected(true);
  m_quiet = false;
}

std::vector<int> GraphScene::selectedIndices() const {
  std::vector<int> indices;
  for (QGraphicsItem* item : selectedItems())
    if (auto* node = dynamic_cast<GraphNodeItem*>(item)) indices.push_back(node->index());
  std::sort(indices.begin(), indices.end());
  return indices;
}

QStringList GraphScene::selectedIds() const {
  QStringList ids;
  for (int i : selectedIndices()) ids << m_nodes[i]->id();
  return ids;
}

std::vector<int> searchLowered(const std::vector<QString>& lowered, const QString& text) {
  std::vector<int> matches;
  const QString needle = text.trimmed().toLower();
  if (needle.isEmpty()) return matches;
  for (size_t i = 0; i < lowered.size(); ++i)
    if (lowered[i].contains(needle)) matches.push_back(static_cast<int>(i));
  return matches;
}

std::vector<int> GraphScene::search(const QString& text) const {
  return searchLowered(m_searchText, text);
}

QByteArray GraphScene::toSvg(const QString& title) const {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  const QRectF source = sceneRect();
  QSvgGenerator generator;
  generator.setOutputDevice(&buffer);
  generator.setSize(source.size().toSize());
  generator.setViewBox(QRectF(QPointF(0, 0), source.size()));
  generator.setTitle(title);
  generator.setDescription(QStringLiteral("Kiln graph, %1 nodes").arg(nodeCount()));
  QPainter painter(&generator);
  // render() is not const, but drawing changes nothing in the scene.
  const_cast<GraphScene*>(this)->render(&painter, QRectF(QPointF(0, 0), source.size()), source);
  painter.end();
  return bytes;
}

}  // namespace kiln::studio
