// A graph with hierarchy (issue 26 item 9): nodes grouped by the name scopes exporters
// write ("/encoder/layer.1/attention/MatMul") into collapsible blocks; a double-click
// opens a block and one on its frame closes it; search opens the blocks holding the
// hit and zooms to it; selection goes through blocks both ways; the engine graph's
// blocks show their summed time and precision mix; "Group" off shows every node.
#include <QSignalSpy>
#include <QtTest>

#include "engine_graph_view.h"
#include "op_category.h"
#include "model_graph_view.h"
#include "scope_tree.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

constexpr int kLayoutTimeoutMs = 60000;
constexpr int kLayers = 4, kOpsPerPart = 10;

// /encoder/layer.K/{attention,mlp}/op0..op9: a chain of 80 Relu nodes under scopes.
std::shared_ptr<const Network> scopedNetwork() {
  auto network = std::make_shared<Network>();
  network->opsets[""] = 17;
  Graph& g = network->graph;
  g.inputs.push_back({"x", DataType::kFloat32, true, {DimExpr(1), DimExpr(8)}});
  std::string previous = "x";
  for (int layer = 0; layer < kLayers; ++layer)
    for (const char* part : {"attention", "mlp"})
      for (int op = 0; op < kOpsPerPart; ++op) {
        Node node;
        node.opType = "Relu";
        node.opset = 17;
        node.index = static_cast<int>(g.nodes.size());
        node.name =
            "/encoder/layer." + std::to_string(layer) + "/" + part + "/op" + std::to_string(op);
        node.inputs = {previous};
        previous = node.name + ":0";
        node.outputs = {previous};
        g.nodes.push_back(node);
      }
  g.outputs.push_back({previous, DataType::kFloat32, true, {DimExpr(1), DimExpr(8)}});
  return network;
}

// The model graph of scopedNetwork(), laid out.
struct ScopedView {
  StudioDocument document;
  JobRunner jobs;
  ModelGraphView view{&document, &jobs};
  GraphView* graph = view.graphView();
  ScopedView() {
    view.resize(1000, 700);
    view.show();
    document.setModel("scoped.onnx", scopedNetwork());
  }
};

bool waitShown(GraphView* view) {
  QSignalSpy shown(view, &GraphView::graphShown);
  return shown.wait(kLayoutTimeoutMs);
}

int indexOf(GraphView* view, const QString& id) {
  return view->graphScene()->indexOf(id);
}

}  // namespace

class TestScopeGroups : public QObject {
  Q_OBJECT

 private slots:
  void scopesOfNames() {
    QCOMPARE(nameScope("/encoder/layer.6/attention/MatMul"), QString("/encoder/layer.6/attention"));
    QCOMPARE(nameScope("Conv_3"), QString());
    QCOMPARE(commonScope({"/a/b/c/Mul", "/a/b/d/Add", "/a/b/Relu"}), QString("/a/b"));
    QCOMPARE(commonScope({"/a/bc/Mul", "/a/b/Add"}), QString("/a"));
    QCOMPARE(commonScope({"Conv_5", "/a/Add"}), QString());
    ScopeTree tree({{"/a/b"}, {"/a/b"}, {"/a/c"}, {""}});
    QCOMPARE(tree.size(), 2);  // /a and /a/b; /a/c holds one node only
    QCOMPARE(tree.group(tree.find("/a")).nodes, (std::vector<int>{0, 1, 2}));
    QCOMPARE(tree.chainOf(2), (std::vector<int>{tree.find("/a")}));
  }

  void blocksOpenCloseAndSelect() {
    ScopedView s;
    StudioDocument& document = s.document;
    GraphView* graph = s.graph;
    QVERIFY(waitShown(graph));
    // Opened level by level while few boxes show: /encoder and its 4 layers are frames,
    // their attention and mlp parts 8 closed blocks of 10 nodes, plus input and output.
    GraphScene* scene = graph->graphScene();
    QCOMPARE(scene->nodeCount(), 2 * kLayers + 2);
    QCOMPARE(scene->frameCount(), 1 + kLayers);
    const int block = indexOf(graph, "group:/encoder/layer.1/attention");
    QVERIFY(block >= 0);
    QVERIFY(scene->nodeItem(block)->lines().join(' ').contains("10 nodes"));
    QCOMPARE(graph->memberIds(block).size(), kOpsPerPart);

    // The document's node inside a closed block selects the block.
    document.selectNodes({"/encoder/layer.2/mlp/op3"});
    QCOMPARE(scene->selectedIds(), QStringList{"group:/encoder/layer.2/mlp"});
    // Clicking a block selects its nodes.
    scene->clearSelection();
    graph->centerOn(scene->nodeItem(block));
    QTest::mouseClick(graph->viewport(), Qt::LeftButton, Qt::NoModifier,
                      graph->mapFromScene(scene->nodeItem(block)->scenePos()));
    QCOMPARE(document.selectedNodes().size(), kOpsPerPart);
    QVERIFY(document.selectedNodes().contains("/encoder/layer.1/attention/op0"));

    // A double-click opens it: its 10 nodes replace the block, inside a new frame.
    QSignalSpy shown(graph, &GraphView::graphShown);
    QTest::mouseDClick(graph->viewport(), Qt::LeftButton, Qt::NoModifier,
                       graph->mapFromScene(scene->nodeItem(block)->scenePos()));
    QVERIFY(shown.wait(kLayoutTimeoutMs));
    QVERIFY(graph->isGroupExpanded("/encoder/layer.1/attention"));
    QCOMPARE(scene->nodeCount(), 2 * kLayers + 2 - 1 + kOpsPerPart);
    QCOMPARE(scene->frameCount(), 2 + kLayers);
    QVERIFY(indexOf(graph, "/encoder/layer.1/attention/op4") >= 0);
    // A double-click on the frame's empty corner closes it again.
    const SceneGraph::GroupFrame* frame = nullptr;
    for (const SceneGraph::GroupFrame& f : scene->graph()->frames)
      if (f.path == "/encoder/layer.1/attention") frame = &f;
    QVERIFY(frame != nullptr);
    const QPointF corner = frame->rect.topLeft() + QPointF(4, 4);
    graph->centerOn(corner);
    QTest::mouseDClick(graph->viewport(), Qt::LeftButton, Qt::NoModifier,
                       graph->mapFromScene(corner));
    QVERIFY(shown.wait(kLayoutTimeoutMs));
    QVERIFY(!graph->isGroupExpanded("/encoder/layer.1/attention"));
    QCOMPARE(scene->nodeCount(), 2 * kLayers + 2);
  }

  void searchOpensTheBlockAndZoomsToTheHit() {
    ScopedView s;
    GraphView* graph = s.graph;
    QVERIFY(waitShown(graph));
    graph->fitAll();
    QSignalSpy shown(graph, &GraphView::graphShown);
    graph->search("layer.3/mlp/op7");
    QCOMPARE(graph->searchStatus(), QString("1 of 1"));
    QVERIFY(shown.wait(kLayoutTimeoutMs));
    QVERIFY(graph->isGroupExpanded("/encoder/layer.3/mlp"));
    GraphScene* scene = graph->graphScene();
    QCOMPARE(scene->selectedIds(), QStringList{"/encoder/layer.3/mlp/op7"});
    QCOMPARE(s.document.selectedNodes(), QStringList{"/encoder/layer.3/mlp/op7"});
    GraphNodeItem* hit = scene->nodeItem(indexOf(graph, "/encoder/layer.3/mlp/op7"));
    const QRectF visible = graph->mapToScene(graph->viewport()->rect()).boundingRect();
    QVERIFY(visible.contains(hit->sceneBoundingRect()));
    QVERIFY(graph->zoom() >= 0.85);
  }

  void groupingOffShowsEveryNode() {
    ScopedView s;
    GraphView* graph = s.graph;
    QVERIFY(waitShown(graph));
    QVERIFY(graph->groupingAction()->isChecked());
    QSignalSpy shown(graph, &GraphView::graphShown);
    graph->groupingAction()->setChecked(false);
    QVERIFY(shown.wait(kLayoutTimeoutMs));
    QCOMPARE(graph->graphScene()->nodeCount(), 2 * kLayers * kOpsPerPart + 2);
    QCOMPARE(graph->graphScene()->frameCount(), 0);
  }

  void engineBlocksSumTimeAndPrecisions() {
    auto report = std::make_shared<inspector::EngineReport>();
    report->origin = "test";
    auto layer = [](const std::string& name, const std::string& precision, double ms,
                    const std::string& in, const std::string& out) {
      inspector::ReportLayer l;
      l.name = name;
      l.layerType = "Convolution";
      l.precision = precision;
      l.milliseconds = ms;
      l.inputs = {{in, {1, 8}, "Row major linear FP32"}};
      l.outputs = {{out, {1, 8}, "Row major linear FP32"}};
      return l;
    };
    report->layers = {layer("/enc/a/Conv + /enc/a/Relu", "FP16", 1, "x", "t0"),
                      layer("/enc/a/Conv_1", "FP16", 2, "t0", "t1"),
                      layer("/enc/a/MatMul", "FP32", 3, "t1", "t2"),
                      layer("/enc/b/Add", "FP32", 4, "t2", "t3"),
                      layer("/enc/b/Mul", "INT8", 10, "t3", "y")};
    report->bindings = {"x", "y"};
    inspector::updateShares(report.get());
    StudioDocument document;
    JobRunner jobs;
    EngineGraphView view(&document, &jobs);
    document.setReport(report);
    GraphView* graph = view.graphView();
    QVERIFY(waitShown(graph));
    QVERIFY(graph->isGroupExpanded("/enc/a"));  // small: shown open
    QSignalSpy shown(graph, &GraphView::graphShown);
    QVERIFY(graph->setGroupExpanded("/enc/a", false));
    QVERIFY(shown.wait(kLayoutTimeoutMs));
    GraphScene* scene = graph->graphScene();
    const int block = indexOf(graph, "group:/enc/a");
    QVERIFY(block >= 0);
    const QString text = scene->nodeItem(block)->lines().join('\n');
    QVERIFY2(text.contains("3 layers · 6.000 ms · 30.0 %"), qPrintable(text));
    QVERIFY2(text.contains("FP16 2 · FP32 1"), qPrintable(text));
    // Coloured by its main precision; selecting a layer inside selects the block.
    QCOMPARE(scene->nodeItem(block)->fill(), precisionColor("FP16").lighter(112));
    document.selectLayer(1);
    QCOMPARE(scene->selectedIds(), QStringList{"group:/enc/a"});
    view.setColouring(EngineColouring::kTimeShare);
    QCOMPARE(scene->nodeItem(block)->fill(), timeShareColor(0.6));  // 30 % of the 50 % max
  }
};

QTEST_MAIN(TestScopeGroups)
#include "test_scope_groups.moc"
