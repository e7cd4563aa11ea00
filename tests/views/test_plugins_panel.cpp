// The studio's plugin support: the Plugins panel (libraries, creators, typed fields,
// loading from the GUI and its errors), the Plugins dock and menu of the main window,
// and plugin layers marked in the model and engine graphs (dashed border, legend,
// tool tip with the plugin and, in the engine graph, its time).
#include <QDockWidget>
#include <QMenuBar>
#include <QSignalSpy>
#include <QtTest>

#include "engine_graph_view.h"
#include "engine_report.h"
#include "graph_items.h"
#include "graph_scene.h"
#include "graph_view.h"
#include "job_runner.h"
#include "kiln/builder.h"
#include "kiln/onnx_import.h"
#include "main_window.h"
#include "model_graph_view.h"
#include "plugins_panel.h"
#include "studio_document.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

constexpr int kLayoutTimeoutMs = 60000;
const QString kLibrary = QStringLiteral(KILN_EXAMPLE_PLUGINS);
const std::string kModel = std::string(KILN_EXAMPLE_MODELS_DIR) + "/copy_concat/model.onnx";

GraphNodeItem* boxWithFirstLine(GraphScene* scene, const QString& line) {
  for (int i = 0; i < scene->nodeCount(); ++i)
    if (scene->nodeItem(i)->lines().front() == line) return scene->nodeItem(i);
  return nullptr;
}

}  // namespace

class TestPluginsPanel : public QObject {
  Q_OBJECT
 private slots:
  void listsLibrariesCreatorsAndFields();
  void mainWindowHasThePluginsDockAndMenu();
  void graphsMarkPluginLayers();
};

void TestPluginsPanel::listsLibrariesCreatorsAndFields() {
  StudioDocument document;
  PluginsPanel panel(&document);
  QCOMPARE(panel.statusText(), QString("No plugin loaded."));
  QSignalSpy changed(&panel, &PluginsPanel::pluginsChanged);

  QVERIFY(!panel.loadLibrary("/no/such/libplugin.so"));
  QVERIFY(panel.statusText().contains("/no/such/libplugin.so: plugin library not found"));
  QCOMPARE(document.issues().size(), size_t{1});
  QCOMPARE(document.issues()[0].source, QString("plugins"));
  QCOMPARE(changed.count(), 0);

  QVERIFY(panel.loadLibrary(kLibrary));
  QCOMPARE(changed.count(), 1);
  QVERIFY(document.issues().empty());  // the failed attempt's issue is cleared
  QCOMPARE(panel.topLevelTexts(), QStringList{"libkiln_example_plugins.so"});
  const QStringList rows = panel.childTexts(0);
  QVERIFY2(rows.contains("CopyConcat version 1, namespace 'kiln.examples'"),
           qPrintable(rows.join('|')));
  QVERIFY(rows.contains("QuantizedPool version 1, namespace 'kiln.examples'"));
  QVERIFY(rows.contains("  kernel_shape: int64[2]"));
  QVERIFY(rows.contains("  mode: string"));
}

void TestPluginsPanel::mainWindowHasThePluginsDockAndMenu() {
  MainWindow window;
  auto* panel = qobject_cast<PluginsPanel*>(window.panel("plugins"));
  QVERIFY(panel);
  QVERIFY(window.findChild<QDockWidget*>("dock_plugins"));
  QStringList menus;
  for (QAction* action : window.menuBar()->actions()) menus << action->text();
  QVERIFY2(menus.contains("&Plugins"), qPrintable(menus.join('|')));
}

void TestPluginsPanel::graphsMarkPluginLayers() {
  QVERIFY(loadPluginLibrary(kLibrary.toStdString()).isOk());
  auto imported = importOnnxFile(kModel);
  QVERIFY2(imported.isOk(), imported.status().message().c_str());
  auto network = std::make_shared<const Network>(std::move(imported.value()));

  StudioDocument document;
  JobRunner jobs;
  ModelGraphView model(&document, &jobs);
  document.setModel(QString::fromStdString(kModel), network);
  QVERIFY(jobs.waitForIdle(kLayoutTimeoutMs));
  GraphScene* scene = model.graphView()->graphScene();
  GraphNodeItem* plugin = boxWithFirstLine(scene, "CopyConcat");
  GraphNodeItem* builtin = boxWithFirstLine(scene, "Mul");
  QVERIFY(plugin && builtin);
  QVERIFY(plugin->isPlugin());
  QVERIFY(!builtin->isPlugin());
  QVERIFY(plugin->toolTip().contains("plugin layer: kiln.examples::CopyConcat version 1 from "));
  QVERIFY(model.graphView()->legendText().contains("Plugin layer"));

  // The engine graph of a CPU plan: the plugin layer is marked and shows its time.
  BuilderConfig config;
  OptimizationProfile profile;
  profile.inputs["A"] = {{1, 4}, {3, 4}, {8, 4}};
  profile.inputs["B"] = {{1, 4}, {5, 4}, {8, 4}};
  config.profiles = {profile};
  auto plan = buildPlan(std::const_pointer_cast<Network>(network), config, *cpuBuildBackend());
  QVERIFY2(plan.isOk(), plan.status().message().c_str());
  auto shared = std::make_shared<const Plan>(std::move(plan.value()));
  auto report = std::make_shared<const inspector::EngineReport>(
      inspector::reportFromPlan(*shared, "copy_concat.kiln"));
  EngineGraphView engine(&document, &jobs);
  document.setEngine("copy_concat.kiln", shared, report);
  QVERIFY(jobs.waitForIdle(kLayoutTimeoutMs));
  GraphScene* engineScene = engine.graphView()->graphScene();
  int marked = 0;
  for (int i = 0; i < engineScene->nodeCount(); ++i) {
    GraphNodeItem* item = engineScene->nodeItem(i);
    if (!item->isPlugin()) continue;
    ++marked;
    QCOMPARE(item->lines().front(), QString("copy_concat"));
    QVERIFY2(item->toolTip().contains("plugin layer: kiln.examples::CopyConcat version 1\n"),
             qPrintable(item->toolTip()));
    QVERIFY(item->toolTip().contains(" ms"));
  }
  QCOMPARE(marked, 1);
}

QTEST_MAIN(TestPluginsPanel)
#include "test_plugins_panel.moc"
