#include "graph_layout.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <QElapsedTimer>
#include <algorithm>
#include <cmath>
#include <mutex>

#include "layered_layout.h"

namespace kiln::studio {

namespace {

// Graphviz keeps global state (the cgraph default discipline, error handlers, the
// text layout cache): every call into it holds this mutex.
std::mutex& graphvizMutex() {
  static std::mutex mutex;
  return mutex;
}

// One context for the process, created on first use under the mutex. gvContext()
// loads the installed plugins (the dot layout among them).
GVC_t* graphvizContext() {
  static GVC_t* context = gvContext();
  return context;
}

Status cancelledStatus() {
  return Status(StatusCode::kCancelled, "layout cancelled");
}

char* cstr(const char* text) {
  return const_cast<char*>(text);
}

void setGraphAttr(Agraph_t* g, const char* name, const QString& value) {
  agattr(g, AGRAPH, cstr(name), cstr(value.toUtf8().constData()));
}

class DotLayout {
 public:
  DotLayout(const LayoutGraph& graph, const LayoutOptions& options)
      : m_graph(graph), m_options(options) {}
  ~DotLayout();
  Result<LayoutResult> run();

 private:
  bool cancelled() const { return m_options.cancel && m_options.cancel->load(); }
  void build();
  LayoutResult read();
  EdgeRoute readEdge(size_t e) const;

  const LayoutGraph& m_graph;
  const LayoutOptions& m_options;
  Agraph_t* m_g = nullptr;
  bool m_laidOut = false;
  std::vector<Agnode_t*> m_nodes;
  std::vector<Agedge_t*> m_edges;
  double m_top = 0;  // bounding box top in Graphviz's y-up coordinates
};

DotLayout::~DotLayout() {
  if (m_laidOut) gvFreeLayout(graphvizContext(), m_g);
  if (m_g) agclose(m_g);
}

void DotLayout::build() {
  m_g = agopen(cstr("kiln"), Agdirected, nullptr);
  setGraphAttr(m_g, "rankdir", "TB");
  setGraphAttr(m_g, "nodesep", QString::number(m_options.nodeGap / 72.0));
  // Edge labels are not given to dot: they double its ranks, took 1.8 s on a 300-node
  // graph that lays out in 0.02 s without, and crashed dot 2.43 at 600 nodes. They are
  // placed like the layered layout places them, in room added to the rank gap.
  double labelRoom = 0;
  for (const LayoutEdge& e : m_graph.edges)
    if (!e.label.isEmpty()) labelRoom = std::max(labelRoom, e.labelHeight + 6);
  setGraphAttr(m_g, "ranksep", QString::number((m_options.rankGap + labelRoom) / 72.0));
  // Speed: network simplex iterations capped at 2 x nodes (nslimit: x placement,
  // nslimit1: ranking). Measured on a 600-node graph with long skip edges: 4.6 s
  // without, 0.4 s with; the drawings of small graphs do not change visibly.
  // (mclimit and searchsize made that graph slower, so they are left alone.)
  setGraphAttr(m_g, "nslimit", "2");
  setGraphAttr(m_g, "nslimit1", "2");
  setGraphAttr(m_g, "remincross", "false");
  Agsym_t* shape = agattr(m_g, AGNODE, cstr("shape"), cstr("box"));
  Agsym_t* fixed = agattr(m_g, AGNODE, cstr("fixedsize"), cstr("true"));
  Agsym_t* nodeLabel = agattr(m_g, AGNODE, cstr("label"), cstr(""));
  Agsym_t* width = agattr(m_g, AGNODE, cstr("width"), cstr("1"));
  Agsym_t* height = agattr(m_g, AGNODE, cstr("height"), cstr("0.5"));
  (void)shape;
  (void)fixed;
  (void)nodeLabel;
  m_nodes.reserve(m_graph.nodes.size());
  for (size_t i = 0; i < m_graph.nodes.size(); ++i) {
    const std::string name = std::string("n").append(std::to_string(i));
    Agnode_t* n = agnode(m_g, cstr(name.c_str()), 1);
    agxset(n, width, cstr(QString::number(m_graph.nodes[i].width / 72.0).toUtf8().constData()));
    agxset(n, height, cstr(QString::number(m_graph.nodes[i].height / 72.0).toUtf8().constData()));
    m_nodes.push_back(n);
  }
  m_edges.reserve(m_graph.edges.size());
  for (size_t e = 0; e < m_graph.edges.size(); ++e) {
    const LayoutEdge& edge = m_graph.edges[e];
    const std::string name = std::string("e").append(std::to_string(e));
    m_edges.push_back(agedge(m_g, m_nodes[edge.from], m_nodes[edge.to], cstr(name.c_str()), 1));
  }
}

EdgeRoute DotLayout::readEdge(size_t e) const {
  EdgeRoute route;
  Agedge_t* ge = m_edges[e];
  auto flip = [this](pointf p) { return QPointF(p.x, m_top - p.y); };
  const splines* spl = ED_spl(ge);
  if (spl && spl->size > 0 && spl->list[0].size >= 4) {
    const bezier& bz = spl->list[0];
    route.bezier = true;
    for (int i = 0; i < bz.size; ++i) route.points.push_back(flip(bz.list[i]));
    route.arrowTip = bz.eflag ? flip(bz.ep) : route.points.back();
  } else {  // no route (Graphviz gave up): a straight line between the centres
    const LayoutEdge& edge = m_graph.edges[e];
    route.points = {flip(ND_coord(m_nodes[edge.from])), flip(ND_coord(m_nodes[edge.to]))};
    route.arrowTip = route.points.back();
  }
  const LayoutEdge& edge = m_graph.edges[e];
  route.labelCentre = labelCentreBeside(route.points, edge.labelWidth, edge.labelHeight);
  return route;
}

LayoutResult DotLayout::read() {
  LayoutResult result;
  result.algorithm = LayoutAlgorithm::kDot;
  const boxf bb = GD_bb(m_g);
  m_top = bb.UR.y;
  for (Agnode_t* n : m_nodes)
    result.centres.push_back(QPointF(ND_coord(n).x, m_top - ND_coord(n).y));
  for (size_t e = 0; e < m_edges.size(); ++e) result.edges.push_back(readEdge(e));
  result.bounds = QRectF(QPointF(bb.LL.x, 0), QPointF(bb.UR.x, bb.UR.y - bb.LL.y));
  return result;
}

// Called with graphvizMutex() held (the destructor frees Graphviz memory too).
Result<LayoutResult> DotLayout::run() {
  GVC_t* gvc = graphvizContext();
  if (!gvc) return internalError("Graphviz: could not create a context");
  build();
  if (cancelled()) return cancelledStatus();
  if (gvLayout(gvc, m_g, "dot") != 0) return internalError("Graphviz dot layout failed");
  m_laidOut = true;
  if (cancelled()) return cancelledStatus();
  return read();
}

Status checkEdges(const LayoutGraph& graph) {
  const int n = static_cast<int>(graph.nodes.size());
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    const LayoutEdge& edge = graph.edges[e];
    if (edge.from < 0 || edge.from >= n || edge.to < 0 || edge.to >= n)
      return invalidArgument("layout edge #" + std::to_string(e) + " (" +
                             std::to_string(edge.from) + " -> " + std::to_string(edge.to) +
                             ") names a node outside 0.." + std::to_string(n - 1));
  }
  return Status::ok();
}

}  // namespace

const char* layoutAlgorithmName(LayoutAlgorithm algorithm) {
  switch (algorithm) {
    case LayoutAlgorithm::kAuto:
      return "automatic";
    case LayoutAlgorithm::kDot:
      return "Graphviz dot";
    case LayoutAlgorithm::kLayered:
      return "fast layered";
  }
  return "?";
}

LayoutAlgorithm chooseLayoutAlgorithm(const LayoutGraph& graph) {
  if (static_cast<int>(graph.nodes.size()) >= kLargeGraphNodes) return LayoutAlgorithm::kLayered;
  const LayerRanking ranking = rankLayers(graph);
  return static_cast<long long>(graph.nodes.size()) + ranking.virtualNodes > kDotWorkBudget
             ? LayoutAlgorithm::kLayered
             : LayoutAlgorithm::kDot;
}

Result<LayoutResult> layoutGraph(const LayoutGraph& graph, const LayoutOptions& options) {
  KILN_RETURN_IF_ERROR(checkEdges(graph));
  if (graph.nodes.empty()) {
    LayoutResult empty;
    empty.algorithm = options.algorithm == LayoutAlgorithm::kDot ? LayoutAlgorithm::kDot
                                                                 : LayoutAlgorithm::kLayered;
    return empty;
  }
  LayoutAlgorithm algorithm = options.algorithm;
  if (algorithm == LayoutAlgorithm::kAuto) algorithm = chooseLayoutAlgorithm(graph);
  if (algorithm == LayoutAlgorithm::kLayered) return layeredLayout(graph, options);
  QElapsedTimer timer;
  timer.start();
  std::unique_lock<std::mutex> lock(graphvizMutex());
  Result<LayoutResult> result = [&] {
    DotLayout dot(graph, options);
    return dot.run();
  }();
  lock.unlock();
  if (result.isOk()) result->seconds = timer.nsecsElapsed() / 1e9;
  return result;
}

}  // namespace kiln::studio
