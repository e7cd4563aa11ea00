// File > Export > ONNX with precisions (TensorRT 11) (issue 24 item 3): the open model
// written strongly typed from the open engine's decisions and from the Build dock's
// rules (an FP32 island kept), INT8 Q/DQ from a calibration cache, each with its
// summary as an info Issue; the refusals without an engine or a cache.
#include <QFileInfo>
#include <QMenu>
#include <QTemporaryDir>
#include <QtTest>

#include "engine_report.h"
#include "export_actions.h"
#include "job_runner.h"
#include "kiln/build_backend.h"
#include "kiln/builder.h"
#include "kiln/calibration.h"
#include "kiln/onnx_import.h"
#include "kiln/plan.h"
#include "studio_document.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

QString modelPath() {
  return QString::fromLocal8Bit(qgetenv("KILN_TEST_DATA_DIR")) + "/compare/small_cnn.onnx";
}

std::shared_ptr<const Network> load() {
  auto imported = importOnnxFile(modelPath().toStdString());
  return imported.isOk() ? std::make_shared<const Network>(std::move(imported.value())) : nullptr;
}

// The export actions over a document holding small_cnn (no engine).
struct ModelExport {
  StudioDocument document;
  JobRunner jobs;
  ExportActions actions{&document, &jobs, nullptr, nullptr};
  ModelExport() { document.setModel(modelPath(), load()); }
};

int countOps(const Network& network, const std::string& opType) {
  int n = 0;
  for (const Node& node : network.graph.nodes) n += node.opType == opType;
  return n;
}

int initializersOf(const Network& network, DataType type) {
  int n = 0;
  for (const auto& [name, tensor] : network.graph.initializers) n += tensor.type() == type;
  return n;
}

std::shared_ptr<const Network> reimport(const QString& path) {
  auto imported = importOnnxFile(path.toStdString());
  if (!imported.isOk()) qWarning("%s", imported.status().message().c_str());
  return imported.isOk() ? std::make_shared<const Network>(std::move(imported.value())) : nullptr;
}

bool hasInfoIssue(const StudioDocument& document, const QString& text) {
  for (const Issue& issue : document.issues())
    if (issue.source == "export" && issue.severity == IssueSeverity::kInfo &&
        issue.message.contains(text))
      return true;
  return false;
}

}  // namespace

class TestTypedExport : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QVERIFY2(load(), qPrintable("cannot import " + modelPath())); }

  void fromTheEngineOfAnFp16Build() {
    StudioDocument document;
    JobRunner jobs;
    ExportActions actions(&document, &jobs, nullptr, nullptr);
    auto network = load();
    document.setModel(modelPath(), network);
    QTemporaryDir dir;
    const QString out = dir.filePath("small_cnn.strongly_typed.onnx");
    // No engine yet: refused, nothing written.
    Status refused = actions.exportTypedFromEngine(out);
    QVERIFY(!refused.isOk());
    QVERIFY2(QString::fromStdString(refused.message()).contains("no Kiln engine"),
             refused.message().c_str());
    QVERIFY(!QFileInfo::exists(out));

    BuilderConfig config;
    config.fp16 = true;  // the CPU times fp16 slower than fp32: a rule makes it fp16
    config.precisionConstraints = ConstraintMode::kObey;
    config.layerPrecisions.push_back({"*", DataType::kFloat16});
    auto backend = cpuBuildBackend();
    auto plan = buildPlan(network, config, *backend);
    QVERIFY2(plan.isOk(), plan.status().message().c_str());
    auto shared = std::make_shared<const Plan>(std::move(plan.value()));
    document.setEngine("small_cnn.kiln", shared,
                       std::make_shared<const inspector::EngineReport>(
                           inspector::reportFromPlan(*shared, "small_cnn.kiln")));
    Status ok = actions.exportTypedFromEngine(out);
    QVERIFY2(ok.isOk(), ok.message().c_str());
    auto typed = reimport(out);
    QVERIFY(typed);
    // Every layer fp16: weights stored as float16, the graph's input and output float16,
    // no Cast needed, every node kept.
    QVERIFY(initializersOf(*typed, DataType::kFloat16) > 0);
    QCOMPARE(initializersOf(*typed, DataType::kFloat32), 0);
    QCOMPARE(countOps(*typed, "Cast"), 0);
    QCOMPARE(typed->graph.nodes.size(), network->graph.nodes.size());
    QCOMPARE(typed->graph.inputs[0].type, DataType::kFloat16);
    QVERIFY(hasInfoIssue(document, "--stronglyTyped"));
    // Keep float32 inputs and outputs.
    actions.setKeepIoTypes(true);
    const QString kept = dir.filePath("kept.onnx");
    QVERIFY(actions.exportTypedFromEngine(kept).isOk());
    auto keptTyped = reimport(kept);
    QVERIFY(keptTyped);
    QCOMPARE(keptTyped->graph.inputs[0].type, DataType::kFloat32);
    QCOMPARE(keptTyped->graph.outputs[0].type, DataType::kFloat32);
    QCOMPARE(countOps(*keptTyped, "Cast"), 2);  // after the input, before the output
  }

  void fromTheBuildDocksRulesWithAnFp32Island() {
    StudioDocument document;
    JobRunner jobs;
    ExportActions actions(&document, &jobs, nullptr, nullptr);
    auto network = load();
    document.setModel(modelPath(), network);
    // Pin the second Conv to fp32; every other node is free and goes fp16.
    const Node* conv = nullptr;
    int convs = 0;
    for (const Node& node : network->graph.nodes)
      if (node.opType == "Conv" && ++convs == 2) conv = &node;
    QVERIFY(conv);
    BuilderConfig config = document.buildConfig();
    config.fp16 = true;
    config.precisionConstraints = ConstraintMode::kObey;
    config.layerPrecisions.push_back({conv->displayName(), DataType::kFloat32});
    document.setBuildConfig(config);
    QTemporaryDir dir;
    const QString out = dir.filePath("rules.onnx");
    Status ok = actions.exportTypedFromRules(out);
    QVERIFY2(ok.isOk(), ok.message().c_str());
    auto typed = reimport(out);
    QVERIFY(typed);
    // The pinned Conv keeps float32 weights; others are float16.
    const Node* exported = nullptr;
    for (const Node& node : typed->graph.nodes)
      if (node.name == conv->displayName()) exported = &node;
    QVERIFY(exported);
    QCOMPARE(typed->graph.initializers.at(exported->inputs[1]).type(), DataType::kFloat32);
    QVERIFY(initializersOf(*typed, DataType::kFloat16) > 0);
    QVERIFY(countOps(*typed, "Cast") >= 2);  // into the island and out of it
    QVERIFY(hasInfoIssue(document, "Build dock's rules"));
  }

  // With KILN_SCREENSHOT_DIR set (under Xvfb): the submenu as
  // docs/screenshots/typed-export-menu.png.
  void menuScreenshot() {
    const QString dir = qEnvironmentVariable("KILN_SCREENSHOT_DIR");
    if (dir.isEmpty()) QSKIP("KILN_SCREENSHOT_DIR not set");
    StudioDocument document;
    JobRunner jobs;
    ExportActions actions(&document, &jobs, nullptr, nullptr);
    document.setModel(modelPath(), load());
    QMenu file;
    actions.addTo(&file);
    QMenu* typed = nullptr;
    for (QMenu* menu : file.findChildren<QMenu*>())
      if (menu->title().contains("precisions")) typed = menu;
    QVERIFY(typed);
    QVERIFY(!typed->actions().at(0)->isEnabled());  // no engine yet
    QVERIFY(typed->actions().at(1)->isEnabled());   // the rules need only the model
    typed->popup(QPoint(40, 40));
    QVERIFY(QTest::qWaitForWindowExposed(typed));
    QTest::qWait(150);
    QVERIFY(typed->grab().save(dir + "/typed-export-menu.png"));
    typed->hide();
  }

  // INT8 + FP16 from the engine and the cache: refused without an engine; with an INT8
  // CPU build of small_cnn (every value's range in the cache) the export holds the cache's
  // Q/DQ pairs, each quantized Conv reading a DequantizeLinear directly (no Cast between),
  // and the summary names the engine and the cache.
  void int8WithTheEnginesOtherLayers() {
    ModelExport on;
    StudioDocument& document = on.document;
    QTemporaryDir dir;
    const QString out = dir.filePath("small_cnn.int8_fp16.onnx");
    Status refused = on.actions.exportQdqWithEngine(out);
    QVERIFY(!refused.isOk());
    QVERIFY2(QString::fromStdString(refused.message()).contains("no Kiln engine"),
             refused.message().c_str());
    auto network = load();
    CalibrationTable table;
    table.method = "minmax";
    for (const ValueInfo& input : network->graph.inputs) table.tensors[input.name].amax = 4.0;
    for (const Node& node : network->graph.nodes)
      for (const std::string& output : node.outputs) table.tensors[output].amax = 4.0;
    const std::string cache = dir.filePath("c.cache").toStdString();
    QVERIFY(saveCalibrationCache(table, cache).isOk());
    BuilderConfig config;
    config.int8 = true;
    config.fp16 = true;
    config.calibration = &table;
    config.calibrationCachePath = cache;
    auto backend = cpuBuildBackend();
    auto plan = buildPlan(network, config, *backend);
    QVERIFY2(plan.isOk(), plan.status().message().c_str());
    auto shared = std::make_shared<const Plan>(std::move(plan.value()));
    document.setEngine("small_cnn_int8.kiln", shared,
                       std::make_shared<const inspector::EngineReport>(
                           inspector::reportFromPlan(*shared, "small_cnn_int8.kiln")));
    BuilderConfig dock = document.buildConfig();
    dock.calibrationCachePath = cache;
    document.setBuildConfig(dock);
    Status ok = on.actions.exportQdqWithEngine(out);
    QVERIFY2(ok.isOk(), ok.message().c_str());
    auto typed = reimport(out);
    QVERIFY(typed);
    QVERIFY(countOps(*typed, "QuantizeLinear") > 0);
    int quantizedConvs = 0;
    for (const Node& node : typed->graph.nodes) {
      if (node.opType != "Conv") continue;
      for (const Node& producer : typed->graph.nodes)
        if (producer.opType == "DequantizeLinear" && producer.outputs[0] == node.inputs[0])
          ++quantizedConvs;
    }
    QVERIFY(quantizedConvs > 0);
    QVERIFY(hasInfoIssue(document, "c.cache"));
    QVERIFY(hasInfoIssue(document, "Q/DQ pairs on activations"));
  }

  void int8NeedsACalibrationCache() {
    ModelExport on;
    QTemporaryDir dir;
    Status refused = on.actions.exportQdqFromCalibration(dir.filePath("q.onnx"));
    QVERIFY(!refused.isOk());
    QVERIFY2(QString::fromStdString(refused.message()).contains("no calibration cache"),
             refused.message().c_str());
  }

  // The FP8 action reaches the engine's export: small_cnn is opset 17, refused by name.
  void fp8OfAnOpset17ModelIsRefusedNamingTheOpset() {
    ModelExport on;
    StudioDocument& document = on.document;
    QTemporaryDir dir;
    CalibrationTable table;
    table.method = "minmax";
    table.tensors["input"].amax = 1.0;
    const std::string cache = dir.filePath("c.cache").toStdString();
    QVERIFY(saveCalibrationCache(table, cache).isOk());
    BuilderConfig config = document.buildConfig();
    config.calibrationCachePath = cache;
    document.setBuildConfig(config);
    Status refused = on.actions.exportFp8FromCalibration(dir.filePath("f.onnx"));
    QVERIFY(!refused.isOk());
    QVERIFY2(QString::fromStdString(refused.message()).contains("opset 19"),
             refused.message().c_str());
    QVERIFY(!QFileInfo::exists(dir.filePath("f.onnx")));
  }
};

QTEST_MAIN(TestTypedExport)
#include "test_typed_export.moc"
