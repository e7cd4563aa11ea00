// The Advisor dock (issue 25) in the main window, offscreen: a trtexec export's findings
// with their costs, a finding selecting its first layer, a CPU plan's memory timeline,
// the placeholders. With KILN_SCREENSHOT_DIR set (run under Xvfb with
// QT_QPA_PLATFORM=xcb) it saves the dock as advisor-dock.png for the documentation.
#include <QDockWidget>
#include <QMenuBar>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "advisor_panel.h"
#include "build_panel.h"
#include "dock_screenshot.h"
#include "kiln/onnx_export.h"
#include "main_window.h"
#include "memory_timeline_chart.h"
#include "studio_document.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

constexpr int kJobTimeoutMs = 120000;

QString dataPath(const QString& relative) {
  return qEnvironmentVariable("KILN_TEST_DATA_DIR") + "/" + relative;
}

AdvisorPanel* advisorOf(MainWindow& window) {
  return qobject_cast<AdvisorPanel*>(window.panel("advisor"));
}

int rowOfRule(const AdvisorPanel& panel, const std::string& rule) {
  for (size_t i = 0; i < panel.findings().size(); ++i)
    if (panel.findings()[i].rule == rule) return static_cast<int>(i);
  return -1;
}

// Three pointwise nodes on a [1, 256] float input (Relu, Floor, Softsign: none fuse), so
// the CPU plan has three layers whose outputs the memory planner places.
Network chainNetwork() {
  Network network;
  network.irVersion = 8;
  network.opsets[""] = 17;
  Graph& g = network.graph;
  g.name = "chain";
  g.inputs.push_back(ValueInfo{"x", DataType::kFloat32, true, {DimExpr(1), DimExpr(256)}});
  const char* ops[] = {"Relu", "Floor", "Softsign"};
  std::string previous = "x";
  for (int i = 0; i < 3; ++i) {
    Node node;
    node.opType = ops[i];
    node.opset = 17;
    node.index = i;
    node.name = node.opType + "_" + std::to_string(i);
    node.inputs = {previous};
    previous = "t" + std::to_string(i);
    node.outputs = {previous};
    g.nodes.push_back(node);
  }
  g.outputs.push_back(ValueInfo{previous, DataType::kFloat32, true, {DimExpr(1), DimExpr(256)}});
  return network;
}

// A Kiln engine report with an FP32 layer (Floor_1's) between FP16 layers and a
// reformat on each side: the advisor's precision-island, whose fix is a rule.
std::shared_ptr<inspector::EngineReport> islandReport(const std::string& origin) {
  auto report = std::make_shared<inspector::EngineReport>();
  report->origin = origin;
  report->backend = origin == "trtexec export" ? "tensorrt" : "cpu";
  const std::string h = "Row major linear FP16", f = "Row major linear FP32";
  struct Row {
    const char *name, *type, *precision, *source, *in, *out;
    const std::string &inFormat, &outFormat;
  };
  const Row rows[] = {{"Relu_0", "Relu", "FP16", "Relu_0", "x", "t0", h, h},
                      {"to32", "Reformat", "FP32", "", "t0", "t0f", h, f},
                      {"Floor_1", "Floor", "FP32", "Floor_1", "t0f", "t1f", f, f},
                      {"to16", "Reformat", "FP16", "", "t1f", "t1", f, h},
                      {"Softsign_2", "Softsign", "FP16", "Softsign_2", "t1", "t2", h, h}};
  for (const Row& row : rows) {
    inspector::ReportLayer l;
    l.name = row.name;
    l.layerType = row.type;
    l.precision = row.precision;
    if (*row.source) l.sourceNodes = {row.source};
    l.inputs = {{row.in, {1, 256}, row.inFormat}};
    l.outputs = {{row.out, {1, 256}, row.outFormat}};
    l.milliseconds = 0.01;
    report->layers.push_back(l);
  }
  return report;
}

}  // namespace

class TestAdvisorPanel : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QSettings("Kiln", "kiln-studio").clear();
  }

  void placeholderWithoutEngine() {
    MainWindow window;
    AdvisorPanel* panel = advisorOf(window);
    QVERIFY(panel);
    QCOMPARE(panel->table()->rowCount(), 0);
    QVERIFY2(panel->summaryText().startsWith("No engine"), qPrintable(panel->summaryText()));
    QVERIFY(panel->memoryChart()->summaryText().startsWith("No engine"));
    QCOMPARE(panel->memoryChart()->peakBytes(), int64_t(0));
  }

  void viewMenuTogglesTheDock() {
    MainWindow window;
    window.show();
    auto* dock = window.findChild<QDockWidget*>("dock_advisor");
    QVERIFY(dock);
    QAction* toggle = dock->toggleViewAction();
    QCOMPARE(toggle->text(), QString("Advisor"));
    bool inViewMenu = false;
    for (QAction* menu : window.menuBar()->actions())
      if (menu->text() == "&View") inViewMenu = menu->menu()->actions().contains(toggle);
    QVERIFY(inViewMenu);
    const bool visible = dock->isVisible();
    toggle->trigger();
    QCOMPARE(dock->isVisible(), !visible);
  }

  void trtexecFindingsSelectTheirFirstLayer() {
    MainWindow window;
    window.openFile(dataPath("trtexec/mobilenet.qat.onnx.engine.graph.json"));
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    QVERIFY(window.document()->report());
    AdvisorPanel* panel = advisorOf(window);
    const int row = rowOfRule(*panel, "int8-conv-wide-output");
    QVERIFY2(row >= 0, qPrintable(panel->summaryText()));
    QCOMPARE(panel->table()->rowCount(), static_cast<int>(panel->findings().size()));
    const inspector::Finding& finding = panel->findings()[row];
    QVERIFY(finding.costMs > 0);  // the profile beside the graph JSON was picked up
    QVERIFY(!finding.layers.empty());
    QCOMPARE(panel->table()->item(row, AdvisorPanel::kRule)->text(),
             QString("int8-conv-wide-output"));
    QCOMPARE(panel->table()->item(row, AdvisorPanel::kCost)->text().toDouble(),
             QString::number(finding.costMs, 'f', 4).toDouble());
    QCOMPARE(panel->table()->item(row, AdvisorPanel::kLayers)->text().toInt(),
             static_cast<int>(finding.layers.size()));
    QCOMPARE(panel->table()->item(row, AdvisorPanel::kFix)->toolTip(),
             QString::fromStdString(finding.fix));

    // A click on the row selects the finding's first layer in the document.
    window.document()->selectLayer(-1);
    window.show();
    findChildDock(window)->raise();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QTest::qWait(50);
    panel->table()->scrollToItem(panel->table()->item(row, 0));
    const QRect cell = panel->table()->visualItemRect(panel->table()->item(row, 0));
    QVERIFY(cell.isValid());
    QTest::mouseClick(panel->table()->viewport(), Qt::LeftButton, {}, cell.center());
    const int selected = window.document()->selectedLayer();
    QVERIFY(selected >= 0);
    QCOMPARE(window.document()->report()->layers[selected].name, finding.layers.front());

    // trtexec exports have no memory plan: the Memory tab says so.
    QVERIFY2(panel->memoryChart()->summaryText().contains("trtexec"),
             qPrintable(panel->memoryChart()->summaryText()));
    QCOMPARE(panel->memoryChart()->barCount(), 0);
    test::saveDockScreenshot(window, "advisor", {1400, 330}, "advisor-dock");
  }

  // "Apply fix" on a precision island of a Kiln engine adds the rule (once, however
  // often it is applied) and lets rules apply; a TensorRT engine's island has no button.
  void applyFixAddsThePrecisionRule() {
    StudioDocument document;
    document.setModel("chain.onnx", std::make_shared<const Network>(chainNetwork()));
    document.setEngine("chain.kiln", nullptr, islandReport("kiln plan"));
    AdvisorPanel panel(&document);
    const int row = rowOfRule(panel, "precision-island");
    QVERIFY(row >= 0);
    QVERIFY(!panel.applyButton()->isEnabled());  // no finding chosen yet
    panel.table()->setCurrentCell(row, 0);
    QVERIFY(panel.applyButton()->isEnabled());
    QSignalSpy applied(&panel, &AdvisorPanel::fixApplied);
    QVERIFY(panel.applyFix(row));
    QVERIFY(panel.applyFix(row));
    QCOMPARE(applied.count(), 2);
    const BuilderConfig& config = document.buildConfig();
    QCOMPARE(config.layerPrecisions.size(), size_t{1});
    QCOMPARE(config.layerPrecisions[0].pattern, std::string("Floor_1"));
    QCOMPARE(config.layerPrecisions[0].precision, DataType::kFloat16);
    QVERIFY(config.precisionConstraints != ConstraintMode::kNone);
    QVERIFY2(applied.first().first().toString().contains("Floor_1:fp16"),
             qPrintable(applied.first().first().toString()));

    document.setEngine("chain.engine.graph.json", nullptr, islandReport("trtexec export"));
    const int trtRow = rowOfRule(panel, "precision-island");
    QVERIFY(trtRow >= 0);
    panel.table()->setCurrentCell(trtRow, 0);
    QVERIFY(!panel.applyButton()->isEnabled());
    QVERIFY(!panel.applyFix(trtRow));
  }

  void cpuPlanShowsItsMemoryTimeline() {
    MainWindow window;
    QTemporaryDir dir;
    const QString model = dir.filePath("chain.onnx");
    QVERIFY(exportOnnxFile(chainNetwork(), model.toStdString()).isOk());
    window.openFile(model);
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    auto* build = qobject_cast<BuildPanel*>(window.panel("build"));
    QSignalSpy built(build, &BuildPanel::buildFinished);
    build->startBuild();
    QVERIFY(built.wait(kJobTimeoutMs));
    QVERIFY2(built.front().at(0).toBool(), qPrintable(built.front().at(1).toString()));
    QVERIFY(window.document()->plan());

    AdvisorPanel* panel = advisorOf(window);
    QVERIFY2(!panel->summaryText().startsWith("No engine"), qPrintable(panel->summaryText()));
    MemoryTimelineChart* memory = panel->memoryChart();
    QCOMPARE(memory->barCount(), static_cast<int>(window.document()->plan()->layers.size()));
    // Each layer's [1, 256] float output is 1 KiB; at least its own output is alive.
    QVERIFY2(memory->peakBytes() >= 1024, qPrintable(memory->summaryText()));
    QVERIFY(!memory->peakLayer().isEmpty());
    QVERIFY(memory->peakTensors()->rowCount() > 0);
    QVERIFY2(memory->summaryText().startsWith("Peak "), qPrintable(memory->summaryText()));
    panel->tabs()->setCurrentWidget(memory);
    test::saveDockScreenshot(window, "advisor", {1400, 330}, "advisor-dock-memory");
  }

 private:
  static QDockWidget* findChildDock(MainWindow& window) {
    return window.findChild<QDockWidget*>("dock_advisor");
  }
};

QTEST_MAIN(TestAdvisorPanel)
#include "test_advisor_panel.moc"
