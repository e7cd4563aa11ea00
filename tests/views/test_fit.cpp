// Reading a large model and panels that fit (issue 26 items 10 and 11): a search hit at
// an overview zoom is zoomed to and shown; the graph legend folds on a click; a chart bar for the
// selected layer is drawn highlighted; elided names keep what tells them apart; the layer table
// shows Time and % before the long Tactic column; the Properties panel keeps its values on screen
// next to long tensor names.
#include <QHeaderView>
#include <QTableView>
#include <QTreeWidget>
#include <QtTest>

#include "charts_view.h"
#include "engine_report.h"
#include "graph_items.h"
#include "graph_scene.h"
#include "graph_view.h"
#include "job_runner.h"
#include "kiln/onnx_import.h"
#include "layer_table_model.h"
#include "layer_table_view.h"
#include "model_graph_view.h"
#include "properties_panel.h"
#include "studio_document.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

constexpr int kLayoutTimeoutMs = 60000;

std::shared_ptr<const Network> loadTinyBert() {
  const std::string path = qgetenv("KILN_TEST_DATA_DIR").toStdString() + "/builder/tiny_bert.onnx";
  Result<Network> network = importOnnxFile(path);
  if (!network.isOk()) qFatal("cannot import %s", path.c_str());
  return std::make_shared<const Network>(std::move(network.value()));
}

inspector::ReportTensor tensor(const std::string& name) {
  inspector::ReportTensor t;
  t.name = name;
  t.dimensions = {1, 64};
  t.formatDatatype = "Row major linear FP16 format";
  return t;
}

// `count` layers timed 1..count ms with tactic names long enough to fill a screen.
std::shared_ptr<const inspector::EngineReport> longTacticReport(int count) {
  auto report = std::make_shared<inspector::EngineReport>();
  report->origin = "test";
  for (int i = 0; i < count; ++i) {
    inspector::ReportLayer l;
    l.name = "layer_" + std::to_string(i);
    l.layerType = "CaskConvolution";
    l.precision = "FP16";
    l.tactic =
        "sm90_xmma_fprop_implicit_gemm_indexed_f16f16_f16f32_nhwckrsc_nhwc_tilesize128x128"
        "x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cudnn_" +
        std::to_string(i);
    l.milliseconds = i + 1;
    l.inputs = {tensor("a_tensor_with_a_rather_long_name_from_an_exporter_" + std::to_string(i))};
    l.outputs = {tensor("out_" + std::to_string(i))};
    report->layers.push_back(l);
  }
  inspector::updateShares(report.get());
  return report;
}

// Tiny BERT's model graph shown in a 900 x 600 view (layout still running).
struct TinyBertGraph {
  StudioDocument document;
  JobRunner jobs;
  ModelGraphView view{&document, &jobs};
  TinyBertGraph() {
    view.resize(900, 600);
    view.show();
    document.setModel("tiny_bert.onnx", loadTinyBert());
  }
};

}  // namespace

class TestFit : public QObject {
  Q_OBJECT
 private slots:
  void searchAtAnOverviewZoomZoomsToTheHit() {
    TinyBertGraph g;
    QVERIFY(g.jobs.waitForIdle(kLayoutTimeoutMs));
    GraphView* graph = g.view.graphView();
    graph->zoomBy(0.02);  // the whole graph as dots
    QVERIFY(graph->zoom() < 0.5);
    graph->search("softmax");
    QVERIFY2(graph->zoom() >= 0.89, qPrintable(QString::number(graph->zoom())));
    GraphNodeItem* hit = graph->graphScene()->nodeItem(graph->graphScene()->indexOf("softmax"));
    QVERIFY(hit);
    const QRectF visible = graph->mapToScene(graph->viewport()->rect()).boundingRect();
    QVERIFY(visible.contains(hit->sceneBoundingRect().center()));
  }

  // The op-category legend covered nodes: a click folds it to its title and back.
  void theLegendFoldsOnAClick() {
    TinyBertGraph g;
    QVERIFY(g.jobs.waitForIdle(kLayoutTimeoutMs));
    GraphView* graph = g.view.graphView();
    QWidget* legend = graph->legendWidget();
    QVERIFY(legend->isVisible());
    const int open = legend->height();
    QTest::mouseClick(legend, Qt::LeftButton);
    QVERIFY(graph->legendCollapsed());
    QVERIFY2(legend->height() < open / 2,
             qPrintable(QString("%1 -> %2").arg(open).arg(legend->height())));
    QTest::mouseClick(legend, Qt::LeftButton);
    QVERIFY(!graph->legendCollapsed());
    QCOMPARE(legend->height(), open);
  }

  void theSelectedLayersBarIsHighlighted() {
    StudioDocument document;
    ChartsView charts(&document);
    charts.resize(800, 500);
    document.setEngine("e.kiln", nullptr, longTacticReport(6));
    QVERIFY(charts.barCount() > 0);
    QCOMPARE(charts.highlightedBar(), -1);
    charts.activateBar(2);  // what a click does
    QCOMPARE(charts.highlightedBar(), 2);
    QCOMPARE(document.selectedLayer(), charts.layerOfBar(2));
    // Selected elsewhere (the layer table, a graph): the bar follows.
    document.selectLayer(charts.layerOfBar(4));
    QCOMPARE(charts.highlightedBar(), 4);
    document.selectLayer(-1);
    QCOMPARE(charts.highlightedBar(), -1);
  }

  void elisionKeepsWhatTellsNamesApart() {
    const QString a = "Reformatting CopyNode for Input Tensor 0 to Conv_5 + Add_6 + Relu_7";
    const QString b = "Reformatting CopyNode for Input Tensor 1 to Conv_5 + Add_6 + Relu_7";
    const QString ea = GraphStyle::elide(a, 0), eb = GraphStyle::elide(b, 0);
    QVERIFY2(ea != eb, qPrintable(ea));
    QVERIFY2(ea.startsWith("Reformat in0") && eb.startsWith("Reformat in1"), qPrintable(ea));
    QVERIFY2(ea.contains("Relu_7"), qPrintable(ea));
    QCOMPARE(GraphStyle::shortName("Reformatted Output Tensor 2 to gemm"),
             QString::fromUtf8("Reformat out2 \u2192 gemm"));
    // A long fused name keeps its first and last nodes whole.
    const QString fused =
        "model.encoder.layer.11.attention.self.query_matmul + model.encoder.layer.11.attention."
        "self.query_bias + model.encoder.layer.11.attention.self.gelu_activation";
    const QString e = GraphStyle::elide(fused, 1);
    QVERIFY2(e.contains(QString::fromUtf8("\u2026")), qPrintable(e));
    QVERIFY2(e.size() < fused.size(), qPrintable(e));
    QCOMPARE(GraphStyle::elide("Relu_3", 0), QString("Relu_3"));
  }

  // At 1366 x 768 the Layers tab leaves the table ~610 px (docs/screenshots): with long
  // fused names (a QAT engine's "features.15.conv.2.weight + QuantizeLinear_722 + ...")
  // and long layer types, time and share must still show.
  void layerTableShowsTheNumbersFirst() {
    QVERIFY(LayerTableModel::kTime < LayerTableModel::kTactic);
    QVERIFY(LayerTableModel::kPercent < LayerTableModel::kTactic);
    StudioDocument document;
    LayerTableView view(&document);
    view.resize(620, 500);
    view.show();
    auto report = std::make_shared<inspector::EngineReport>(*longTacticReport(4));
    for (inspector::ReportLayer& l : report->layers) {
      l.name = "features.15.conv.2.weight + QuantizeLinear_722 + Conv_726 + Add_728 + " + l.name;
      l.layerType = "CudaDepthwiseConvolution";
    }
    document.setEngine("e.kiln", nullptr, report);
    QTableView* table = view.table();
    QCOMPARE(table->model()->headerData(LayerTableModel::kTime, Qt::Horizontal).toString(),
             QString("Time (ms)"));
    QHeaderView* header = table->horizontalHeader();
    for (int column : {LayerTableModel::kTime, LayerTableModel::kPercent}) {
      const int right = header->sectionViewportPosition(column) + header->sectionSize(column);
      QVERIFY2(right <= table->viewport()->width(),
               qPrintable(QString("column %1 ends at %2 of %3")
                              .arg(column)
                              .arg(right)
                              .arg(table->viewport()->width())));
    }
  }

  // Issue 25 item 2 in the studio: the layer table's roofline columns.
  void layerTableShowsTheRoofline() {
    auto report = std::make_shared<inspector::EngineReport>(*longTacticReport(2));
    report->device = "NVIDIA H200";
    report->layers[0].flops = 2e9;  // 2 GFLOP over 1 ms: 2 TFLOP/s
    report->layers[0].precision = "FP16";
    LayerTableModel model;
    model.setReport(report);
    auto text = [&](int row, int column) {
      return model.data(model.index(row, column), Qt::DisplayRole).toString();
    };
    QCOMPARE(model.headerData(LayerTableModel::kRoof, Qt::Horizontal, Qt::DisplayRole).toString(),
             QString("% roof"));
    QCOMPARE(text(0, LayerTableModel::kGflops), QString("2.0000"));
    QVERIFY(!text(0, LayerTableModel::kIntensity).isEmpty());
    const double roof =
        model.data(model.index(0, LayerTableModel::kRoof), LayerTableModel::kSortRole).toDouble();
    QVERIFY2(roof > 0 && roof < 100, qPrintable(QString::number(roof)));
    QVERIFY(model.data(model.index(0, LayerTableModel::kRoof), Qt::ToolTipRole)
                .toString()
                .contains("H200"));
    // No flops known for the second layer: empty, its reason in the tooltip.
    QVERIFY(text(1, LayerTableModel::kGflops).isEmpty() ||
            text(1, LayerTableModel::kGflops) != QString("2.0000"));
    // An unknown device: no roof, and the tooltip says why.
    report->device = "AMD EPYC";
    model.setReport(report);
    QVERIFY(text(0, LayerTableModel::kRoof).isEmpty());
    QVERIFY(model.data(model.index(0, LayerTableModel::kRoof), Qt::ToolTipRole)
                .toString()
                .contains("no vendor peaks"));
  }

  void propertiesKeepTheirValuesOnScreen() {
    StudioDocument document;
    JobRunner jobs;
    PropertiesPanel panel(&document, &jobs);
    panel.resize(420, 500);
    panel.show();
    document.setEngine("e.kiln", nullptr, longTacticReport(1));
    document.selectLayer(0);
    QTreeWidget* tree = panel.tree();
    QVERIFY(tree->topLevelItemCount() > 0);
    const int key = tree->columnWidth(0);
    QVERIFY2(key <= tree->viewport()->width() * 0.46,
             qPrintable(QString("%1 of %2").arg(key).arg(tree->viewport()->width())));
    QVERIFY(key >= 120);  // short keys stay whole in a narrow dock
    // The whole name is in the tooltip.
    QTreeWidgetItem* inputs = nullptr;
    for (int i = 0; i < tree->topLevelItemCount(); ++i)
      if (tree->topLevelItem(i)->text(0) == "Inputs") inputs = tree->topLevelItem(i);
    QVERIFY(inputs && inputs->childCount() > 0);
    QVERIFY(inputs->child(0)->toolTip(0).startsWith("a_tensor_with_a_rather_long_name"));
  }

  // With KILN_SCREENSHOT_DIR set (under Xvfb): the highlighted bar and the layer table
  // with the numbers first, as docs/screenshots/chart-highlight.png and layers-fit.png.
  void screenshots() {
    const QString dir = qEnvironmentVariable("KILN_SCREENSHOT_DIR");
    if (dir.isEmpty()) QSKIP("KILN_SCREENSHOT_DIR not set");
    StudioDocument document;
    ChartsView charts(&document);
    LayerTableView table(&document);
    charts.resize(760, 420);
    table.resize(1000, 260);
    charts.show();
    table.show();
    document.setEngine("e.kiln", nullptr, longTacticReport(6));
    charts.activateBar(3);
    QVERIFY(QTest::qWaitForWindowExposed(&charts));
    QVERIFY(QTest::qWaitForWindowExposed(&table));
    QTest::qWait(200);
    QVERIFY(charts.grab().save(dir + "/chart-highlight.png"));
    QVERIFY(table.grab().save(dir + "/layers-fit.png"));
    // The roofline columns, scrolled into view, on an H200 report with known FLOPs.
    auto roofs = std::make_shared<inspector::EngineReport>(*longTacticReport(6));
    roofs->device = "NVIDIA H200";
    for (size_t i = 0; i < roofs->layers.size(); ++i) {
      roofs->layers[i].flops = 4e9 * static_cast<double>(i + 1) * static_cast<double>(i + 1);
      roofs->layers[i].precision = "FP16";
    }
    document.setEngine("roofline.kiln", nullptr, roofs);
    table.table()->scrollTo(table.table()->model()->index(0, LayerTableModel::kSourceNodes));
    QTest::qWait(100);
    QVERIFY(table.grab().save(dir + "/layers-roofline.png"));
  }
};

QTEST_MAIN(TestFit)
#include "test_fit.moc"
