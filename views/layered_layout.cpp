#include "layered_layout.h"

#include <QElapsedTimer>
#include <algorithm>
#include <functional>
#include <queue>

namespace kiln::studio {

namespace {

constexpr double kVirtualWidth = 2;  // the width a long edge takes in the ranks it crosses
constexpr double kVirtualGap = 6;    // between two long edges in one rank
// More virtual nodes than this (a few hundred thousand cost ~100 MB and seconds): the
// longest edges are drawn straight instead, shortest spans kept first.
constexpr long long kMaxVirtualNodes = 300000;
constexpr int kOrderSweeps = 6;      // down+up barycentre sweeps
constexpr int kPlacementPasses = 8;  // alternating x placement passes
// Pull weights: a long edge's virtual chain is kept straighter than a short edge
// (the weights dot uses for the same purpose: 1, 2, 8).
constexpr double kWeightRealReal = 1, kWeightRealVirtual = 2, kWeightVirtualVirtual = 8;

struct Vertex {
  double width = kVirtualWidth;
  double height = 0;
  int rank = 0;
  int order = 0;
  double x = 0;
  double key = 0;  // initial order
  bool real = false;
};

struct Link {
  int other;
  double weight;
};

// Minimizes sum (x_i - desired_i)^2 subject to x_{i+1} - x_i >= gap_i (isotonic
// regression on x_i - offset_i, pool-adjacent-violators, O(n)).
void isotonicPlace(const std::vector<double>& desired, const std::vector<double>& minGap,
                   std::vector<double>* x) {
  const size_t n = desired.size();
  std::vector<double> offset(n, 0);
  for (size_t i = 1; i < n; ++i) offset[i] = offset[i - 1] + minGap[i - 1];
  struct Block {
    double sum;
    int count;
    double mean() const { return sum / count; }
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < n; ++i) {
    blocks.push_back({desired[i] - offset[i], 1});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].mean() > blocks.back().mean()) {
      blocks[blocks.size() - 2].sum += blocks.back().sum;
      blocks[blocks.size() - 2].count += blocks.back().count;
      blocks.pop_back();
    }
  }
  x->resize(n);
  size_t i = 0;
  for (const Block& b : blocks)
    for (int k = 0; k < b.count; ++k, ++i) (*x)[i] = b.mean() + offset[i];
}

class Layered {
 public:
  Layered(const LayoutGraph& graph, const LayoutOptions& options)
      : m_graph(graph), m_options(options) {}
  Result<LayoutResult> run();

 private:
  bool cancelled() const { return m_options.cancel && m_options.cancel->load(); }
  void buildVertices(const LayerRanking& ranking);
  void link(int a, int b);
  void orderRanks();
  void sortRank(int r, const std::vector<std::vector<Link>>& neighbours);
  void placeRank(int r, bool up, bool down);
  void placeY();
  EdgeRoute route(size_t e) const;

  const LayoutGraph& m_graph;
  const LayoutOptions& m_options;
  LayerRanking m_ranking;
  std::vector<Vertex> m_vertices;               // real nodes, then virtual nodes
  std::vector<std::vector<Link>> m_up, m_down;  // neighbours in the rank above / below
  std::vector<std::vector<int>> m_chains;       // per edge: vertices, top to bottom
  std::vector<std::vector<int>> m_ranks;        // vertices per rank, in order
  std::vector<double> m_rankY, m_rankHeight;
};

void Layered::link(int a, int b) {
  const bool va = !m_vertices[a].real, vb = !m_vertices[b].real;
  const double w = va && vb   ? kWeightVirtualVirtual
                   : va || vb ? kWeightRealVirtual
                              : kWeightRealReal;
  m_down[a].push_back({b, w});
  m_up[b].push_back({a, w});
}

// The longest span that still gets virtual nodes: all of them unless that would make
// more than kMaxVirtualNodes, in which case the longest edges are left straight.
int chainedSpanLimit(const std::vector<int>& spans, long long virtualNodes) {
  if (virtualNodes <= kMaxVirtualNodes) return 1 << 30;
  std::vector<int> sorted = spans;
  std::sort(sorted.begin(), sorted.end());
  long long total = 0;
  int limit = 1;
  for (int span : sorted) {
    if (total + std::max(0, span - 1) > kMaxVirtualNodes) break;
    total += std::max(0, span - 1);
    limit = span;
  }
  return limit;
}

void Layered::buildVertices(const LayerRanking& ranking) {
  const size_t n = m_graph.nodes.size();
  m_vertices.resize(n);
  for (size_t i = 0; i < n; ++i) {
    Vertex& v = m_vertices[i];
    v.width = m_graph.nodes[i].width;
    v.height = m_graph.nodes[i].height;
    v.rank = ranking.rank[i];
    v.key = static_cast<double>(i);
    v.real = true;
  }
  std::vector<int> spans;
  for (const LayoutEdge& e : m_graph.edges)
    spans.push_back(std::abs(ranking.rank[e.to] - ranking.rank[e.from]));
  const int maxSpan = chainedSpanLimit(spans, ranking.virtualNodes);
  m_up.assign(n, {});
  m_down.assign(n, {});
  m_chains.assign(m_graph.edges.size(), {});
  for (size_t e = 0; e < m_graph.edges.size(); ++e) {
    const LayoutEdge& edge = m_graph.edges[e];
    if (edge.from == edge.to) continue;
    const int a = ranking.reversed[e] ? edge.to : edge.from;
    const int b = ranking.reversed[e] ? edge.from : edge.to;
    std::vector<int>& chain = m_chains[e];
    chain.push_back(a);
    if (spans[e] <= maxSpan) {
      for (int r = m_vertices[a].rank + 1; r < m_vertices[b].rank; ++r) {
        Vertex v;
        v.rank = r;
        v.key = m_vertices[a].key + 0.5;
        m_vertices.push_back(v);
        m_up.emplace_back();
        m_down.emplace_back();
        chain.push_back(static_cast<int>(m_vertices.size()) - 1);
      }
    }
    chain.push_back(b);
    if (spans[e] <= maxSpan)
      for (size_t i = 0; i + 1 < chain.size(); ++i) link(chain[i], chain[i + 1]);
  }
}

void Layered::sortRank(int r, const std::vector<std::vector<Link>>& neighbours) {
  std::vector<int>& rank = m_ranks[r];
  std::vector<std::pair<double, int>> keyed;
  keyed.reserve(rank.size());
  for (int v : rank) {
    double sum = 0, weight = 0;
    for (const Link& l : neighbours[v]) {
      sum += l.weight * m_vertices[l.other].order;
      weight += l.weight;
    }
    keyed.push_back({weight > 0 ? sum / weight : m_vertices[v].order, v});
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < keyed.size(); ++i) {
    rank[i] = keyed[i].second;
    m_vertices[rank[i]].order = static_cast<int>(i);
  }
}

void Layered::orderRanks() {
  int rankCount = 0;
  for (const Vertex& v : m_vertices) rankCount = std::max(rankCount, v.rank + 1);
  m_ranks.assign(rankCount, {});
  for (size_t v = 0; v < m_vertices.size(); ++v)
    m_ranks[m_vertices[v].rank].push_back(static_cast<int>(v));
  for (auto& rank : m_ranks) {
    std::stable_sort(rank.begin(), rank.end(),
                     [&](int a, int b) { return m_vertices[a].key < m_vertices[b].key; });
    for (size_t i = 0; i < rank.size(); ++i) m_vertices[rank[i]].order = static_cast<int>(i);
  }
  for (int sweep = 0; sweep < kOrderSweeps && !cancelled(); ++sweep) {
    for (int r = 1; r < rankCount; ++r) sortRank(r, m_up);
    for (int r = rankCount - 2; r >= 0; --r) sortRank(r, m_down);
  }
}

void Layered::placeRank(int r, bool up, bool down) {
  const std::vector<int>& rank = m_ranks[r];
  std::vector<double> desired(rank.size()), gaps(rank.size(), 0), x;
  for (size_t i = 0; i < rank.size(); ++i) {
    const int v = rank[i];
    double sum = 0, weight = 0;
    auto add = [&](const std::vector<Link>& links) {
      for (const Link& l : links) {
        sum += l.weight * m_vertices[l.other].x;
        weight += l.weight;
      }
    };
    if (up) add(m_up[v]);
    if (down) add(m_down[v]);
    desired[i] = weight > 0 ? sum / weight : m_vertices[v].x;
    if (i + 1 < rank.size()) {
      const Vertex& next = m_vertices[rank[i + 1]];
      // Long edges side by side may run close; boxes keep the full gap.
      const double gap = m_vertices[v].real && next.real   ? m_options.nodeGap
                         : m_vertices[v].real || next.real ? m_options.nodeGap / 2
                                                           : kVirtualGap;
      gaps[i] = (m_vertices[v].width + next.width) / 2 + gap;
    }
  }
  isotonicPlace(desired, gaps, &x);
  for (size_t i = 0; i < rank.size(); ++i) m_vertices[rank[i]].x = x[i];
}

void Layered::placeY() {
  const int rankCount = static_cast<int>(m_ranks.size());
  m_rankHeight.assign(rankCount, 0);
  std::vector<double> labelRoom(rankCount, 0);
  for (const Vertex& v : m_vertices)
    m_rankHeight[v.rank] = std::max(m_rankHeight[v.rank], v.height);
  for (const LayoutEdge& e : m_graph.edges)
    if (!e.label.isEmpty()) {
      double& room = labelRoom[m_vertices[e.from].rank];
      room = std::max(room, e.labelHeight + 6);
    }
  m_rankY.assign(rankCount, 0);
  for (int r = 0; r < rankCount; ++r) {
    m_rankY[r] = r == 0 ? m_rankHeight[0] / 2
                        : m_rankY[r - 1] + m_rankHeight[r - 1] / 2 + m_options.rankGap +
                              labelRoom[r - 1] + m_rankHeight[r] / 2;
  }
}

EdgeRoute Layered::route(size_t e) const {
  const LayoutEdge& edge = m_graph.edges[e];
  EdgeRoute route;
  auto& p = route.points;
  const Vertex& from = m_vertices[edge.from];
  if (edge.from == edge.to) {  // a loop on the box's right side
    const double x = from.x + from.width / 2, y = m_rankY[from.rank];
    p = {{x, y - from.height / 4},
         {x + 16, y - from.height / 4},
         {x + 16, y + from.height / 4},
         {x, y + from.height / 4}};
  } else {
    const std::vector<int>& chain = m_chains[e];
    const Vertex& top = m_vertices[chain.front()];
    const Vertex& bottom = m_vertices[chain.back()];
    p.push_back({top.x, m_rankY[top.rank] + top.height / 2});
    for (size_t i = 1; i + 1 < chain.size(); ++i) {
      const Vertex& v = m_vertices[chain[i]];
      const double half = m_rankHeight[v.rank] / 2;
      p.push_back({v.x, m_rankY[v.rank] - half});
      if (half > 0) p.push_back({v.x, m_rankY[v.rank] + half});
    }
    p.push_back({bottom.x, m_rankY[bottom.rank] - bottom.height / 2});
    if (m_ranking.reversed[e]) std::reverse(p.begin(), p.end());
  }
  route.arrowTip = p.back();
  route.labelCentre = labelCentreBeside(p, edge.labelWidth, edge.labelHeight);
  return route;
}

Result<LayoutResult> Layered::run() {
  m_ranking = rankLayers(m_graph);
  if (cancelled()) return Status(StatusCode::kCancelled, "layout cancelled");
  buildVertices(m_ranking);
  orderRanks();
  if (cancelled()) return Status(StatusCode::kCancelled, "layout cancelled");
  for (auto& rank : m_ranks) {  // packed start
    double x = 0;
    for (int v : rank) {
      m_vertices[v].x = x + m_vertices[v].width / 2;
      x += m_vertices[v].width + m_options.nodeGap;
    }
    for (int v : rank) m_vertices[v].x -= x / 2;
  }
  const int rankCount = static_cast<int>(m_ranks.size());
  for (int pass = 0; pass < kPlacementPasses && !cancelled(); ++pass) {
    if (pass % 2 == 0)
      for (int r = 1; r < rankCount; ++r) placeRank(r, true, false);
    else
      for (int r = rankCount - 2; r >= 0; --r) placeRank(r, false, true);
  }
  for (int r = 0; r < rankCount; ++r) placeRank(r, true, true);
  if (cancelled()) return Status(StatusCode::kCancelled, "layout cancelled");
  placeY();

  LayoutResult result;
  result.algorithm = LayoutAlgorithm::kLayered;
  QRectF bounds;
  for (size_t i = 0; i < m_graph.nodes.size(); ++i) {
    const Vertex& v = m_vertices[i];
    result.centres.push_back({v.x, m_rankY[v.rank]});
    bounds |= QRectF(v.x - v.width / 2, m_rankY[v.rank] - v.height / 2, v.width, v.height);
  }
  for (size_t e = 0; e < m_graph.edges.size(); ++e) {
    result.edges.push_back(route(e));
    for (const QPointF& q : result.edges.back().points) bounds |= QRectF(q, QSizeF(1, 1));
    const LayoutEdge& edge = m_graph.edges[e];
    if (!edge.label.isEmpty())
      bounds |= QRectF(
          result.edges.back().labelCentre - QPointF(edge.labelWidth / 2, edge.labelHeight / 2),
          QSizeF(edge.labelWidth, edge.labelHeight));
  }
  result.bounds = bounds;
  return result;
}

}  // namespace

QPointF labelCentreBeside(const std::vector<QPointF>& points, double width, double height) {
  if (points.size() < 2) return points.empty() ? QPointF() : points.front();
  const QPointF d = points[1] - points[0];
  const double drop = height / 2 + 4;
  const double f = std::abs(d.y()) > 1e-9 ? std::clamp(drop / std::abs(d.y()), 0.0, 1.0) : 0.0;
  const QPointF at = points[0] + f * d;
  return {at.x() + width / 2 + 4, at.y()};
}

LayerRanking rankLayers(const LayoutGraph& graph) {
  const int n = static_cast<int>(graph.nodes.size());
  std::vector<std::vector<int>> out(n);
  std::vector<int> pending(n, 0), position(n, -1);
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    const LayoutEdge& edge = graph.edges[e];
    if (edge.from == edge.to) continue;
    out[edge.from].push_back(static_cast<int>(e));
    ++pending[edge.to];
  }
  // Kahn's order, lowest index first (ONNX node lists are already topological); on a
  // cycle the first unplaced node is taken anyway, which makes its in-edges back edges.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int v = 0; v < n; ++v)
    if (pending[v] == 0) ready.push(v);
  std::vector<int> topo;
  int scan = 0;
  while (static_cast<int>(topo.size()) < n) {
    if (ready.empty()) {
      while (position[scan] >= 0) ++scan;
      ready.push(scan);
    }
    const int v = ready.top();
    ready.pop();
    if (position[v] >= 0) continue;
    position[v] = static_cast<int>(topo.size());
    topo.push_back(v);
    for (int e : out[v]) {
      const int w = graph.edges[e].to;
      if (position[w] < 0 && --pending[w] == 0) ready.push(w);
    }
  }
  LayerRanking ranking;
  ranking.rank.assign(n, 0);
  ranking.reversed.assign(graph.edges.size(), false);
  std::vector<std::vector<int>> up(n), down(n);
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    const LayoutEdge& edge = graph.edges[e];
    if (edge.from == edge.to) continue;
    ranking.reversed[e] = position[edge.from] > position[edge.to];
    const int a = ranking.reversed[e] ? edge.to : edge.from;
    const int b = ranking.reversed[e] ? edge.from : edge.to;
    up[b].push_back(a);
    down[a].push_back(b);
  }
  for (int v : topo)
    for (int a : up[v]) ranking.rank[v] = std::max(ranking.rank[v], ranking.rank[a] + 1);
  // Sources sit just above their first consumer, not at the top (a mask input read
  // only deep in the graph would otherwise drag a long edge down from rank 0).
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const int v = *it;
    if (!up[v].empty() || down[v].empty()) continue;
    int lowest = 1 << 30;
    for (int b : down[v]) lowest = std::min(lowest, ranking.rank[b]);
    ranking.rank[v] = lowest - 1;
  }
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    const LayoutEdge& edge = graph.edges[e];
    ranking.virtualNodes +=
        std::max(0, std::abs(ranking.rank[edge.to] - ranking.rank[edge.from]) - 1);
  }
  return ranking;
}

Result<LayoutResult> layeredLayout(const LayoutGraph& graph, const LayoutOptions& options) {
  QElapsedTimer timer;
  timer.start();
  Layered layered(graph, options);
  Result<LayoutResult> result = layered.run();
  if (result.isOk()) result->seconds = timer.nsecsElapsed() / 1e9;
  return result;
}

}  // namespace kiln::studio
