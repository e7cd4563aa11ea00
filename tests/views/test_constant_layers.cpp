// Constant layers cost nothing per run (issue 26): the layer table hides them until
// "Show constants" is ticked, the charts leave them out likewise, and the Build dock's
// rule list does not offer Constant nodes.
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
                    layer("Constant_60", "Constant", 0.1), layer("Relu_1", "Relu", 0.05)};
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
    QCOMPARE(visibleNames(view), (QStringList{"Constant_59", "Conv_0", "Constant_60", "Relu_1"}));
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
    QCOMPARE(all.layers, (std::vector<int>{1, 0, 2, 3}));
  }

  void ruleListLeavesConstantNodesOut() {
    Network network;
    for (const char* op : {"Constant", "Conv", "Constant", "Relu"}) {
      Node node;
      node.opType = op;
      node.name = std::string(op) + "_" + std::to_string(network.graph.nodes.size());
      node.outputs = {node.name};
      network.graph.nodes.push_back(node);
    }
    ConstraintsModel model;
    model.setNetwork(&network);
    QCOMPARE(model.rowCount(), 3);  // (every layer), Conv_1, Relu_3
    QCOMPARE(model.opTypes(), (QStringList{"Conv", "Relu"}));
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
