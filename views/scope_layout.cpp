#include "scope_layout.h"

#include <QElapsedTimer>
#include <algorithm>
#include <map>

#include "graph_items.h"

namespace kiln::studio {
namespace {

constexpr double kFramePad = 14;     // around an expanded group's contents
constexpr double kFrameHeader = 26;  // its title line
QColor blockFill() {
  return QColor(0xe4, 0xe7, 0xf3);
}

// One box of a level's layout: a visible box, or an expanded group shown as a frame.
struct Unit {
  bool frame = false;
  int id = 0;  // box index, or group index
  bool operator<(const Unit& o) const { return frame != o.frame ? frame < o.frame : id < o.id; }
  bool operator==(const Unit& o) const { return frame == o.frame && id == o.id; }
};

struct Level {
  int group = -1;  // -1: the top
  std::vector<Unit> units;
  std::map<Unit, int> unitIndex;
  LayoutGraph graph;
  std::vector<std::pair<int, int>> boxEdges;  // per level edge: the box edge it routes, or -1
  LayoutResult result;
  QPointF offset;  // added to the level's coordinates
};

class GroupedLayout {
 public:
  GroupedLayout(const LayoutGraph& graph, const std::vector<NodeLook>& looks, const ScopeTree& tree,
                const std::set<QString>& expanded)
      : m_flat(graph), m_looks(looks), m_tree(tree), m_open(tree.size(), false) {
    for (int g = 0; g < tree.size(); ++g) m_open[g] = expanded.count(tree.group(g).path) != 0;
  }

  Result<GroupedScene> run(const LayoutOptions& options) {
    QElapsedTimer clock;
    clock.start();
    makeBoxes();
    makeLevels();
    makeEdges();
    m_centres.assign(m_nodes.size(), QPointF());
    for (Level& level : m_levels) level.graph.nodes.resize(level.units.size());
    // Deepest levels first: a frame's size is its contents' layout.
    std::vector<int> order(m_levels.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(), [this](int a, int b) { return depth(a) > depth(b); });
    for (int l : order) {
      if (options.cancel && options.cancel->load())
        return Status(StatusCode::kCancelled, "cancelled");
      Level& level = m_levels[l];
      for (size_t u = 0; u < level.units.size(); ++u) sizeUnit(level, u);
      auto result = layoutGraph(level.graph, options);
      if (!result.isOk()) return result.status();
      level.result = std::move(result.value());
    }
    std::sort(order.begin(), order.end(), [this](int a, int b) { return depth(a) < depth(b); });
    for (int l : order) place(m_levels[l]);
    GroupedScene out = finish();
    out.scene->layout.seconds = clock.elapsed() / 1000.0;
    return out;
  }

 private:
  int depth(int level) const {
    const int g = m_levels[level].group;
    return g < 0 ? -1 : m_tree.group(g).depth;
  }

  // The visible box of each flat node: itself, or the outermost closed group holding it.
  void makeBoxes() {
    m_boxOf.assign(m_flat.nodes.size(), -1);
    std::map<int, int> blockBox;
    for (size_t n = 0; n < m_flat.nodes.size(); ++n) {
      int container = -1, closed = -1;
      for (int g : m_tree.chainOf(static_cast<int>(n))) {
        if (!m_open[g]) {
          closed = g;
          break;
        }
        container = g;
      }
      if (closed < 0) {
        m_boxOf[n] = addBox(static_cast<int>(n), -1, container);
        continue;
      }
      auto it = blockBox.find(closed);
      if (it == blockBox.end()) it = blockBox.emplace(closed, addBox(-1, closed, container)).first;
      m_boxOf[n] = it->second;
      m_members[it->second].push_back(static_cast<int>(n));
    }
  }

  int addBox(int node, int group, int container) {
    const int box = static_cast<int>(m_nodes.size());
    if (node >= 0) {
      m_nodes.push_back(m_flat.nodes[node]);
      m_boxLooks.push_back(m_looks[node]);
      m_members.push_back({node});
    } else {
      const ScopeTree::Group& g = m_tree.group(group);
      QStringList lines{QStringLiteral("▸ ") + g.title, m_tree.sizeText(group)};
      const QString mix = m_tree.precisionText(group);
      if (!mix.isEmpty()) lines << mix;
      for (int i = 0; i < lines.size(); ++i) lines[i] = GraphStyle::elide(lines[i], i);
      LayoutNode layoutNode;
      layoutNode.id = kGroupIdPrefix + g.path;
      layoutNode.lines = lines;
      const QSizeF size = GraphStyle::nodeSize(lines);
      layoutNode.width = size.width();
      layoutNode.height = size.height();
      m_nodes.push_back(layoutNode);
      NodeLook look;
      look.fill = blockFill();
      look.toolTip = QStringLiteral("%1\n%2%3\nDouble-click to open")
                         .arg(g.path, m_tree.sizeText(group),
                              mix.isEmpty() ? QString() : QStringLiteral("\n") + mix);
      look.searchText = g.path;
      m_boxLooks.push_back(look);
      m_members.push_back({});
    }
    m_containerOf.push_back(container);
    return box;
  }

  int levelOf(int group) {
    auto it = m_levelIndex.find(group);
    if (it != m_levelIndex.end()) return it->second;
    const int l = static_cast<int>(m_levels.size());
    m_levels.push_back({});
    m_levels.back().group = group;
    m_levelIndex.emplace(group, l);
    if (group >= 0) addUnit(levelOf(m_tree.group(group).parent), {true, group});
    return l;
  }

  void addUnit(int level, Unit unit) {
    Level& l = m_levels[level];
    if (l.unitIndex.count(unit)) return;
    l.unitIndex.emplace(unit, static_cast<int>(l.units.size()));
    l.units.push_back(unit);
  }

  void makeLevels() {
    levelOf(-1);
    for (size_t b = 0; b < m_nodes.size(); ++b)
      addUnit(levelOf(m_containerOf[b]), {false, static_cast<int>(b)});
  }

  // Containers from `box`'s own outwards, ending with -1 (the top).
  std::vector<int> containersOf(int box) const {
    std::vector<int> out;
    for (int g = m_containerOf[box]; g >= 0; g = m_tree.group(g).parent) out.push_back(g);
    out.push_back(-1);
    return out;
  }

  // The unit of level `container` that holds `box`.
  Unit unitIn(int container, int box) const {
    if (m_containerOf[box] == container) return {false, box};
    int g = m_containerOf[box];
    while (m_tree.group(g).parent != container) g = m_tree.group(g).parent;
    return {true, g};
  }

  void makeEdges() {
    std::map<std::pair<int, int>, int> seen;
    for (const LayoutEdge& edge : m_flat.edges) {
      const int from = m_boxOf[edge.from], to = m_boxOf[edge.to];
      if (from == to || seen.count({from, to})) continue;
      seen.emplace(std::make_pair(from, to), static_cast<int>(m_edges.size()));
      LayoutEdge boxEdge = edge;
      boxEdge.from = from;
      boxEdge.to = to;
      const std::vector<int> a = containersOf(from), b = containersOf(to);
      int common = -1;
      for (int g : a)
        if (std::find(b.begin(), b.end(), g) != b.end()) {
          common = g;
          break;
        }
      const Unit ua = unitIn(common, from), ub = unitIn(common, to);
      const bool direct = !ua.frame && !ub.frame;
      if (!direct) {  // drawn as a curve: a label would sit on other boxes
        boxEdge.label.clear();
        boxEdge.labelWidth = boxEdge.labelHeight = 0;
      }
      m_routes.push_back({-1, -1});
      Level& level = m_levels[m_levelIndex.at(common)];
      if (!(ua == ub)) {
        LayoutEdge levelEdge = direct ? boxEdge : LayoutEdge{};
        levelEdge.from = level.unitIndex.at(ua);
        levelEdge.to = level.unitIndex.at(ub);
        if (direct) m_routes.back() = {m_levelIndex.at(common), int(level.graph.edges.size())};
        level.graph.edges.push_back(levelEdge);
      }
      m_edges.push_back(boxEdge);
    }
  }

  void sizeUnit(Level& level, size_t u) {
    const Unit unit = level.units[u];
    LayoutNode& node = level.graph.nodes[u];
    if (!unit.frame) {
      node = m_nodes[unit.id];
      return;
    }
    const QRectF inner = m_levels[m_levelIndex.at(unit.id)].result.bounds;
    node.id = QStringLiteral("frame:") + m_tree.group(unit.id).path;
    node.width = inner.width() + 2 * kFramePad;
    node.height = inner.height() + kFrameHeader + kFramePad;
  }

  // Moves a level's contents to where its frame sits in the level around it.
  void place(Level& level) {
    if (level.group >= 0) {
      const int parent = m_levelIndex.at(m_tree.group(level.group).parent);
      const Level& outer = m_levels[parent];
      const int u = outer.unitIndex.at({true, level.group});
      const QPointF centre = outer.result.centres[u] + outer.offset;
      const LayoutNode& box = outer.graph.nodes[u];
      const QPointF topLeft(centre.x() - box.width / 2, centre.y() - box.height / 2);
      level.offset = topLeft + QPointF(kFramePad, kFrameHeader) - level.result.bounds.topLeft();
      SceneGraph::GroupFrame frame;
      frame.rect = QRectF(topLeft, QSizeF(box.width, box.height));
      frame.path = m_tree.group(level.group).path;
      const QString mix = m_tree.precisionText(level.group);
      frame.title = QStringLiteral("▾ %1 · %2%3")
                        .arg(m_tree.group(level.group).title, m_tree.sizeText(level.group),
                             mix.isEmpty() ? QString() : QStringLiteral(" · ") + mix);
      m_frames.push_back(frame);
    }
    for (size_t u = 0; u < level.units.size(); ++u)
      if (!level.units[u].frame)
        m_centres[level.units[u].id] = level.result.centres[u] + level.offset;
  }

  EdgeRoute curve(int from, int to) const {
    const QPointF a = m_centres[from] + QPointF(0, m_nodes[from].height / 2);
    const QPointF b = m_centres[to] - QPointF(0, m_nodes[to].height / 2);
    const double bend = std::max(24.0, std::abs(b.y() - a.y()) / 2);
    EdgeRoute route;
    route.bezier = true;
    route.points = {a, a + QPointF(0, bend), b - QPointF(0, bend), b};
    route.arrowTip = b;
    route.labelCentre = (a + b) / 2;
    return route;
  }

  GroupedScene finish() {
    LayoutResult layout;
    layout.algorithm = m_levels[m_levelIndex.at(-1)].result.algorithm;
    layout.centres = m_centres;
    QRectF bounds;
    for (size_t b = 0; b < m_nodes.size(); ++b)
      bounds |=
          QRectF(m_centres[b].x() - m_nodes[b].width / 2, m_centres[b].y() - m_nodes[b].height / 2,
                 m_nodes[b].width, m_nodes[b].height);
    for (const SceneGraph::GroupFrame& f : m_frames) bounds |= f.rect;
    for (size_t e = 0; e < m_edges.size(); ++e) {
      const auto [level, index] = m_routes[e];
      if (level < 0) {
        layout.edges.push_back(curve(m_edges[e].from, m_edges[e].to));
        continue;
      }
      EdgeRoute route = m_levels[level].result.edges[index];
      const QPointF shift = m_levels[level].offset;
      for (QPointF& p : route.points) p += shift;
      route.arrowTip += shift;
      route.labelCentre += shift;
      layout.edges.push_back(route);
    }
    layout.bounds = bounds;
    LayoutGraph graph{m_nodes, m_edges};
    GroupedScene out;
    out.scene = prepareSceneGraph(std::move(graph), m_boxLooks, std::move(layout));
    out.scene->frames = m_frames;
    out.visibleOf = m_boxOf;
    out.members = m_members;
    return out;
  }

  const LayoutGraph& m_flat;
  const std::vector<NodeLook>& m_looks;
  const ScopeTree& m_tree;
  std::vector<bool> m_open;
  std::vector<int> m_boxOf;          // per flat node
  std::vector<LayoutNode> m_nodes;   // per box
  std::vector<NodeLook> m_boxLooks;  // per box
  std::vector<std::vector<int>> m_members;
  std::vector<int> m_containerOf;  // per box: the open group it sits in, -1 at the top
  std::vector<Level> m_levels;
  std::map<int, int> m_levelIndex;            // group (-1: top) -> level
  std::vector<LayoutEdge> m_edges;            // between boxes
  std::vector<std::pair<int, int>> m_routes;  // per box edge: (level, level edge) or (-1, -1)
  std::vector<QPointF> m_centres;             // per box, in scene coordinates
  std::vector<SceneGraph::GroupFrame> m_frames;
};

}  // namespace

Result<GroupedScene> layoutGrouped(const LayoutGraph& graph, const std::vector<NodeLook>& looks,
                                   const ScopeTree& tree, const std::set<QString>& expanded,
                                   const LayoutOptions& options) {
  GroupedLayout layout(graph, looks, tree, expanded);
  return layout.run(options);
}

Result<GroupedScene> layoutFlat(const LayoutGraph& graph, const std::vector<NodeLook>& looks,
                                const LayoutOptions& options) {
  auto layout = layoutGraph(graph, options);
  if (!layout.isOk()) return layout.status();
  GroupedScene out;
  out.visibleOf.resize(graph.nodes.size());
  out.members.resize(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    out.visibleOf[n] = static_cast<int>(n);
    out.members[n] = {static_cast<int>(n)};
  }
  out.scene = prepareSceneGraph(graph, looks, std::move(layout.value()));
  return out;
}

}  // namespace kiln::studio
