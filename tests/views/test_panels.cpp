// The build panel, layer table, tactics panel and charts on a real model
// (tests/data/builder/tiny_bert.onnx) built on the CPU backend, offscreen.
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <memory>

#include "build_panel.h"
#include "build_panel_fixture.h"
#include "chart_series.h"
#include "charts_view.h"
#include "constraints_table.h"
#include "job_runner.h"
#include "kiln/onnx_import.h"
#include "layer_table_model.h"
#include "layer_table_view.h"
#include "profiles_editor.h"
#include "shapes_dialog.h"
#include "studio_document.h"
#include "tactics_panel.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

QString modelPath() {
  return QString::fromLocal8Bit(qgetenv("KILN_TEST_DATA_DIR")) + "/builder/tiny_bert.onnx";
}

std::shared_ptr<const Network> tinyBert() {
  static std::shared_ptr<const Network> network = [] {
    auto imported = importOnnxFile(modelPath().toStdString());
    return imported.isOk() ? std::make_shared<const Network>(std::move(imported.value()))
                           : std::shared_ptr<const Network>();
  }();
  return network;
}

int nodesOfType(const Network& network, const std::string& opType) {
  return static_cast<int>(std::count_if(network.graph.nodes.begin(), network.graph.nodes.end(),
                                        [&](const Node& n) { return n.opType == opType; }));
}

const LayerPrecisionRule* ruleFor(const std::vector<LayerPrecisionRule>& rules,
                                  const std::string& pattern) {
  for (const LayerPrecisionRule& rule : rules)
    if (rule.pattern == pattern) return &rule;
  return nullptr;
}

// A document with tiny BERT open, a job runner and a build panel over them.
struct Studio : kiln::test::BuildPanelStudio {
  Studio() : BuildPanelStudio(modelPath(), tinyBert()) {}
  // Builds with the panel's settings; returns buildFinished's arguments.
  std::pair<bool, QString> build() {
    QSignalSpy finished(panel.get(), &BuildPanel::buildFinished);
    panel->startBuild();
    // The first build of a dynamic model asks for its shapes: Build, as a user would.
    if (ShapesDialog* dialog = panel->shapesDialog()) dialog->accept();
    jobs.waitForIdle(120000);
    if (finished.count() != 1) return {false, QStringLiteral("buildFinished was not emitted once")};
    return {finished[0][0].toBool(), finished[0][1].toString()};
  }
  void setShapes(const QString& min, const QString& opt, const QString& max) {
    ProfilesEditor* editor = panel->profilesEditor();
    editor->setShape(0, "input_ids", ProfilesEditor::kMin, min);
    editor->setShape(0, "input_ids", ProfilesEditor::kOpt, opt);
    editor->setShape(0, "input_ids", ProfilesEditor::kMax, max);
  }
};

}  // namespace

class TestPanels : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QVERIFY2(tinyBert(), qPrintable("cannot import " + modelPath())); }

  void fp8FlagReachesTheConfigAndTheCommandLine() {
    Studio s;
    auto* fp8 = s.panel->findChild<QCheckBox*>("fp8");
    QVERIFY(fp8);
    QVERIFY(fp8->isEnabled());
    fp8->setChecked(true);
    QVERIFY(s.document.buildConfig().fp8);
    QVERIFY2(s.panel->commandLine().contains("--fp8"), qPrintable(s.panel->commandLine()));
    fp8->setChecked(false);
    QVERIFY(!s.document.buildConfig().fp8);
  }

  void layerPrecisionBecomesARuleAndAFlag() {
    Studio s;
    s.panel->setLayerPrecision("q_matmul", DataType::kFloat16);
    s.panel->setConstraintMode(ConstraintMode::kObey);
    const BuilderConfig& config = s.document.buildConfig();
    const LayerPrecisionRule* rule = ruleFor(config.layerPrecisions, "q_matmul");
    QVERIFY(rule);
    QCOMPARE(rule->precision, DataType::kFloat16);
    QCOMPARE(config.layerPrecisions.size(), size_t(1));
    QCOMPARE(config.precisionConstraints, ConstraintMode::kObey);
    const QString line = s.panel->commandLine();
    QVERIFY2(line.contains("--layer-precisions q_matmul:fp16"), qPrintable(line));
    QVERIFY2(line.contains("--precision-constraints obey"), qPrintable(line));
    QVERIFY2(line.startsWith("kiln build " + modelPath()), qPrintable(line));
    // The dynamic input got the proposed profile: batch 1, sequence 128 (its names).
    QCOMPARE(config.profiles.size(), size_t(1));
    QCOMPARE(config.profiles[0].inputs.at("input_ids").opt, (Shape{1, 128}));
    // Clearing the rule removes it.
    s.panel->constraintsTable()->model()->setRule(
        s.panel->constraintsTable()->model()->rowOf("q_matmul"), ConstraintsModel::kPrecision,
        std::nullopt);
    QVERIFY(s.document.buildConfig().layerPrecisions.empty());
  }

  void bulkEditsAndFilter() {
    Studio s;
    ConstraintsTable* table = s.panel->constraintsTable();
    table->findChild<QComboBox*>("bulkOpType")->setCurrentText("MatMul");
    table->findChild<QComboBox*>("bulkPrecision")->setCurrentText("bf16");
    table->applyToOpType();
    const auto& rules = s.document.buildConfig().layerPrecisions;
    const int matmuls = nodesOfType(*tinyBert(), "MatMul");
    QVERIFY(matmuls >= 4);
    QCOMPARE(static_cast<int>(rules.size()), matmuls);
    for (const LayerPrecisionRule& rule : rules) QCOMPARE(rule.precision, DataType::kBFloat16);
    QVERIFY(ruleFor(rules, "ffn_out_matmul"));

    // Output types for the selected rows: the "*" row and softmax.
    table->findChild<QComboBox*>("bulkColumn")->setCurrentIndex(1);
    table->findChild<QComboBox*>("bulkPrecision")->setCurrentText("fp16");
    auto* view = table->findChild<QTableView*>();
    view->selectionModel()->clearSelection();
    const int softmax = table->model()->rowOf("softmax");
    view->selectionModel()->select(view->model()->index(0, 0),
                                   QItemSelectionModel::Select | QItemSelectionModel::Rows);
    view->selectionModel()->select(view->model()->index(softmax, 0),
                                   QItemSelectionModel::Select | QItemSelectionModel::Rows);
    table->applyToSelected();
    const auto& outputs = s.document.buildConfig().layerOutputTypes;
    QCOMPARE(outputs.size(), size_t(2));
    QVERIFY(ruleFor(outputs, "*") && ruleFor(outputs, "softmax"));
    QVERIFY(s.panel->commandLine().contains("--layer-output-types '*:fp16,softmax:fp16'"));

    // Every node but those that fold or run once (Constant, Identity, fixed Shape).
    const Network& bert = *tinyBert();
    const auto listed =
        std::count_if(bert.graph.nodes.begin(), bert.graph.nodes.end(),
                      [&bert](const Node& n) { return !isRunInvariantNode(bert, n); });
    QVERIFY(listed < static_cast<int>(bert.graph.nodes.size()));
    QCOMPARE(table->visibleRows(), static_cast<int>(listed) + 1);
    table->setFilter("gelu");
    QCOMPARE(table->visibleRows(), 5);  // gelu_div, gelu_erf, gelu_add, gelu_mul, gelu_half
    table->setFilter("LayerNormalization");
    QCOMPARE(table->visibleRows(), nodesOfType(*tinyBert(), "LayerNormalization"));
  }

  void profilesAreValidated() {
    Studio s;
    ProfilesEditor* editor = s.panel->profilesEditor();
    QVERIFY(editor->hasDynamicInputs());
    s.setShapes("4x8", "2x8", "8x8");
    QVERIFY(!editor->isValid());
    QVERIFY2(editor->problem().contains("input 'input_ids'") &&
                 editor->problem().contains("min <= opt <= max"),
             qPrintable(editor->problem()));
    QSignalSpy finished(s.panel.get(), &BuildPanel::buildFinished);
    s.panel->startBuild();
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished[0][0].toBool(), false);
    QVERIFY(finished[0][1].toString().contains("min <= opt <= max"));
    editor->setShape(0, "input_ids", ProfilesEditor::kMax, "1x2x3");
    QVERIFY2(editor->problem().contains("rank 3"), qPrintable(editor->problem()));
    editor->setShape(0, "input_ids", ProfilesEditor::kMax, "big");
    QVERIFY2(editor->problem().contains("'big'"), qPrintable(editor->problem()));

    s.setShapes("1x4", "2x8", "4x16");
    QVERIFY2(editor->isValid(), qPrintable(editor->problem()));
    editor->addProfile();
    QCOMPARE(editor->profileCount(), 2);
    editor->setShape(1, "input_ids", ProfilesEditor::kMax, "8x64");
    const auto& profiles = s.document.buildConfig().profiles;
    QCOMPARE(profiles.size(), size_t(2));
    QCOMPARE(profiles[0].inputs.at("input_ids").max, (Shape{4, 16}));
    QCOMPARE(profiles[1].inputs.at("input_ids").max, (Shape{8, 64}));
    QCOMPARE(s.panel->commandLine().count("--min-shapes"), 2);
    editor->removeProfile(0);
    QCOMPARE(s.document.buildConfig().profiles.size(), size_t(1));
  }

  void cpuBuildFeedsTheEngineViews() {
    Studio s;
    LayerTableView layers(&s.document);
    TacticsPanel tactics(&s.document);
    ChartsView charts(&s.document);
    s.setShapes("1x4", "2x8", "4x16");
    QTemporaryDir dir;
    const QString planPath = dir.filePath("tiny bert.kiln"), cachePath = dir.filePath("cache.json");
    s.panel->findChild<QLineEdit*>("planPath")->setText(planPath);
    s.panel->findChild<QLineEdit*>("timingCache")->setText(cachePath);
    QVERIFY(s.panel->commandLine().contains("-o '" + planPath + "'"));
    QVERIFY(s.panel->commandLine().contains("--timing-cache " + cachePath));
    // Unfused attention keeps the MatMul layers whose rival tactics the panel shows.
    QVERIFY(!s.panel->setPassEnabled("no_such_pass", false));
    QVERIFY(s.panel->setPassEnabled("fuse_attention", false));
    QCOMPARE(s.document.buildConfig().disabledPasses, std::vector<std::string>{"fuse_attention"});
    QVERIFY2(s.panel->commandLine().contains("--disable-pass fuse_attention"),
             qPrintable(s.panel->commandLine()));
    const auto [ok, message] = s.build();
    QVERIFY2(ok, qPrintable(message));
    const auto report = s.document.report();
    QVERIFY(report && !report->layers.empty());
    QVERIFY(s.document.plan());
    QCOMPARE(static_cast<int>(s.document.plan()->record.layers.size()),
             static_cast<int>(report->layers.size()));
    QCOMPARE(s.document.enginePath(), planPath);
    QVERIFY(QFileInfo(planPath).size() > 0);
    QVERIFY(QFileInfo(cachePath).size() > 0);
    checkLayerTable(layers, *report);
    if (QTest::currentTestFailed()) return;
    checkTactics(s.document, tactics, *report);
    if (QTest::currentTestFailed()) return;
    checkCharts(s.document, charts, *report);
  }

  void impossibleObeyedConstraintFailsNamingTheLayer() {
    Studio s;
    QVERIFY(s.panel->setPassEnabled("fuse_attention", false));  // keep 'scores' a layer
    s.panel->setConstraintMode(ConstraintMode::kObey);
    s.panel->setLayerPrecision("scores", DataType::kInt8);  // needs quantization
    const auto [ok, message] = s.build();
    QVERIFY(!ok);
    QVERIFY2(message.contains("layer 'scores'") && message.contains("obeyed"), qPrintable(message));
    QVERIFY(!s.document.report());
    const auto& issues = s.document.issues();
    auto it = std::find_if(issues.begin(), issues.end(), [](const Issue& i) {
      return i.source == "build" && i.severity == IssueSeverity::kError;
    });
    QVERIFY(it != issues.end());
    QCOMPARE(it->nodeName, QString("scores"));
    QVERIFY(it->message.contains("tiny_bert.onnx"));
  }

  void untimedReportsCountLayers() {
    Studio s;
    ChartsView charts(&s.document);
    inspector::EngineReport report;
    report.title = "untimed";
    for (const char* type : {"MatrixMultiply", "MatrixMultiply", "Softmax"}) {
      inspector::ReportLayer layer;
      layer.name = std::string(type) + "_" + std::to_string(report.layers.size());
      layer.layerType = type;
      layer.precision = "FP32";
      layer.outputBytes = 4096 * (1 + static_cast<int64_t>(report.layers.size()));
      report.layers.push_back(layer);
    }
    s.document.setEngine({}, nullptr, std::make_shared<const inspector::EngineReport>(report));
    for (int chart = 0; chart < 3; ++chart) {
      charts.setChart(chart);
      const ChartSeries& series = charts.series();
      QVERIFY2(QString::fromStdString(series.title).contains("untimed"), series.title.c_str());
    }
    charts.setChart(static_cast<int>(ChartKind::kTypeTime));
    const ChartSeries& byType = charts.series();
    QCOMPARE(byType.categories, (std::vector<std::string>{"MatrixMultiply", "Softmax"}));
    QCOMPARE(byType.series.back().values, (std::vector<double>{2, 1}));
    charts.setChart(static_cast<int>(ChartKind::kMemory));
    QCOMPARE(charts.series().series[0].values, (std::vector<double>{4, 8, 12}));  // KiB
  }

  // A CUDA layer's choice inside its tactic: its own column, and the header names it.
  void tacticsShowTheChoiceThePlanReplays() {
    auto report = std::make_shared<inspector::EngineReport>();
    inspector::ReportLayer layer;
    layer.name = "conv1 + relu1";
    layer.opType = "FusedConv";
    layer.tactic = "cuda.runtime";
    layer.precision = "FP16";
    inspector::ReportCandidate winner;
    winner.tactic = "cuda.runtime";
    winner.source = "kiln";
    winner.precision = "fp16";
    winner.milliseconds = 0.0125;
    winner.detail = "gpu: cudnn fused graph engine 10; timed {...}";
    winner.choice = "fused_graph engine=10 knobs=2:5,13:1";
    inspector::ReportCandidate fp32 = winner;
    fp32.precision = "fp32";
    fp32.milliseconds = 0.031;
    fp32.choice = "conv_epilogue engine=0 knobs=";
    layer.candidates = {winner, fp32};
    report->layers = {layer};
    StudioDocument document;
    TacticsPanel panel(&document);
    document.setReport(report);
    document.selectLayer(0);
    QCOMPARE(panel.table()->rowCount(), 2);
    QVERIFY(panel.winnerRow() >= 0);
    QCOMPARE(panel.table()->item(panel.winnerRow(), TacticsPanel::kChoice)->text(),
             QString::fromStdString(winner.choice));
    QCOMPARE(panel.table()->horizontalHeaderItem(TacticsPanel::kChoice)->text(),
             QString("Choice (replayed)"));
    QVERIFY2(panel.header().contains("inside it: " + QString::fromStdString(winner.choice)),
             qPrintable(panel.header()));
  }

  // Choices timed by the builder: candidates of one tactic and precision that differ only
  // in their choice; the star goes to the one the layer records, not the first of them.
  void tacticsStarTheRecordedChoiceAmongBuilderTimedOnes() {
    auto report = std::make_shared<inspector::EngineReport>();
    inspector::ReportLayer layer;
    layer.name = "conv7 + add7";
    layer.opType = "FusedConv";
    layer.tactic = "cuda.cudnn";
    layer.precision = "FP16";
    for (const auto& [choice, ms] : std::vector<std::pair<std::string, double>>{
             {"conv_epilogue engine=47 knobs=2:15,6:2", 0.0081},
             {"conv_epilogue engine=58 knobs=25:0", 0.0089},
             {"fused_graph engine=32 knobs=2:15,6:2", 0.0055},
             {"conv_epilogue engine=47 knobs=2:2,6:1", 0.0084}}) {
      inspector::ReportCandidate c;
      c.tactic = "cuda.cudnn";
      c.source = "cudnn";
      c.precision = "fp16";
      c.milliseconds = ms;
      c.choice = choice;
      layer.candidates.push_back(c);
    }
    layer.choice = layer.candidates[2].choice;
    layer.milliseconds = layer.candidates[2].milliseconds;
    report->layers = {layer};
    StudioDocument document;
    TacticsPanel panel(&document);
    document.setReport(report);
    document.selectLayer(0);
    QCOMPARE(panel.table()->rowCount(), 4);
    QVERIFY(panel.winnerRow() >= 0);
    QCOMPARE(panel.table()->item(panel.winnerRow(), TacticsPanel::kChoice)->text(),
             QString::fromStdString(layer.choice));
  }

 private:
  void checkLayerTable(LayerTableView& view, const inspector::EngineReport& report) {
    const int count = static_cast<int>(report.layers.size());
    QCOMPARE(view.proxy()->rowCount(), count);
    view.table()->sortByColumn(LayerTableModel::kTime, Qt::DescendingOrder);
    std::vector<double> times;
    for (int row = 0; row < count; ++row)
      times.push_back(view.proxy()
                          ->index(row, LayerTableModel::kTime)
                          .data(LayerTableModel::kSortRole)
                          .toDouble());
    for (int row = 1; row < count; ++row) QVERIFY(times[row - 1] >= times[row]);
    QVERIFY(times.front() > times.back());
    QVERIFY(times.front() > 0);
    double maxTime = 0;
    for (const auto& layer : report.layers) maxTime = std::max(maxTime, layer.milliseconds);
    QCOMPARE(times.front(), maxTime);

    view.setFilterText("normalization");
    const int filtered = view.proxy()->rowCount();
    QVERIFY(filtered > 0 && filtered < count);
    for (int row = 0; row < filtered; ++row) {
      const int layer = view.proxy()->mapToSource(view.proxy()->index(row, 0)).row();
      const auto& l = report.layers[layer];
      QVERIFY((l.name + l.layerType + l.opType).find("orm") != std::string::npos);
    }
    view.setFilterText("");
    QCOMPARE(view.proxy()->rowCount(), count);

    QTemporaryDir dir;
    const QString csv = dir.filePath("layers.csv");
    Status written = view.exportCsv(csv);
    QVERIFY2(written.isOk(), written.message().c_str());
    QFile file(csv);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = file.readAll().trimmed().split('\n');
    QCOMPARE(lines.size(), count + 1);  // a header and one row per layer
    QVERIFY(lines[1].contains(report.layers[0].name.c_str()));
    Status refused = view.exportCsv("/nonexistent-dir/layers.csv");
    QVERIFY(!refused.isOk());
    QVERIFY(QString::fromStdString(refused.message()).contains("/nonexistent-dir/layers.csv"));
  }

  void checkTactics(StudioDocument& document, TacticsPanel& panel,
                    const inspector::EngineReport& report) {
    int chosen = -1;
    for (size_t i = 0; i < report.layers.size() && chosen < 0; ++i)
      if (report.layers[i].candidates.size() >= 2 && report.layers[i].opType == "MatMul")
        chosen = static_cast<int>(i);
    QVERIFY2(chosen >= 0, "no MatMul layer with two candidates");
    const auto& layer = report.layers[chosen];
    document.selectLayer(chosen);
    QCOMPARE(panel.table()->rowCount(), static_cast<int>(layer.candidates.size()));
    QVERIFY(panel.winnerRow() >= 0);
    QCOMPARE(panel.table()->item(panel.winnerRow(), TacticsPanel::kTactic)->text(),
             QString::fromStdString(layer.tactic));
    QVERIFY2(panel.header().contains(QString("%1 candidates").arg(layer.candidates.size())) &&
                 panel.header().contains(QString::fromStdString(layer.tactic)),
             qPrintable(panel.header()));
    double previous = 0;
    for (int row = 0; row < panel.table()->rowCount(); ++row) {
      const QString time = panel.table()->item(row, TacticsPanel::kTime)->text();
      if (time.isEmpty()) break;
      QVERIFY(time.toDouble() >= previous);
      previous = time.toDouble();
    }
    document.selectLayer(-1);
    QCOMPARE(panel.table()->rowCount(), 0);
  }

  void checkCharts(StudioDocument& document, ChartsView& charts,
                   const inspector::EngineReport& report) {
    charts.resize(900, 600);
    charts.show();
    QVERIFY(QTest::qWaitForWindowExposed(&charts));
    charts.setChart(static_cast<int>(ChartKind::kLayerLatency));
    charts.setTopN(5);
    const ChartSeries& latency = charts.series();
    QCOMPARE(static_cast<int>(latency.categories.size()), std::min(5, int(report.layers.size())));
    const auto& values = latency.series[0].values;
    for (size_t i = 1; i < values.size(); ++i) QVERIFY(values[i - 1] >= values[i]);
    QCOMPARE(charts.barCount(), 5);

    QTemporaryDir dir;
    for (const char* suffix : {"png", "svg", "pdf"}) {
      const QString path = dir.filePath(QString("chart.") + suffix);
      Status s = charts.exportChart(path);
      QVERIFY2(s.isOk(), s.message().c_str());
      QVERIFY2(QFileInfo(path).size() > 1000, qPrintable(path));
    }
    QFile svg(dir.filePath("chart.svg"));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    QVERIFY(svg.readAll().contains("<svg"));
    QVERIFY(!charts.exportChart(dir.filePath("chart.bmp")).isOk());
    const QByteArray memory =
        charts.chartSvg(static_cast<int>(ChartKind::kMemory), QSize(800, 500));
    QVERIFY(memory.contains("<svg"));
    QVERIFY(memory.contains(report.layers[0].name.substr(0, 10).c_str()));

    // A real click on the tallest latency bar selects its layer.
    document.selectLayer(-1);
    const QPoint centre = charts.barCenter(0);
    QVERIFY(charts.plotWidget()->rect().contains(centre));
    QTest::mouseClick(charts.plotWidget(), Qt::LeftButton, Qt::NoModifier, centre);
    QCOMPARE(document.selectedLayer(), charts.layerOfBar(0));
    QCOMPARE(document.report()->layers[document.selectedLayer()].milliseconds, values[0]);
    // And on the largest output bar of the memory chart (execution order: bar i is layer i).
    charts.setChart(static_cast<int>(ChartKind::kMemory));
    const auto& outputs = charts.series().series[0].values;
    const int largest =
        static_cast<int>(std::max_element(outputs.begin(), outputs.end()) - outputs.begin());
    QVERIFY(outputs[largest] > 0);
    QTest::mouseClick(charts.plotWidget(), Qt::LeftButton, Qt::NoModifier,
                      charts.barCenter(largest));
    QCOMPARE(document.selectedLayer(), largest);
  }
};

QTEST_MAIN(TestPanels)
#include "test_panels.moc"
