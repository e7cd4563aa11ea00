// The graph layouts (graph_layout.h) and the scene they populate: bad edges refused,
// cycles and cancel handled, 3,000-node layered layouts fast and disjoint, long edges
// capped, and a fan-out scene left unindexed.
#include <QGraphicsScene>
#include <QtTest>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "graph_layout.h"
#include "graph_scene.h"

using namespace kiln;
using namespace kiln::studio;

class TestGraphLayout : public QObject {
  Q_OBJECT

 private slots:
  void layoutRejectsBadEdge();
  void layoutHandlesCycleAndCancel();
  void largeLayoutIsFastAndDisjoint();
  void layeredLayoutCapsLongEdges();
  void fanOutLeavesTheSceneUnindexed();
};

void TestGraphLayout::layoutRejectsBadEdge() {
  LayoutGraph graph;
  graph.nodes.resize(2);
  graph.edges.push_back({0, 5, QString(), 0, 0});
  Result<LayoutResult> result = layoutGraph(graph);
  QVERIFY(!result.isOk());
  QVERIFY(result.status().message().find("edge #0") != std::string::npos);
}

void TestGraphLayout::layoutHandlesCycleAndCancel() {
  LayoutGraph graph;
  graph.nodes.resize(3);
  graph.edges = {{0, 1, "a", 10, 10}, {1, 2, QString(), 0, 0}, {2, 0, QString(), 0, 0}};
  for (LayoutAlgorithm algorithm : {LayoutAlgorithm::kDot, LayoutAlgorithm::kLayered}) {
    LayoutOptions options;
    options.algorithm = algorithm;
    Result<LayoutResult> result = layoutGraph(graph, options);
    QVERIFY(result.isOk());
    QCOMPARE(result->algorithm, algorithm);
    QCOMPARE(result->edges.size(), size_t(3));
    for (const EdgeRoute& route : result->edges) QVERIFY(route.points.size() >= 2);
    QVERIFY(result->centres[0] != result->centres[1]);
  }
  std::atomic<bool> cancel{true};
  LayoutOptions options;
  options.cancel = &cancel;
  Result<LayoutResult> cancelled = layoutGraph(graph, options);
  QVERIFY(!cancelled.isOk());
  QCOMPARE(cancelled.status().code(), StatusCode::kCancelled);
}

void TestGraphLayout::largeLayoutIsFastAndDisjoint() {
  // 3,000 nodes in transformer-like blocks of 30, with an "attention mask" edge from
  // node 0 into every block: the shape that made dot take minutes.
  LayoutGraph graph;
  for (int i = 0; i < 3000; ++i)
    graph.nodes.push_back({QString::number(i), {}, 90.0 + i % 7 * 10, 30});
  auto edge = [&](int a, int b) { graph.edges.push_back({a, b, "1×128×768", 50, 12}); };
  for (int b = 0, x = 0; b + 30 <= 3000; b += 30) {
    if (b) edge(x, b + 1);
    for (int i = b + 1; i < b + 29; ++i) edge(i, i + 1);
    edge(b + 1, b + 10);
    if (b) edge(0, b + 15);
    x = b + 29;
  }
  QCOMPARE(chooseLayoutAlgorithm(graph), LayoutAlgorithm::kLayered);
  Result<LayoutResult> result = layoutGraph(graph);
  QVERIFY(result.isOk());
  qInfo("3,000-node layered layout: %.3f s", result->seconds);
  QVERIFY(result->seconds < 3);
  // Boxes of one rank (same y) never overlap.
  std::map<double, std::vector<QRectF>> rows;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const QPointF c = result->centres[i];
    rows[c.y()].push_back(
        QRectF(c.x() - graph.nodes[i].width / 2, c.y() - 15, graph.nodes[i].width, 30));
  }
  for (auto& [y, rects] : rows) {
    std::sort(rects.begin(), rects.end(),
              [](const QRectF& a, const QRectF& b) { return a.left() < b.left(); });
    for (size_t i = 1; i < rects.size(); ++i)
      QVERIFY(rects[i].left() >= rects[i - 1].right() - 1e-6);
  }
  // Every edge runs from its source's box down to its target's box.
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    const EdgeRoute& route = result->edges[e];
    QVERIFY(route.points.front().y() < route.arrowTip.y());
    QVERIFY(std::abs(route.arrowTip.x() - result->centres[graph.edges[e].to].x()) < 1e-6);
  }
}

void TestGraphLayout::layeredLayoutCapsLongEdges() {
  // A 1,000-node chain and 400 edges from its head into its last 400 nodes: ~320,000
  // ranks skipped in all, past the layered layout's budget of virtual nodes, so the
  // longest edges are drawn straight and the rest bend through their ranks.
  LayoutGraph graph;
  for (int i = 0; i < 1000; ++i) graph.nodes.push_back({QString::number(i), {}, 60, 24});
  for (int i = 0; i + 1 < 1000; ++i) graph.edges.push_back({i, i + 1, QString(), 0, 0});
  for (int i = 600; i < 1000; ++i) graph.edges.push_back({0, i, QString(), 0, 0});
  LayoutOptions options;
  options.algorithm = LayoutAlgorithm::kLayered;
  Result<LayoutResult> result = layoutGraph(graph, options);
  QVERIFY(result.isOk());
  qInfo("layered layout with a capped number of virtual nodes: %.3f s", result->seconds);
  QCOMPARE(result->edges.back().points.size(), size_t(2));  // 0 -> 999: straight
  QVERIFY(result->edges[999].points.size() > 100);          // 0 -> 600: through 599 ranks
  for (int i = 1; i < 1000; ++i) QVERIFY(result->centres[i].y() > result->centres[i - 1].y());
}

void TestGraphLayout::fanOutLeavesTheSceneUnindexed() {
  // One tensor read by 3,000 layers of a chain (a hostile trtexec export has 200,000):
  // the edges span the graph, so Qt's BSP index would grow quadratically. The scene
  // goes unindexed; a plain chain of the same size keeps its index.
  auto sceneFor = [](bool fanOut) {
    LayoutGraph graph;
    const int n = 3000;
    for (int i = 0; i < n; ++i) graph.nodes.push_back({QString::number(i), {}, 60, 24});
    for (int i = 0; i + 1 < n; ++i) graph.edges.push_back({i, i + 1, QString(), 0, 0});
    if (fanOut)
      for (int i = 2; i < n; ++i) graph.edges.push_back({0, i, QString(), 0, 0});
    LayoutOptions options;
    options.algorithm = LayoutAlgorithm::kLayered;
    Result<LayoutResult> layout = layoutGraph(graph, options);
    std::vector<NodeLook> looks(graph.nodes.size());
    auto scene = std::make_unique<GraphScene>();
    if (layout.isOk())
      scene->populate(prepareSceneGraph(std::move(graph), std::move(looks), layout.value()));
    return scene;
  };
  std::unique_ptr<GraphScene> fan = sceneFor(true), chain = sceneFor(false);
  QCOMPARE(fan->edgeCount(), 2999 + 2998);
  QCOMPARE(fan->itemIndexMethod(), QGraphicsScene::NoIndex);
  QCOMPARE(chain->edgeCount(), 2999);
  QCOMPARE(chain->itemIndexMethod(), QGraphicsScene::BspTreeIndex);
  // Unindexed, the scene still finds what is under a point.
  const QPointF centre = fan->nodeItem(1500)->sceneBoundingRect().center();
  QVERIFY(fan->items(centre).contains(fan->nodeItem(1500)));
}

QTEST_MAIN(TestGraphLayout)
#include "test_graph_layout.moc"
