// The studio's main window end to end, offscreen: open models, plans and trtexec
// exports (and bad files), jump from an issue to its node, build, profile, export
// every format and parse what was written, and keep the GUI thread responsive
// while a 2,000-node model is imported, laid out and built.
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>
#include <nlohmann/json.hpp>

#include "auto_run.h"
#include "build_panel.h"
#include "event_loop_probe.h"
#include "export_actions.h"
#include "issues_dock.h"
#include "kiln/onnx_export.h"
#include "kiln/onnx_import.h"
#include "kiln/plan.h"
#include "main_window.h"
#include "window_screenshots.h"
#include "model_graph_view.h"
#include "profile_panel.h"
#include "tactics_panel.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

QString dataPath(const QString& relative) {
  return qEnvironmentVariable("KILN_TEST_DATA_DIR") + "/" + relative;
}

constexpr int kJobTimeoutMs = 120000;

// A chain of `count` pointwise nodes on a [1, 64] float input: Relu, Add (with a
// constant), Sigmoid, Mul... with static shapes so it builds without a profile.
// With `scoped`, names carry exporter-style scopes ("/blocks/block.3/layer.2/Relu_160":
// 50 nodes a block, 10 a layer), which the graph views group into blocks.
Network chainNetwork(int count, bool scoped = false) {
  Network network;
  network.irVersion = 8;
  network.opsets[""] = 17;
  Graph& g = network.graph;
  g.name = "chain";
  g.inputs.push_back(ValueInfo{"x", DataType::kFloat32, true, {DimExpr(1), DimExpr(64)}});
  Tensor constant = randomInputTensor(DataType::kFloat32, {1, 64}, 7);
  g.initializers["c"] = constant;
  // Floor and Softsign between the arithmetic: no two neighbours are ops that
  // fuse_pointwise_chain groups, so every node stays a layer.
  const char* ops[] = {"Relu", "Floor", "Mul", "Softsign"};
  std::string previous = "x";
  for (int i = 0; i < count; ++i) {
    Node node;
    node.opType = ops[i % 4];
    node.opset = 17;
    node.index = i;
    node.name = node.opType + "_" + std::to_string(i);
    if (scoped)
      node.name = "/blocks/block." + std::to_string(i / 50) + "/layer." +
                  std::to_string(i / 10 % 5) + "/" + node.name;
    node.inputs = {previous};
    if (node.opType == "Add" || node.opType == "Mul") node.inputs.push_back("c");
    previous = "t" + std::to_string(i);
    node.outputs = {previous};
    g.nodes.push_back(node);
  }
  g.outputs.push_back(ValueInfo{previous, DataType::kFloat32, true, {DimExpr(1), DimExpr(64)}});
  return network;
}

// Longest gap between 10 ms ticks of the GUI event loop while `work` runs and
// until the window has no job left.
// The longest event-loop slice while `work` and the jobs it starts run.
struct EventLoopGap {
  qint64 cpuMs = 0;
  qint64 wallMs = 0;
};

EventLoopGap longestEventLoopGap(MainWindow& window, const std::function<void()>& work) {
  EventLoopProbe probe;
  probe.start();
  work();
  QElapsedTimer wait;
  wait.start();
  while (wait.elapsed() < kJobTimeoutMs) {
    QTest::qWait(20);
    if (window.jobs()->runningCount() == 0) break;
  }
  probe.stop();
  return {probe.worstCpuMs(), probe.worstWallMs()};
}

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QSettings("Kiln", "kiln-studio").clear();
  }

  void opensModelAndRemembersIt() {
    MainWindow window;
    window.show();
    const QString path = dataPath("builder/tiny_bert.onnx");
    window.openFile(path);
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    QVERIFY(window.document()->network() != nullptr);
    QCOMPARE(window.document()->modelPath(), path);
    QVERIFY(window.windowTitle().contains("tiny_bert.onnx"));
    const QStringList recent = QSettings("Kiln", "kiln-studio").value("recentFiles").toStringList();
    QVERIFY(!recent.isEmpty());
    QVERIFY(recent.front().endsWith("tiny_bert.onnx"));
  }

  void buildSettingsAreRemembered() {
    {
      MainWindow window;
      BuilderConfig config = window.document()->buildConfig();
      config.fp16 = true;
      config.optimizationLevel = 1;
      config.workspaceLimitBytes = 256LL << 20;
      window.document()->setBuildConfig(config);
      window.close();
    }
    MainWindow reopened;
    const BuilderConfig& config = reopened.document()->buildConfig();
    QVERIFY(config.fp16);
    QCOMPARE(config.optimizationLevel, 1);
    QCOMPARE(config.workspaceLimitBytes, 256LL << 20);
    auto* build = qobject_cast<BuildPanel*>(reopened.panel("build"));
    QVERIFY(build->commandLine().contains("--fp16"));
    BuilderConfig defaults;
    reopened.document()->setBuildConfig(defaults);  // leave the next tests the defaults
    reopened.close();
  }

  void badFilesBecomeIssuesAndKeepTheOpenModel() {
    MainWindow window;
    window.openFile(dataPath("builder/tiny_bert.onnx"));
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    const auto before = window.document()->network();
    auto* issues = qobject_cast<IssuesDock*>(window.panel("issues"));
    QVERIFY(issues);
    for (const QString& bad : {"truncated.onnx", "random_bytes.onnx", "huge_claim.onnx"}) {
      window.openFile(dataPath(bad));
      QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
      QVERIFY2(issues->rowCount() > 0, qPrintable(bad));
      const QString text = issues->rowText(issues->rowCount() - 1);
      QVERIFY2(text.startsWith("error") && text.contains(bad), qPrintable(text));
      QCOMPARE(window.document()->network(), before);  // nothing the user had is lost
    }
    window.openFile(dataPath("no_such_file.onnx"));
    QVERIFY(issues->rowText(issues->rowCount() - 1).contains("no such file"));
  }

  void issueWithNodeJumpsToIt() {
    MainWindow window;
    window.openFile(dataPath("builder/tiny_bert.onnx"));
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    const QString node =
        QString::fromStdString(window.document()->network()->graph.nodes[3].displayName());
    window.document()->addIssue(
        {IssueSeverity::kWarning, "build", "node '" + node + "': test", node});
    auto* issues = qobject_cast<IssuesDock*>(window.panel("issues"));
    window.showView("layers");
    issues->activateRow(issues->rowCount() - 1);
    QCOMPARE(window.document()->selectedNodes(), QStringList{node});
    QCOMPARE(window.view("graph")->widget()->isVisible() || !window.isVisible(), true);
  }

  void opensTrtexecExportWithItsProfile() {
    MainWindow window;
    window.openFile(dataPath("trtexec/mobilenet.qat.onnx.engine.graph.json"));
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    const auto report = window.document()->report();
    QVERIFY(report != nullptr);
    QCOMPARE(static_cast<int>(report->layers.size()), 73);
    QVERIFY(report->profileIterations > 0);  // the profile beside it was picked up
    QVERIFY(report->totalMs > 0);
    QCOMPARE(QString::fromStdString(report->layers[0].name), QString("QuantizeLinear_2"));
    auto* profile = qobject_cast<ProfilePanel*>(window.panel("profile"));
    QVERIFY(profile->bannerText().contains("TensorRT"));
  }

  // A trtexec export records only the tactic TensorRT chose: the Tactics dock says so,
  // naming it, instead of pointing at a plan's profiling verbosity.
  void tacticsDockOfATrtexecExport() {
    MainWindow window;
    window.openFile(dataPath("trtexec/mobilenet.qat.onnx.engine.graph.json"));
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    auto* tactics = qobject_cast<TacticsPanel*>(window.panel("tactics"));
    QVERIFY(tactics != nullptr);
    QCOMPARE(tactics->header(), QString("Select a layer to see its tactics."));
    window.document()->selectLayer(1);
    QCOMPARE(tactics->header(),
             QString("features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16): tactic "
                     "volta_int8x4_icudnn_int8x4_128x32_relu_xregs_medium_c32_nn_v1; trtexec "
                     "exports carry only the chosen tactic, not the candidates TensorRT timed"));
    QCOMPARE(tactics->table()->rowCount(), 0);
    // A Reformat has a tactic value only.
    window.document()->selectLayer(0);
    QCOMPARE(tactics->header(),
             QString("QuantizeLinear_2: tactic 0x0000000000000000; trtexec exports carry only "
                     "the chosen tactic, not the candidates TensorRT timed"));
    QVERIFY(!tactics->header().contains("profiling verbosity"));
  }

  // TensorRT 11.x's inspector layout opens into the same layer table as the 10.x export.
  void opensTensorRT11Export() {
    MainWindow window;
    window.openFile(dataPath("trtexec/mobilenet_v2_residuals.trt11.graph.json"));
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    const auto report = window.document()->report();
    QVERIFY(report != nullptr);
    QCOMPARE(QString::fromStdString(report->inspectorLayout), QString("TensorRT 11.x"));
    MainWindow older;
    older.openFile(dataPath("trtexec/mobilenet_v2_residuals.qat.onnx.engine.graph.json"));
    QVERIFY(older.jobs()->waitForIdle(kJobTimeoutMs));
    const auto reference = older.document()->report();
    QVERIFY(reference != nullptr);
    QCOMPARE(report->layers.size(), reference->layers.size());
    for (size_t i = 0; i < report->layers.size(); ++i) {
      QCOMPARE(QString::fromStdString(report->layers[i].name),
               QString::fromStdString(reference->layers[i].name));
      QCOMPARE(QString::fromStdString(report->layers[i].precision),
               QString::fromStdString(reference->layers[i].precision));
    }
    QCOMPARE(static_cast<int>(report->ioTensors.size()), 2);
  }

  void buildProfileAndExportEverything() {
    MainWindow window;
    QTemporaryDir dir;
    const QString model = dir.filePath("chain.onnx");
    QVERIFY(exportOnnxFile(chainNetwork(40), model.toStdString()).isOk());
    window.openFile(model);
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    auto* build = qobject_cast<BuildPanel*>(window.panel("build"));
    QSignalSpy built(build, &BuildPanel::buildFinished);
    build->startBuild();
    QVERIFY(built.wait(kJobTimeoutMs));
    QVERIFY2(built.front().at(0).toBool(), qPrintable(built.front().at(1).toString()));
    QVERIFY(window.document()->plan() != nullptr);
    QCOMPARE(static_cast<int>(window.document()->report()->layers.size()), 40);

    auto* profile = qobject_cast<ProfilePanel*>(window.panel("profile"));
    profile->setIterations(3);
    QSignalSpy profiled(profile, &ProfilePanel::profileFinished);
    profile->startProfile();
    QVERIFY(profiled.wait(kJobTimeoutMs));
    QVERIFY2(profiled.front().at(0).toBool(), qPrintable(profiled.front().at(1).toString()));
    QCOMPARE(window.document()->report()->profileIterations, 3);
    QVERIFY(profile->rowCount() > 0);
    // Each layer ran the tactic its build chose, and the report says so (tactics as data).
    for (const auto& layer : window.document()->report()->layers) {
      QVERIFY2(!layer.profiledImplementation.empty(), layer.name.c_str());
      QCOMPARE(QString::fromStdString(layer.profiledImplementation),
               QString::fromStdString(layer.tactic));
    }
    // With KILN_SCREENSHOT_DIR set: the Profile dock with its "Ran as" column, and the
    // first layer's properties with "Ran as (profile)".
    if (!qEnvironmentVariable("KILN_SCREENSHOT_DIR").isEmpty()) {
      QWidget* dock = profile;
      while (dock && !qobject_cast<QDockWidget*>(dock)) dock = dock->parentWidget();
      if (dock) dock->raise();
      window.document()->selectLayer(0);
      test::saveWindowAtScreenSizes(window, "profile-ran-as");
    }

    auto* exports = window.findChild<ExportActions*>();
    QVERIFY(exports);
    const QString plan = dir.filePath("chain.kiln"), json = dir.filePath("inspector.json"),
                  prof = dir.filePath("profile.json"), csv = dir.filePath("layers.csv"),
                  html = dir.filePath("report.html");
    QVERIFY(exports->saveEngine(plan).isOk());
    QVERIFY(exports->exportInspectorJson(json).isOk());
    QVERIFY(exports->exportProfileJson(prof).isOk());
    QVERIFY(exports->exportCsv(csv).isOk());
    QVERIFY(exports->exportHtmlReport(html).isOk());
    const QString engineGraph = dir.filePath("chain.engine.onnx");
    QVERIFY(exports->exportEngineGraph(engineGraph).isOk());
    ImportOptions viewerModel;
    viewerModel.checkSupport = false;  // ai.kiln.engine layer nodes: for graph viewers
    auto layers = importOnnxFile(engineGraph.toStdString(), viewerModel);
    QVERIFY2(layers.isOk(), layers.status().message().c_str());
    QCOMPARE(static_cast<int>(layers->graph.nodes.size()), 40);
    QCOMPARE(QString::fromStdString(layers->graph.nodes[0].domain), QString("ai.kiln.engine"));

    auto reloaded = loadPlanFile(plan.toStdString());
    QVERIFY2(reloaded.isOk(), reloaded.status().message().c_str());
    QCOMPARE(reloaded->layers.size(), window.document()->plan()->layers.size());
    auto readAll = [](const QString& path) {
      QFile f(path);
      return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    };
    const auto inspector = nlohmann::json::parse(readAll(json).toStdString());
    QCOMPARE(static_cast<int>(inspector["Layers"].size()), 40);
    const auto profileDoc = nlohmann::json::parse(readAll(prof).toStdString());
    QCOMPARE(profileDoc[0]["count"].get<int>(), 3);
    QCOMPARE(static_cast<int>(profileDoc.size()), 41);
    QVERIFY(profileDoc[1]["medianMs"].get<double>() > 0);
    QCOMPARE(QString::fromStdString(profileDoc[1].value("implementation", "")),
             QString::fromStdString(window.document()->report()->layers[0].tactic));
    QCOMPARE(readAll(csv).count('\n'), 41);  // header + one row per layer
    const QByteArray page = readAll(html);
    QVERIFY(page.contains("<svg"));
    QVERIFY(page.contains("Relu_0"));
    QVERIFY(!page.contains("<?xml"));            // SVG inlined without its prolog
    QVERIFY(page.contains("<h2>Advisor</h2>"));  // the advisor's findings (or "No findings.")
  }

  void screenshotsScript() {
    MainWindow window;
    window.resize(1280, 800);
    window.show();
    QTemporaryDir dir;
    const QString model = dir.filePath("chain.onnx");
    QVERIFY(exportOnnxFile(chainNetwork(12), model.toStdString()).isOk());
    AutoRunOptions options;
    options.file = model;
    options.build = options.profile = true;
    options.screenshotDir = dir.filePath("shots");
    options.reportPath = dir.filePath("report.html");
    AutoRun script(&window, options);
    QSignalSpy finished(&script, &AutoRun::finished);
    script.start();
    // Known bug, not found yet (2026-11-29): now and then, with another test loading the
    // machine, one of the script's waits for idle jobs runs its whole 120 s (JobRunner
    // then warns "still busy after ... ms: <jobs>") and the script goes on and succeeds.
    // The wait here outlasts that one so the stall shows as a slow test and a warning,
    // not as a failure of what the test checks.
    QVERIFY(finished.wait(2 * kJobTimeoutMs + 30000));
    QVERIFY2(finished.front().at(0).toBool(), qPrintable(finished.front().at(1).toString()));
    // Model graph, engine graph, layer table, charts and the roofline.
    QCOMPARE(script.screenshots().size(), 5);
    QVERIFY(script.screenshots().back().endsWith("studio-roofline.png"));
    for (const QString& png : script.screenshots()) QVERIFY(QImage(png).width() > 100);
    QVERIFY(QFileInfo(options.reportPath).size() > 1000);
    // The slowest layer is selected for the pictures.
    QVERIFY(window.document()->selectedLayer() >= 0);
  }

  // Acceptance: the GUI thread never works for more than 100 ms at a stretch
  // during import, layout or build of a 2,000-node model, with its nodes grouped by
  // scope (issue 26 item 9), nor while a search opens the block holding its hit.
  void guiStaysResponsiveOnLargeModel() {
    MainWindow window;
    window.show();
    QTemporaryDir dir;
    const QString model = dir.filePath("large.onnx");
    QVERIFY(exportOnnxFile(chainNetwork(2000, true), model.toStdString()).isOk());
    const EventLoopGap importGap = longestEventLoopGap(window, [&] { window.openFile(model); });
    QVERIFY(window.document()->network() != nullptr);
    QCOMPARE(static_cast<int>(window.document()->network()->graph.nodes.size()), 2000);
    auto* graph = dynamic_cast<ModelGraphView*>(window.view("graph"))->graphView();
    QVERIFY(graph->grouping());
    QVERIFY2(graph->graphScene()->nodeCount() < 100,  // 40 blocks, input and output
             qPrintable(QString::number(graph->graphScene()->nodeCount())));
    const QString hit = "/blocks/block.24/layer.0/Softsign_1203";
    const EventLoopGap searchGap =
        longestEventLoopGap(window, [&] { graph->search("Softsign_1203"); });
    QCOMPARE(window.document()->selectedNodes(), QStringList{hit});
    QVERIFY(graph->graphScene()->indexOf(hit) >= 0);
    auto* build = qobject_cast<BuildPanel*>(window.panel("build"));
    QSignalSpy built(build, &BuildPanel::buildFinished);
    const EventLoopGap buildGap = longestEventLoopGap(window, [&] { build->startBuild(); });
    QVERIFY(!built.isEmpty() && built.front().at(0).toBool());
    qInfo(
        "longest GUI event-loop slice: import+layout %lld ms CPU (%lld ms wall), "
        "search into a block %lld ms CPU (%lld ms wall), "
        "build+engine layout %lld ms CPU (%lld ms wall)",
        importGap.cpuMs, importGap.wallMs, searchGap.cpuMs, searchGap.wallMs, buildGap.cpuMs,
        buildGap.wallMs);
    // The GUI thread's own work per slice stays under 100 ms; wall-clock slices
    // may stretch on a loaded machine, but a GUI thread that waits on a job (a
    // join, a blocking read) shows as a slice of seconds.
    QVERIFY2(importGap.cpuMs < 100, qPrintable(QString::number(importGap.cpuMs)));
    QVERIFY2(buildGap.cpuMs < 100, qPrintable(QString::number(buildGap.cpuMs)));
    QVERIFY2(searchGap.cpuMs < 100, qPrintable(QString::number(searchGap.cpuMs)));
    QVERIFY2(importGap.wallMs < 1000, qPrintable(QString::number(importGap.wallMs)));
    QVERIFY2(buildGap.wallMs < 1000, qPrintable(QString::number(buildGap.wallMs)));
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
