// Graph views and properties panel: the model graph of a real ONNX model (boxes and
// edges counted independently from the Network), the properties of a selected node,
// search, the engine graph's colourings and selection, GUI responsiveness while a
// 2,000-node graph is laid out, SVG export (the layout algorithms: test_graph_layout.cpp).
#include <QElapsedTimer>
#include <QGraphicsView>
#include <QLineEdit>
#include <QScrollBar>
#include <QTimer>
#include <QtTest>
#include <atomic>
#include <cmath>
#include <set>

#include "engine_graph_view.h"
#include "event_loop_probe.h"
#include "graph_layout.h"
#include "kiln/onnx_import.h"
#include "model_graph_view.h"
#include "op_category.h"
#include "properties_panel.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

constexpr int kLayoutTimeoutMs = 60000;

std::shared_ptr<const Network> loadTinyBert() {
  const QByteArray dir = qgetenv("KILN_TEST_DATA_DIR");
  const std::string path = dir.toStdString() + "/builder/tiny_bert.onnx";
  Result<Network> network = importOnnxFile(path);
  if (!network.isOk())
    qFatal("cannot import %s: %s", path.c_str(), network.status().message().c_str());
  return std::make_shared<const Network>(std::move(network.value()));
}

bool isConstantNode(const Node& node) {
  return node.opType == "Constant" && node.domain.empty();
}

// Producer -> consumer links, counted straight from the Network: one per distinct
// tensor a box reads that a box (node or graph input) produces, plus one per graph
// output that a box produces.
int countLinks(const Network& network) {
  std::set<std::string> produced;
  for (const ValueInfo& input : network.graph.inputs) produced.insert(input.name);
  for (const Node& node : network.graph.nodes)
    if (!isConstantNode(node)) produced.insert(node.outputs.begin(), node.outputs.end());
  int links = 0;
  for (const Node& node : network.graph.nodes) {
    if (isConstantNode(node)) continue;
    std::set<std::string> reads(node.inputs.begin(), node.inputs.end());
    for (const std::string& implicit : node.implicitInputs()) reads.insert(implicit);
    for (const std::string& tensor : reads) links += !tensor.empty() && produced.count(tensor);
  }
  for (const ValueInfo& output : network.graph.outputs) links += produced.count(output.name);
  return links;
}

int countBoxes(const Network& network) {
  int boxes = static_cast<int>(network.graph.inputs.size() + network.graph.outputs.size());
  for (const Node& node : network.graph.nodes) boxes += isConstantNode(node) ? 0 : 1;
  return boxes;
}

// A chain with skip connections ("ladder") of `count` nodes: Relu and Add alternate,
// each Add also reads the output three nodes back.
std::shared_ptr<const Network> ladderNetwork(int count) {
  auto network = std::make_shared<Network>();
  network->opsets[""] = 17;
  Graph& g = network->graph;
  ValueInfo x;
  x.name = "x";
  x.type = DataType::kFloat32;
  x.hasShape = true;
  x.shape = {DimExpr::symbol("batch"), DimExpr(64)};
  g.inputs.push_back(x);
  std::vector<std::string> outputs = {"x"};
  for (int i = 0; i < count; ++i) {
    Node node;
    node.index = i;
    node.opset = 17;
    node.name = "n" + std::to_string(i);
    node.opType = i % 2 == 0 ? "Relu" : "Add";
    node.inputs = {outputs.back()};
    if (i % 2 == 1)
      node.inputs.push_back(outputs[std::max<int>(0, static_cast<int>(outputs.size()) - 3)]);
    node.outputs = {"t" + std::to_string(i)};
    outputs.push_back(node.outputs[0]);
    g.nodes.push_back(node);
  }
  ValueInfo y;
  y.name = outputs.back();
  y.type = DataType::kFloat32;
  g.outputs.push_back(y);
  return network;
}

inspector::ReportLayer makeLayer(const std::string& name, const std::string& precision,
                                 std::vector<std::string> inputs, std::vector<std::string> outputs,
                                 std::vector<std::string> sources, double percentage) {
  inspector::ReportLayer layer;
  layer.name = name;
  layer.layerType = "Convolution";
  layer.precision = precision;
  layer.percentage = percentage;
  layer.milliseconds = percentage / 100.0;
  layer.sourceNodes = std::move(sources);
  for (const std::string& in : inputs)
    layer.inputs.push_back({in, {1, 8, 16, 16}, "Row major linear FP32"});
  for (const std::string& out : outputs)
    layer.outputs.push_back({out, {1, 8, 16, 16}, "Row major linear FP32"});
  layer.parameters["kernel"] = "3x3";
  return layer;
}

std::shared_ptr<const inspector::EngineReport> threeLayerReport() {
  auto report = std::make_shared<inspector::EngineReport>();
  report->origin = "test";
  report->layers.push_back(makeLayer("conv_a", "FP16", {"x"}, {"a"}, {"embed"}, 10));
  report->layers.push_back(makeLayer("relu_b", "Int8", {"a"}, {"b"}, {"ln_embed"}, 30));
  report->layers.push_back(
      makeLayer("fc_c", "FP32", {"a", "b"}, {"y"}, {"q_matmul", "q_bias"}, 60));
  report->bindings = {"x", "y"};
  return report;
}

// Clicks the centre of `item` in `view` as the user would.
void clickItem(QGraphicsView* view, QGraphicsItem* item) {
  view->centerOn(item);
  const QPoint at = view->mapFromScene(item->sceneBoundingRect().center());
  QTest::mouseClick(view->viewport(), Qt::LeftButton, Qt::NoModifier, at);
}

}  // namespace

class TestGraphView : public QObject {
  Q_OBJECT

 private slots:
  void modelGraphMatchesNetwork();
  void clickAndSelectionFollowDocument();
  void panAndBackgroundClick();
  void propertiesShowSelectedNode();
  void search_data();
  void search();
  void engineGraphColoursAndSelection();
  void propertiesShowLayerWithoutNode();
  void largeGraphKeepsGuiResponsive();
  void subgraphNodeIsOneBox();
  void svgExport();
};

void TestGraphView::modelGraphMatchesNetwork() {
  StudioDocument document;
  JobRunner jobs;
  ModelGraphView view(&document, &jobs);
  std::shared_ptr<const Network> network = loadTinyBert();
  document.setModel("tiny_bert.onnx", network);
  QVERIFY(jobs.waitForIdle(kLayoutTimeoutMs));
  GraphScene* scene = view.graphView()->graphScene();
  // One box per node (tiny_bert has no Constant nodes) plus 1 input and 1 output box.
  QCOMPARE(countBoxes(*network), static_cast<int>(network->graph.nodes.size()) + 2);
  QCOMPARE(scene->nodeCount(), countBoxes(*network));
  QCOMPARE(scene->edgeCount(), countLinks(*network));
  QVERIFY(scene->edgeCount() > scene->nodeCount() - 1);
  QVERIFY(view.graphView()->layoutSummary().contains("Graphviz dot"));
  // Top to bottom: every producer sits above its consumer, and no two boxes overlap.
  for (int e = 0; e < scene->edgeCount(); ++e) {
    GraphEdgeItem* edge = scene->edgeItem(e);
    QVERIFY2(edge->from()->pos().y() < edge->to()->pos().y(), qPrintable(edge->to()->id()));
  }
  for (int i = 0; i < scene->nodeCount(); ++i)
    for (int j = i + 1; j < scene->nodeCount(); ++j)
      QVERIFY(!scene->nodeItem(i)
                   ->sceneBoundingRect()
                   .adjusted(2, 2, -2, -2)
                   .intersects(scene->nodeItem(j)->sceneBoundingRect().adjusted(2, 2, -2, -2)));
  // Shapes from shape inference label the edges; the Gather output is 1x16x32 here.
  int labelled = 0;
  for (int e = 0; e < scene->edgeCount(); ++e)
    labelled += scene->edgeItem(e)->label().contains("×");
  QVERIFY(labelled > scene->edgeCount() / 2);
  GraphNodeItem* softmax = nullptr;
  for (int i = 0; i < scene->nodeCount(); ++i)
    if (scene->nodeItem(i)->lines().front() == "Softmax") softmax = scene->nodeItem(i);
  QVERIFY(softmax);
  QCOMPARE(softmax->fill(), opCategoryColor(OpCategory::kActivation));
  QVERIFY(view.graphView()->legendText().contains("Matrix multiply"));
}

void TestGraphView::clickAndSelectionFollowDocument() {
  StudioDocument document;
  JobRunner jobs;
  ModelGraphView view(&document, &jobs);
  view.resize(900, 700);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  document.setModel("tiny_bert.onnx", loadTinyBert());
  QVERIFY(jobs.waitForIdle(kLayoutTimeoutMs));
  GraphScene* scene = view.graphView()->graphScene();
  // Document -> view.
  document.selectNodes({"k_transpose"});
  QCOMPARE(scene->selectedIds(), QStringList{"k_transpose"});
  // View -> document: a click on a box selects that node.
  clickItem(view.graphView(), scene->nodeItem(scene->indexOf("v_bias")));
  QCOMPARE(document.selectedNodes(), QStringList{"v_bias"});
  QCOMPARE(scene->selectedIds(), QStringList{"v_bias"});
  // A click on an input box is not a node: the document keeps v_bias.
  clickItem(view.graphView(), scene->nodeItem(scene->indexOf("input:input_ids")));
  QCOMPARE(document.selectedNodes(), QStringList{"v_bias"});
}

void TestGraphView::panAndBackgroundClick() {
  StudioDocument document;
  JobRunner jobs;
  ModelGraphView view(&document, &jobs);
  view.resize(700, 500);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  document.setModel("tiny_bert.onnx", loadTinyBert());
  QVERIFY(jobs.waitForIdle(kLayoutTimeoutMs));
  GraphView* graph = view.graphView();
  document.selectNodes({"residual_1"});
  // A background point inside some edge's bounding box, but on no box.
  QPoint background(-1, -1);
  for (int y = 40; y < graph->viewport()->height() - 40 && background.x() < 0; y += 7)
    for (int x = 20; x < graph->viewport()->width() - 20 && background.x() < 0; x += 7) {
      bool node = false, edge = false;
      for (QGraphicsItem* item : graph->items(QPoint(x, y))) {
        node |= dynamic_cast<GraphNodeItem*>(item) != nullptr;
        edge |= dynamic_cast<GraphEdgeItem*>(item) != nullptr;
      }
      if (edge && !node) background = QPoint(x, y);
    }
  QVERIFY(background.x() >= 0);
  // Dragging the background pans and keeps the selection.
  const int before = graph->verticalScrollBar()->value();
  QTest::mousePress(graph->viewport(), Qt::LeftButton, Qt::NoModifier, background);
  QTest::mouseMove(graph->viewport(), background + QPoint(0, -60));
  QTest::mouseRelease(graph->viewport(), Qt::LeftButton, Qt::NoModifier,
                      background + QPoint(0, -60));
  QCOMPARE(graph->verticalScrollBar()->value(), before + 60);
  QCOMPARE(document.selectedNodes(), QStringList{"residual_1"});
  // A click on the background selects nothing.
  QTest::mouseClick(graph->viewport(), Qt::LeftButton, Qt::NoModifier, background);
  QVERIFY(document.selectedNodes().isEmpty());
  QVERIFY(graph->graphScene()->selectedIds().isEmpty());
}

void TestGraphView::propertiesShowSelectedNode() {
  StudioDocument document;
  JobRunner jobs;
  PropertiesPanel panel(&document, &jobs);
  std::shared_ptr<const Network> network = loadTinyBert();
  document.setModel("tiny_bert.onnx", network);
  QVERIFY(jobs.waitForIdle(kLayoutTimeoutMs));
  QCOMPARE(panel.sections(), QStringList{"Nothing selected"});
  document.selectNodes({"ln_embed"});
  const Node* node = nullptr;
  for (const Node& n : network->graph.nodes)
    if (n.displayName() == "ln_embed") node = &n;
  QVERIFY(node);
  QCOMPARE(panel.text({"Node", "Op type"}), QString("LayerNormalization"));
  QCOMPARE(panel.text({"Node", "Domain"}), QString("ai.onnx"));
  QCOMPARE(panel.text({"Node", "Opset"}), QString::number(node->opset));
  bool ok = false;
  const double epsilon = panel.text({"Attributes", "epsilon"}).toDouble(&ok);
  QVERIFY(ok);
  QVERIFY(std::abs(epsilon - node->attrFloat("epsilon", -1)) < 1e-9);
  QVERIFY(epsilon > 0);
  QCOMPARE(panel.text({"Attributes", "axis"}), QString::number(node->attrInt("axis", 0)));
  // The input's shape comes from shape inference, dims joined by " x ".
  const QString input = panel.text({"Inputs", QString::fromStdString(node->inputs[0])});
  QCOMPARE(input, QString("float32, batch x seq x 32"));
  // Weight statistics equal the ones computed here from the initializer.
  const std::string scaleName = node->inputs[1];
  const Tensor& scale = network->graph.initializers.at(scaleName);
  double sum = 0, lo = 1e300, hi = -1e300;
  for (int64_t i = 0; i < scale.numel(); ++i) {
    const double v = scale.data<float>()[i];
    sum += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const QString weight = QString::fromStdString(scaleName);
  QCOMPARE(panel.text({"Weights", weight, "count"}), QLocale().toString(qint64(scale.numel())));
  QVERIFY(std::abs(panel.text({"Weights", weight, "mean"}).toDouble() - sum / scale.numel()) <
          1e-5);
  QVERIFY(std::abs(panel.text({"Weights", weight, "min"}).toDouble() - lo) < 1e-5);
  QVERIFY(std::abs(panel.text({"Weights", weight, "max"}).toDouble() - hi) < 1e-5);
  QVERIFY(hi > lo);  // random, not constant
  // With an engine loaded, the node's layer is shown.
  document.setEngine("e.kiln", nullptr, threeLayerReport());
  document.selectNodes({"ln_embed"});
  QCOMPARE(panel.text({"Engine layer", "Name"}), QString("relu_b"));
  QCOMPARE(panel.text({"Engine layer", "Precision"}), QString("Int8"));
}

void TestGraphView::search_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<int>("matches");
  QTest::addColumn<QString>("first");
  QTest::newRow("op type, any case") << "softmax" << 1 << "softmax";
  QTest::newRow("op type, many") << "MATMUL" << 8 << "q_matmul";
  QTest::newRow("name substring") << "_transpose" << 3 << "q_transpose";
  QTest::newRow("op type or name") << "transpose" << 5 << "q_transpose";
  QTest::newRow("input box") << "input_ids" << 1 << "input:input_ids";
  QTest::newRow("nothing") << "no-such-node" << 0 << "";
}

void TestGraphView::search() {
  QFETCH(QString, text);
  QFETCH(int, matches);
  QFETCH(QString, first);
  StudioDocument document;
  JobRunner jobs;
  ModelGraphView view(&document, &jobs);
  document.setModel("tiny_bert.onnx", loadTinyBert());
  QVERIFY(jobs.waitForIdle(kLayoutTimeoutMs));
  GraphView* graph = view.graphView();
  graph->search(text);
  QCOMPARE(graph->searchBox()->text(), text);
  if (matches == 0) {
    QCOMPARE(graph->searchStatus(), QString("no match"));
    QVERIFY(graph->graphScene()->selectedIds().isEmpty());
    return;
  }
  QCOMPARE(graph->searchStatus(), QString("1 of %1").arg(matches));
  QCOMPARE(graph->graphScene()->selectedIds(), QStringList{first});
  if (!first.startsWith("input:")) QCOMPARE(document.selectedNodes(), QStringList{first});
  // Enter goes to the next match, wrapping around.
  emit graph->searchBox()->returnPressed();
  QCOMPARE(graph->searchStatus(), QString("%1 of %2").arg(matches > 1 ? 2 : 1).arg(matches));
}

void TestGraphView::engineGraphColoursAndSelection() {
  StudioDocument document;
  JobRunner jobs;
  EngineGraphView view(&document, &jobs);
  view.resize(800, 600);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  document.setEngine("e.kiln", nullptr, threeLayerReport());
  QVERIFY(jobs.waitForIdle(kLayoutTimeoutMs));
  GraphScene* scene = view.graphView()->graphScene();
  // 3 layers + 2 bindings; edges x->conv_a, conv_a->relu_b, conv_a->fc_c, relu_b->fc_c, fc_c->y.
  QCOMPARE(scene->nodeCount(), 5);
  QCOMPARE(scene->edgeCount(), 5);
  QCOMPARE(scene->edgeItem(0)->label(), QString("1×8×16×16"));
  const QColor fp16 = scene->nodeItem(scene->indexOf("0"))->fill();
  const QColor int8 = scene->nodeItem(scene->indexOf("1"))->fill();
  const QColor fp32 = scene->nodeItem(scene->indexOf("2"))->fill();
  QVERIFY(fp16 != int8 && int8 != fp32 && fp16 != fp32);
  QCOMPARE(fp16, precisionColor("FP16"));
  QCOMPARE(int8, precisionColor("INT8"));
  QVERIFY(view.graphView()->legendText().contains("INT8"));
  QVERIFY(!view.graphView()->legendText().contains("BF16"));
  // By share of time: more time, more red (less green), without a new layout.
  view.setColouring(EngineColouring::kTimeShare);
  QCOMPARE(jobs.runningCount(), 0);
  const int g0 = scene->nodeItem(scene->indexOf("0"))->fill().green();
  const int g1 = scene->nodeItem(scene->indexOf("1"))->fill().green();
  const int g2 = scene->nodeItem(scene->indexOf("2"))->fill().green();
  QVERIFY(g0 > g1 && g1 > g2);
  QCOMPARE(scene->nodeItem(scene->indexOf("2"))->fill(), timeShareColor(1.0));
  QVERIFY(view.graphView()->legendText().startsWith("Share of time"));
  QVERIFY(view.graphView()->legendText().contains("60.0 %"));
  // Selection both ways.
  document.selectLayer(2);
  QCOMPARE(scene->selectedIds(), QStringList{"2"});
  clickItem(view.graphView(), scene->nodeItem(scene->indexOf("1")));
  QCOMPARE(document.selectedLayer(), 1);
  QCOMPARE(document.selectedNodes(), QStringList{"ln_embed"});
}

void TestGraphView::propertiesShowLayerWithoutNode() {
  StudioDocument document;
  JobRunner jobs;
  PropertiesPanel panel(&document, &jobs);
  document.setEngine("trtexec.json", nullptr, threeLayerReport());
  document.selectLayer(2);
  QCOMPARE(panel.text({"Layer", "Name"}), QString("fc_c"));
  QCOMPARE(panel.text({"Layer", "Precision"}), QString("FP32"));
  QCOMPARE(panel.text({"Layer", "Source nodes"}), QString("q_matmul, q_bias"));
  QCOMPARE(panel.text({"Layer", "Parameters", "kernel"}), QString("3x3"));
  QCOMPARE(panel.text({"Inputs", "b"}), QString("1 x 8 x 16 x 16, Row major linear FP32"));
  QCOMPARE(panel.text({"Layer", "Share of time"}), QString("60.00 %"));
}

void TestGraphView::largeGraphKeepsGuiResponsive() {
  StudioDocument document;
  JobRunner jobs;
  ModelGraphView view(&document, &jobs);
  view.resize(1000, 700);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  std::shared_ptr<const Network> network = ladderNetwork(2000);
  QElapsedTimer clock;
  EventLoopProbe probe;
  clock.start();
  probe.start();
  document.setModel("ladder", network);
  QVERIFY(view.graphView()->notice().contains("Laying out"));
  QVERIFY(jobs.waitForIdle(kLayoutTimeoutMs));
  const double shownSeconds = clock.nsecsElapsed() / 1e9;
  QTest::qWait(300);  // paint the new scene, scroll, zoom while the ticker runs
  view.graphView()->zoomBy(0.5);
  view.graphView()->fitAll();
  QTest::qWait(200);
  probe.stop();
  GraphScene* scene = view.graphView()->graphScene();
  QCOMPARE(scene->nodeCount(), 2000 + 2);
  QCOMPARE(scene->edgeCount(), countLinks(*network));
  QCOMPARE(scene->graph()->layout.algorithm, LayoutAlgorithm::kLayered);
  QVERIFY(view.graphView()->notice().contains("fast layered"));
  qInfo(
      "2,000-node ladder: layout %.3f s, shown after %.3f s, longest GUI event-loop slice "
      "%lld ms CPU (%lld ms wall)",
      scene->graph()->layout.seconds, shownSeconds, probe.worstCpuMs(), probe.worstWallMs());
  // Work on the GUI thread stays under 100 ms a slice (CPU time: robust to a
  // loaded machine); no wait on the layout job blocks it (wall time).
  QVERIFY2(probe.worstCpuMs() < 100,
           qPrintable(QString("GUI thread worked %1 ms at a stretch").arg(probe.worstCpuMs())));
  QVERIFY2(probe.worstWallMs() < 1000,
           qPrintable(QString("GUI blocked for %1 ms").arg(probe.worstWallMs())));
}

// x -> Relu -> If(c); both branches read the Relu's output from the outer graph.
std::shared_ptr<const Network> ifNetwork() {
  auto network = std::make_shared<Network>();
  network->opsets[""] = 17;
  Graph& g = network->graph;
  g.inputs.push_back({"x", DataType::kFloat32, true, {DimExpr(4)}});
  g.inputs.push_back({"c", DataType::kBool, true, {}});
  Node relu;
  relu.name = "relu";
  relu.opType = "Relu";
  relu.inputs = {"x"};
  relu.outputs = {"r"};
  auto branch = [](const std::string& name, const std::string& op) {
    auto body = std::make_shared<Graph>();
    body->name = name;
    Node n;
    n.name = name + "_op";
    n.opType = op;
    n.inputs = {"r"};
    n.outputs = {name + "_out"};
    body->nodes.push_back(n);
    body->outputs.push_back({name + "_out", DataType::kFloat32, true, {DimExpr(4)}});
    Attribute a;
    a.kind = Attribute::Kind::kGraph;
    a.g = body;
    return a;
  };
  Node cond;
  cond.name = "choose";
  cond.opType = "If";
  cond.index = 1;
  cond.inputs = {"c"};
  cond.outputs = {"y"};
  cond.attributes["then_branch"] = branch("then", "Identity");
  cond.attributes["else_branch"] = branch("else", "Neg");
  g.nodes = {relu, cond};
  g.outputs.push_back({"y", DataType::kFloat32, true, {DimExpr(4)}});
  return network;
}

void TestGraphView::subgraphNodeIsOneBox() {
  StudioDocument document;
  JobRunner jobs;
  ModelGraphView view(&document, &jobs);
  PropertiesPanel panel(&document, &jobs);
  std::shared_ptr<const Network> network = ifNetwork();
  document.setModel("if.onnx", network);
  QVERIFY(jobs.waitForIdle(kLayoutTimeoutMs));
  GraphScene* scene = view.graphView()->graphScene();
  // 2 inputs + relu + If + 1 output; the branches' nodes are not boxes.
  QCOMPARE(scene->nodeCount(), 5);
  QCOMPARE(scene->indexOf("then_op"), -1);
  // x->relu, c->choose, relu->choose (read inside both branches), choose->y.
  QCOMPARE(countLinks(*network), 4);
  QCOMPARE(scene->edgeCount(), 4);
  document.selectNodes({"choose"});
  QCOMPARE(panel.text({"Node", "Subgraphs"}), QString("2"));
  QCOMPARE(panel.text({"Attributes", "then_branch"}), QString("subgraph 'then' (1 nodes)"));
}

void TestGraphView::svgExport() {
  StudioDocument document;
  JobRunner jobs;
  ModelGraphView view(&document, &jobs);
  QVERIFY(view.toSvg().isEmpty());
  document.setModel("tiny_bert.onnx", loadTinyBert());
  QVERIFY(jobs.waitForIdle(kLayoutTimeoutMs));
  const QByteArray svg = view.toSvg();
  QVERIFY(svg.contains("<svg"));
  QVERIFY(svg.contains("LayerNormalization"));
  QVERIFY(svg.size() > 10000);
}

QTEST_MAIN(TestGraphView)
#include "test_graph_view.moc"
