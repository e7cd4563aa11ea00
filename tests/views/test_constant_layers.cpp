// Constant layers (and Shape, and Identity that keeps its type) cost nothing per run
// (issue 26): the layer table hides them until "Show constants" is ticked, the charts
// leave them out likewise, and the Build dock's rule list does not offer such nodes
// until its own "Show constants" is ticked.
#include <QCheckBox>
#include <QTableView>
#include <QtTest>

#include "chart_series.h"
#include "constraints_table.h"
#include "layer_table_model.h"
#include "layer_table_view.h"
#include "studio_document.h"

namespace kiln::studio {
namespace {

inspector::ReportLayer layer(const std::string& name, const std::string& opType, double ms) {
  inspector::ReportLayer l;
  l.name = name;
  l.layerType = opType;
  l.opType = opType;
  l.precision = "FP16";
  l.milliseconds = ms;
  return l;
}

std::shared_ptr<inspector::EngineReport> fp16Report() {
  auto report = std::make_shared<inspector::EngineReport>();
  report->origin = "kiln plan";
  report->backend = "cpu";
  report->layers = {layer("Constant_59", "Constant", 0.277), layer("Conv_0", "Conv", 1.25),
                    layer("Constant_60", "Constant", 0.1),   layer("Relu_1", "Relu", 0.05),
                    layer("Shape_2", "Shape", 0.02),         layer("Identity_3", "Identity", 0.03)};
  inspector::updateShares(report.get());
  return report;
}

QStringList visibleNames(const LayerTableView& view) {
  QStringList names;
  const QAbstractItemModel* model = view.table()->model();
  for (int row = 0; row < model->rowCount(); ++row)
    names << model->index(row, LayerTableModel::kName).data().toString();
  return names;
}

}  // namespace

class TestConstantLayers : public QObject {
  Q_OBJECT

 private slots:
  void layerTableHidesConstantsUntilShown() {
    StudioDocument document;
    document.setReport(fp16Report());
    LayerTableView view(&document);
    QVERIFY(!view.showConstantsBox()->isChecked());
    QCOMPARE(visibleNames(view), (QStringList{"Conv_0", "Relu_1"}));
    view.showConstantsBox()->setChecked(true);
    QCOMPARE(visibleNames(view), (QStringList{"Constant_59", "Conv_0", "Constant_60", "Relu_1",
                                              "Shape_2", "Identity_3"}));
    // Selecting a shown Constant maps back to its report layer.
    view.table()->selectRow(0);
    QCOMPARE(document.selectedLayer(), 0);
    view.setShowConstants(false);
    QVERIFY(!view.showConstantsBox()->isChecked());
    QCOMPARE(visibleNames(view), (QStringList{"Conv_0", "Relu_1"}));
    saveScreenshot(view);
  }

  void chartsLeaveConstantsOut() {
    const auto report = fp16Report();
    const ChartSeries latency = computeChart(*report, ChartKind::kLayerLatency, 10);
    QCOMPARE(latency.layers, (std::vector<int>{1, 3}));
    const ChartSeries byType = computeChart(*report, ChartKind::kTypeTime, 10);
    QCOMPARE(byType.categories, (std::vector<std::string>{"Conv", "Relu"}));
    const ChartSeries memory = computeChart(*report, ChartKind::kMemory, 10);
    QCOMPARE(memory.layers, (std::vector<int>{1, 3}));
    const ChartSeries all = computeChart(*report, ChartKind::kLayerLatency, 10, true);
    QCOMPARE(all.layers, (std::vector<int>{1, 0, 2, 3, 5, 4}));
  }

  void anIdentityThatConvertsIsNotHidden() {
    inspector::ReportLayer cast = layer("Identity_7", "Identity", 0.4);
    cast.inputs = {{"x", {1, 8}, "Row major linear FP32"}};
    cast.outputs = {{"y", {1, 8}, "Row major linear FP16 format"}};
    QVERIFY(!inspector::isConstantLayer(cast));
    cast.outputs[0].formatDatatype = "Row major linear FP32";
    QVERIFY(inspector::isConstantLayer(cast));
  }

  void ruleListLeavesConstantNodesOut() {
    Network network;
    network.graph.inputs = {{"x", DataType::kFloat32, true, {DimExpr(1), DimExpr(8)}},
                            {"t", DataType::kFloat32, true, {DimExpr::symbol("n")}}};
    const std::vector<std::pair<const char*, const char*>> nodes = {
        {"Constant", ""},  {"Conv", "x"},  {"Constant", ""}, {"Relu", "x"},
        {"Identity", "x"}, {"Shape", "x"}, {"Shape", "t"}};
    for (const auto& [op, input] : nodes) {
      Node node;
      node.opType = op;
      node.name = std::string(op) + "_" + std::to_string(network.graph.nodes.size());
      if (*input) node.inputs = {input};
      node.outputs = {node.name};
      network.graph.nodes.push_back(node);
    }
    ConstraintsTable table;
    ConstraintsModel& model = *table.model();
    model.setNetwork(&network);
    // (every layer), Conv_1, Relu_3, and Shape_6 (of a dynamic dim: a real layer).
    QCOMPARE(model.rowCount(), 4);
    QCOMPARE(model.opTypes(), (QStringList{"Conv", "Relu", "Shape"}));
    QVERIFY(model.setRule(model.rowOf("Relu_3"), ConstraintsModel::kPrecision, DataType::kFloat16));
    QVERIFY(!table.showConstantsBox()->isChecked());
    table.showConstantsBox()->setChecked(true);
    QCOMPARE(model.rowCount(), 8);
    QCOMPARE(model.rowOf("Shape_5"), 6);
    QCOMPARE(model.precisionRules().size(), size_t{1});  // the rule survived the toggle
    QCOMPARE(model.precisionRules().front().pattern, std::string("Relu_3"));
    table.showConstantsBox()->setChecked(false);
    QCOMPARE(model.rowCount(), 4);
  }

  // Scoped exporter names share their start (jax2tf_get_logits_/pjit_.../Conv_0/Conv2D):
  // the rule list elides them in the middle, and the tooltip holds the whole name.
  void ruleListKeepsTheEndOfLongNames() {
    Network network;
    network.graph.inputs = {{"x", DataType::kFloat32, true, {DimExpr(1), DimExpr(8)}}};
    const std::string name = "jax2tf_get_logits_/pjit_get_logits_/MagikaV2/Conv_0/Conv2D";
    Node node;
    node.opType = "Relu";
    node.name = name;
    node.inputs = {"x"};
    node.outputs = {"y"};
    network.graph.nodes.push_back(node);
    ConstraintsTable table;
    table.model()->setNetwork(&network);
    auto* view = table.findChild<QTableView*>();
    QVERIFY(view);
    QCOMPARE(view->textElideMode(), Qt::ElideMiddle);
    const QModelIndex cell = table.model()->index(1, ConstraintsModel::kName);
    QCOMPARE(table.model()->data(cell, Qt::ToolTipRole).toString(), QString::fromStdString(name));
  }

 private:
  // With KILN_SCREENSHOT_DIR set (under Xvfb), the table with its toggle for docs/.
  static void saveScreenshot(LayerTableView& view) {
    const QString dir = qEnvironmentVariable("KILN_SCREENSHOT_DIR");
    if (dir.isEmpty()) return;
    view.resize(900, 260);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QTest::qWait(100);
    QVERIFY(view.grab().save(dir + "/layers-constants-hidden.png"));
  }
};

}  // namespace kiln::studio

QTEST_MAIN(kiln::studio::TestConstantLayers)
#include "test_constant_layers.moc"
