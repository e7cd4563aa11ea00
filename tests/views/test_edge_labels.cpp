// Edge labels of the model graph (issue 26 item 8): each dimension prints as its number,
// its symbol's name or "?", the label stays short, and the whole symbolic shape is in
// the edge's tooltip and the properties panel.
#include <QtTest>

#include "model_graph_view.h"
#include "properties_panel.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

constexpr int kLayoutTimeoutMs = 60000;

ValueInfo floatValue(const std::string& name, SymbolicShape shape) {
  return {name, DataType::kFloat32, true, std::move(shape)};
}

// What a Reshape after a strided Conv leaves behind: floor((max(batch * 64 + 7, 3) - 1) / 2).
DimExpr longExpression() {
  const DimExpr batch = DimExpr::symbol("batch");
  return DimExpr::floorDiv(DimExpr::max(batch * DimExpr(64) + DimExpr(7), DimExpr(3)) - DimExpr(1),
                           DimExpr(2)) +
         DimExpr::min(batch, DimExpr(5));
}

// x (batch x 32 x 64) -> Reshape -> r (batch x 32 x long) -> Concat -> y (12 dims).
std::shared_ptr<const Network> symbolicNetwork() {
  auto network = std::make_shared<Network>();
  network->opsets[""] = 17;
  Graph& g = network->graph;
  const DimExpr batch = DimExpr::symbol("batch");
  g.inputs.push_back(floatValue("x", {batch, DimExpr(32), DimExpr(64)}));
  Node reshape;
  reshape.name = "reshape";
  reshape.opType = "Reshape";
  reshape.opset = 17;
  reshape.inputs = {"x"};
  reshape.outputs = {"r"};
  Node concat = reshape;
  concat.index = 1;
  concat.name = "concat";
  concat.opType = "Concat";
  concat.inputs = {"r"};
  concat.outputs = {"y"};
  g.nodes = {reshape, concat};
  // Declared for every output, so the studio takes them as they are.
  g.valueInfo["r"] = floatValue("r", {batch, DimExpr(32), longExpression()});
  SymbolicShape wide(12, DimExpr(1024));
  wide[0] = batch;
  g.valueInfo["y"] = floatValue("y", wide);
  g.outputs.push_back(g.valueInfo["y"]);
  return network;
}

GraphEdgeItem* edgeInto(GraphScene* scene, const QString& to) {
  for (int e = 0; e < scene->edgeCount(); ++e)
    if (scene->edgeItem(e)->to()->id() == to) return scene->edgeItem(e);
  return nullptr;
}

}  // namespace

class TestEdgeLabels : public QObject {
  Q_OBJECT

 private slots:
  void shortLabelsAndFullTooltips();
  void shortShapeText_data();
  void shortShapeText();
};

void TestEdgeLabels::shortLabelsAndFullTooltips() {
  StudioDocument document;
  JobRunner jobs;
  ModelGraphView view(&document, &jobs);
  PropertiesPanel panel(&document, &jobs);
  document.setModel("symbolic.onnx", symbolicNetwork());
  QVERIFY(jobs.waitForIdle(kLayoutTimeoutMs));
  GraphScene* scene = view.graphView()->graphScene();
  QCOMPARE(scene->edgeCount(), 3);
  const QString expression = QString::fromStdString(longExpression().toString());
  QVERIFY2(expression.size() > 40, qPrintable(expression));

  GraphEdgeItem* x = edgeInto(scene, "reshape");
  QVERIFY(x);
  QCOMPARE(x->label(), QString("batch×32×64"));
  QCOMPARE(x->toolTip(), QString("x\nfloat32, batch x 32 x 64"));

  GraphEdgeItem* r = edgeInto(scene, "concat");
  QVERIFY(r);
  QCOMPARE(r->label(), QString("batch×32×?"));
  QCOMPARE(r->toolTip(), "r\nfloat32, batch x 32 x " + expression);

  GraphEdgeItem* y = edgeInto(scene, "output:y");
  QVERIFY(y);
  QCOMPARE(y->label(), QString("batch×1024×1024×…×1024×1024×1024"));
  QVERIFY(y->toolTip().endsWith(QStringLiteral(" x 1024").repeated(11)));

  // The properties panel keeps the whole expression.
  document.selectNodes({"concat"});
  QCOMPARE(panel.text({"Inputs", "r"}), "float32, batch x 32 x " + expression);

  const QString dir = qEnvironmentVariable("KILN_SCREENSHOT_DIR");
  if (!dir.isEmpty()) {
    view.resize(520, 420);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QTest::qWait(300);
    QVERIFY(view.grab().save(dir + "/edge-labels.png"));
  }
}

void TestEdgeLabels::shortShapeText_data() {
  QTest::addColumn<int>("dims");
  QTest::addColumn<QString>("expected");
  QTest::newRow("scalar") << 0 << "scalar";
  QTest::newRow("short") << 3 << "1×2×3";
  QTest::newRow("elided") << 20 << "1×2×3×4×5×6×…×15×16×17×18×19×20";
}

void TestEdgeLabels::shortShapeText() {
  QFETCH(int, dims);
  QFETCH(QString, expected);
  SymbolicShape shape;
  for (int i = 1; i <= dims; ++i) shape.push_back(DimExpr(i));
  const QString text = studio::shortShapeText(shape, QStringLiteral("×"));
  QCOMPARE(text, expected);
  QVERIFY(text.size() <= 32);
}

QTEST_MAIN(TestEdgeLabels)
#include "test_edge_labels.moc"
