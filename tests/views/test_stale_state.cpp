// Nothing of the previous document lingers when another model or engine opens
// (issue 26, "Stale state"): per-layer rules, the Build dock's status line, the
// selection the Properties dock shows, the status bar message. And the Build dock
// warns when rules exist while Constraints is "none".
//
// Before the fix each check failed: the document kept the rules (the constraints
// table keeps patterns naming no row), so model B's build warned "precision rule
// 'a_Relu_0' matches no layer"; the Build dock kept "a.onnx: N layers built";
// setEngine kept the selected nodes of engine A's layer, so Properties said "Not in
// the model: ..."; opening a trtexec export left the status bar as it was; and the
// rules-ignored label did not exist.
#include <QLabel>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include "build_panel.h"
#include "constraints_table.h"
#include "dock_screenshot.h"
#include "kiln/onnx_export.h"
#include "main_window.h"
#include "support/test_graph.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

constexpr int kJobTimeoutMs = 120000;

QString dataPath(const QString& relative) {
  return qEnvironmentVariable("KILN_TEST_DATA_DIR") + "/" + relative;
}

// `count` nodes alternating Relu and Softsign on a static [1, 16] input, each named
// `prefix`_Op_i, so two models share no node name.
QString writeChain(const QTemporaryDir& dir, const std::string& prefix, int count) {
  Network network;
  network.irVersion = 8;
  network.opsets[""] = 17;
  Graph& g = network.graph;
  g.name = prefix;
  g.inputs.push_back(ValueInfo{"x", DataType::kFloat32, true, {DimExpr(1), DimExpr(16)}});
  std::string previous = "x";
  for (int i = 0; i < count; ++i) {
    const std::string op = i % 2 ? "Softsign" : "Relu";
    const std::string out = prefix + "_t" + std::to_string(i);
    Node node = test::makeNode(op, {previous}, {out});
    node.name = prefix + "_" + op + "_" + std::to_string(i);
    node.index = i;
    g.nodes.push_back(node);
    previous = out;
  }
  g.outputs.push_back(ValueInfo{previous, DataType::kFloat32, true, {DimExpr(1), DimExpr(16)}});
  const QString path = dir.filePath(QString::fromStdString(prefix) + ".onnx");
  return exportOnnxFile(network, path.toStdString()).isOk() ? path : QString();
}

bool openAndWait(MainWindow& window, const QString& path) {
  window.openFile(path);
  return window.jobs()->waitForIdle(kJobTimeoutMs);
}

// Every "Property" and "Value" text of the Properties dock.
QString propertiesText(const MainWindow& window) {
  QString text;
  auto* tree = window.panel("properties")->findChild<QTreeWidget*>();
  for (QTreeWidgetItemIterator it(tree); *it; ++it)
    text += (*it)->text(0) + " " + (*it)->text(1) + "\n";
  return text;
}

bool anyIssueSays(const StudioDocument& document, const QString& text) {
  for (const Issue& issue : document.issues())
    if (issue.message.contains(text)) return true;
  return false;
}

}  // namespace

class TestStaleState : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QSettings("Kiln", "kiln-studio").clear();
  }

  void anotherModelStartsWithoutTheRulesAndBuildStatusOfTheFirst() {
    QTemporaryDir dir;
    const QString a = writeChain(dir, "a", 9), b = writeChain(dir, "b", 5);
    QVERIFY(!a.isEmpty() && !b.isEmpty());
    MainWindow window;
    auto* build = qobject_cast<BuildPanel*>(window.panel("build"));
    QSignalSpy built(build, &BuildPanel::buildFinished);

    QVERIFY(openAndWait(window, a));
    build->setConstraintMode(ConstraintMode::kPrefer);
    build->setLayerPrecision("a_Relu_0", DataType::kFloat32);
    QCOMPARE(window.document()->buildConfig().layerPrecisions.size(), size_t(1));
    build->startBuild();
    QVERIFY(built.wait(kJobTimeoutMs));
    QVERIFY2(built.last().at(0).toBool(), qPrintable(built.last().at(1).toString()));
    const QString builtA = build->statusText();
    QVERIFY2(builtA.contains("a.onnx") && builtA.contains("layers built"), qPrintable(builtA));

    QVERIFY(openAndWait(window, b));
    QVERIFY(window.document()->buildConfig().layerPrecisions.empty());
    QVERIFY(build->constraintsTable()->model()->precisionRules().empty());
    QVERIFY2(!build->statusText().contains("layers built"), qPrintable(build->statusText()));
    QVERIFY2(window.statusBar()->currentMessage().contains("b.onnx"),
             qPrintable(window.statusBar()->currentMessage()));
    // The setting that is not per model stays.
    QCOMPARE(window.document()->buildConfig().precisionConstraints, ConstraintMode::kPrefer);

    build->startBuild();
    QVERIFY(built.wait(kJobTimeoutMs));
    QVERIFY2(built.last().at(0).toBool(), qPrintable(built.last().at(1).toString()));
    QVERIFY(build->statusText().contains("b.onnx"));
    QVERIFY(!anyIssueSays(*window.document(), "matches no layer"));

    // An engine the Build dock did not build replaces what its status line describes.
    QVERIFY(openAndWait(window, dataPath("trtexec/mobilenet.qat.onnx.engine.graph.json")));
    QVERIFY2(build->statusText().isEmpty(), qPrintable(build->statusText()));
  }

  void anotherEngineClearsTheSelectionAndTheStatusMessage() {
    MainWindow window;
    QVERIFY(openAndWait(window, dataPath("trtexec/mobilenet.qat.onnx.engine.graph.json")));
    const auto report = window.document()->report();
    QVERIFY(report);
    int layer = 0;
    while (layer < static_cast<int>(report->layers.size()) &&
           report->layers[layer].sourceNodes.empty())
      ++layer;
    QVERIFY(layer < static_cast<int>(report->layers.size()));
    window.document()->selectLayer(layer);
    QVERIFY(!window.document()->selectedNodes().isEmpty());

    const QString other = "mobilenet_v2_residuals.qat.onnx.engine.graph.json";
    QVERIFY(openAndWait(window, dataPath("trtexec/" + other)));
    QVERIFY(window.document()->selectedNodes().isEmpty());
    QCOMPARE(window.document()->selectedLayer(), -1);
    const QString properties = propertiesText(window);
    QVERIFY2(!properties.contains("Not in the model"), qPrintable(properties));
    QVERIFY2(window.statusBar()->currentMessage().contains(other),
             qPrintable(window.statusBar()->currentMessage()));
  }

  void rulesWithoutConstraintsAreFlagged() {
    QTemporaryDir dir;
    const QString a = writeChain(dir, "a", 9);
    MainWindow window;
    QVERIFY(openAndWait(window, a));
    auto* build = qobject_cast<BuildPanel*>(window.panel("build"));
    build->setConstraintMode(ConstraintMode::kNone);
    QVERIFY(!build->rulesIgnoredWarningShown());  // no rule yet
    build->setLayerPrecision("a_Softsign_1", DataType::kFloat16);
    QVERIFY(build->rulesIgnoredWarningShown());
    auto* label = build->findChild<QLabel*>("rulesIgnored");
    QVERIFY2(label->text().contains("1 per-layer rule is ignored"), qPrintable(label->text()));
    test::saveDockScreenshot(window, "build", {460, 560}, "build-rules-ignored");
    build->setConstraintMode(ConstraintMode::kPrefer);
    QVERIFY(!build->rulesIgnoredWarningShown());
    build->setConstraintMode(ConstraintMode::kNone);
    QVERIFY(build->rulesIgnoredWarningShown());
  }
};

QTEST_MAIN(TestStaleState)
#include "test_stale_state.moc"
