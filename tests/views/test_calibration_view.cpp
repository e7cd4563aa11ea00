// The calibration workspace on the small CNN fixture (tests/data/quant/), offscreen:
// load a data folder (tensors, and images through QImage), calibrate on the CPU,
// histograms show with each method's range, edit a range and pin a tensor in the
// table, rebuild in INT8 and find the edit in the engine, save and load the cache; the
// view fits a 1366 x 768 screen with its numbers and the histogram's legend readable.
#include <QComboBox>
#include <QDir>
#include <QSpinBox>
#include <QImage>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <memory>

#include "calibration_session.h"
#include "calibration_view.h"
#include "histogram_widget.h"
#include "ir/quantized_layers.h"
#include "job_runner.h"
#include "main_window.h"
#include "kiln/onnx_export.h"
#include "kiln/onnx_import.h"
#include "kiln/tensor_io.h"
#include "kiln/passes.h"
#include "studio_document.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

QString quantDir() {
  return QString::fromLocal8Bit(qgetenv("KILN_TEST_DATA_DIR")) + "/quant";
}

std::shared_ptr<const Network> smallCnn() {
  auto imported = importOnnxFile((quantDir() + "/small_cnn.onnx").toStdString());
  return imported.isOk() ? std::make_shared<const Network>(std::move(imported.value())) : nullptr;
}

struct Workspace {
  StudioDocument document;
  JobRunner jobs;
  std::unique_ptr<CalibrationView> view;

  Workspace() {
    document.setModel(quantDir() + "/small_cnn.onnx", smallCnn());
    BuilderConfig config;
    OptimizationProfile profile;
    profile.inputs["input"] = {{1, 3, 16, 16}, {4, 3, 16, 16}, {8, 3, 16, 16}};
    config.profiles = {profile};
    config.optimizationLevel = 1;
    document.setBuildConfig(config);
    view = std::make_unique<CalibrationView>(&document, &jobs);
  }
  bool idle() { return jobs.waitForIdle(60000); }
  int rowOf(const std::string& tensor) {
    const auto& rows = view->session()->rows();
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i].tensor == tensor) return static_cast<int>(i);
    return -1;
  }
};

// The x_scale of the INT8 layer made from ONNX node `onnxNode` in the document's plan.
float inputScaleInEngine(const StudioDocument& document, const std::string& onnxNode) {
  if (!document.plan()) return 0;
  for (const Node& n : document.plan()->network->graph.nodes) {
    if (!isQuantizedLayer(n)) continue;
    for (const std::string& s : n.attrStrings(kSourceNodesAttribute))
      if (s == onnxNode)
        return document.plan()
            ->network->graph.initializers.at(n.inputs[kQuantXScale])
            .data<float>()[0];
  }
  return 0;
}

}  // namespace

class TestCalibrationView : public QObject {
  Q_OBJECT
 private slots:
  void calibratesEditsAndRebuilds();
  void imagesDecodeThroughQt();
  void badFolderBecomesAnIssue();
  void fitsA1366x768Screen();
  void histogramLegendWrapsInsteadOfOverlapping();
  void severalInputsFromOneSubfolderEach();
};

namespace {

bool disjoint(const std::vector<QRect>& rects) {
  for (size_t i = 0; i < rects.size(); ++i)
    for (size_t j = i + 1; j < rects.size(); ++j)
      if (rects[i].intersects(rects[j])) return false;
  return true;
}

}  // namespace

// Issue 26 item 11: at 1366 x 768 the legend overlapped itself and the table showed
// only the tensor names.
void TestCalibrationView::fitsA1366x768Screen() {
  MainWindow window;
  window.resize(1366, 768);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  window.openFile(quantDir() + "/small_cnn.onnx");
  QVERIFY(window.jobs()->waitForIdle(60000));
  BuilderConfig config = window.document()->buildConfig();
  OptimizationProfile profile;
  profile.inputs["input"] = {{1, 3, 16, 16}, {4, 3, 16, 16}, {8, 3, 16, 16}};
  config.profiles = {profile};
  window.document()->setBuildConfig(config);
  window.showView("calibration");
  auto* view = dynamic_cast<CalibrationView*>(window.view("calibration"));
  QVERIFY(view);
  view->setFolder(quantDir() + "/calib");
  view->loadData();
  QVERIFY(window.jobs()->waitForIdle(60000));
  view->startCalibration();
  QVERIFY(window.jobs()->waitForIdle(60000));
  QTableWidget* table = view->rangeTable();
  QCOMPARE(table->rowCount(), 17);
  table->setCurrentCell(0, CalibrationView::kTensor);
  QTest::qWait(50);
  // The view does not make the window taller than the screen.
  QVERIFY2(window.minimumSizeHint().height() <= 768,
           qPrintable(QString::number(window.minimumSizeHint().height())));
  QVERIFY2(window.height() <= 768, qPrintable(QString::number(window.height())));
  // The numbers are on screen beside the names: min, max and entropy at least.
  const int entropyEnd = table->columnViewportPosition(CalibrationView::kEntropy) +
                         table->columnWidth(CalibrationView::kEntropy);
  QVERIFY2(entropyEnd <= table->viewport()->width(),
           qPrintable(QStringLiteral("%1 > %2").arg(entropyEnd).arg(table->viewport()->width())));
  QVERIFY(table->viewport()->height() >= 4 * table->rowHeight(0));
  // The histogram's legend entries and its axis note never overlap.
  HistogramWidget* histogram = view->histogramWidget();
  QCOMPARE(histogram->markers().size(), size_t(4));
  std::vector<QRect> texts = histogram->legendRects();
  texts.push_back(histogram->axisNoteRect());
  QVERIFY(disjoint(texts));
  for (const QRect& r : texts) QVERIFY(histogram->rect().contains(r));
  // With KILN_SCREENSHOT_DIR set (packaging/screenshots.sh), the window at both sizes.
  const QString dir = qEnvironmentVariable("KILN_SCREENSHOT_DIR");
  if (dir.isEmpty()) return;
  QVERIFY(window.grab().save(dir + "/calibration-1366x768.png"));
  window.resize(1920, 1080);
  QTest::qWait(200);
  QVERIFY(window.grab().save(dir + "/calibration.png"));
}

void TestCalibrationView::histogramLegendWrapsInsteadOfOverlapping() {
  Workspace w;
  w.view->setFolder(quantDir() + "/calib");
  w.view->loadData();
  QVERIFY(w.idle());
  w.view->startCalibration();
  QVERIFY(w.idle());
  w.view->rangeTable()->setCurrentCell(w.rowOf("r1"), CalibrationView::kTensor);
  HistogramWidget* histogram = w.view->histogramWidget();
  histogram->resize(histogram->minimumSizeHint());
  std::vector<QRect> texts = histogram->legendRects();
  QCOMPARE(texts.size(), size_t(4));
  QVERIFY(texts.back().top() > texts.front().top());  // wrapped to another row
  texts.push_back(histogram->axisNoteRect());
  QVERIFY(disjoint(texts));
  for (const QRect& r : texts) QVERIFY2(histogram->rect().contains(r), "outside the widget");
  QVERIFY(!histogram->grab().isNull());
}

void TestCalibrationView::calibratesEditsAndRebuilds() {
  Workspace w;
  QVERIFY(w.document.network());
  QSignalSpy loaded(w.view->session(), &CalibrationSession::dataLoaded);
  w.view->setFolder(quantDir() + "/calib");
  w.view->loadData();
  QVERIFY(w.idle());
  QCOMPARE(loaded.count(), 1);
  QVERIFY(loaded.at(0).at(0).toBool());
  QCOMPARE(w.view->session()->sampleCount(), 8);
  QCOMPARE(w.view->previewCount(), 6);

  QSignalSpy calibrated(w.view->session(), &CalibrationSession::calibrated);
  w.view->startCalibration();
  QVERIFY(w.idle());
  QCOMPARE(calibrated.count(), 1);
  QVERIFY2(calibrated.at(0).at(0).toBool(), qPrintable(calibrated.at(0).at(1).toString()));
  QTableWidget* table = w.view->rangeTable();
  QCOMPARE(table->rowCount(), 17);

  // The histogram of r1 shows, with the three methods' ranges and the chosen one.
  const int r1 = w.rowOf("r1");
  QVERIFY(r1 >= 0);
  table->setCurrentCell(r1, CalibrationView::kTensor);
  HistogramWidget* histogram = w.view->histogramWidget();
  QCOMPARE(histogram->title(), QString("r1"));
  QVERIFY(histogram->binCount() > 10);
  QCOMPARE(histogram->markers().size(), size_t(4));
  const TensorRangeRow row = w.view->session()->rows()[r1];
  QVERIFY(row.minmax > 0);
  QVERIFY(row.entropy <= row.minmax + 1e-9);
  QCOMPARE(row.chosen.amax, row.entropy);  // entropy is the default method
  QCOMPARE(histogram->markers()[1].value, row.minmax);
  QVERIFY(!histogram->grab().isNull());

  // Switching the method moves every unedited range.
  w.view->findChild<QComboBox*>("method")->setCurrentText("minmax");
  QCOMPARE(w.view->session()->rows()[r1].chosen.amax, row.minmax);

  // Edit r1's range in the table (conv2 reads r1), pin r2 (conv3 reads it) to fp16.
  const double edited = std::round(row.minmax * 12) / 4;  // about 3x, exact in text
  table->item(r1, CalibrationView::kRange)->setText(QString::number(edited, 'g', 9));
  QVERIFY(w.view->session()->rows()[r1].edited);
  QCOMPARE(w.view->session()->rows()[r1].chosen.amax, edited);
  table->item(w.rowOf("r2"), CalibrationView::kPin)->setText("fp16");
  QCOMPARE(w.view->session()->rows()[w.rowOf("r2")].chosen.pinned, DataType::kFloat16);
  table->item(w.rowOf("r3"), CalibrationView::kRange)->setText("-2");  // refused
  QVERIFY(!w.view->session()->rows()[w.rowOf("r3")].edited);

  QSignalSpy rebuilt(w.view->session(), &CalibrationSession::rebuilt);
  w.view->buildInt8();
  QVERIFY(w.idle());
  QCOMPARE(rebuilt.count(), 1);
  QVERIFY2(rebuilt.at(0).at(0).toBool(), qPrintable(rebuilt.at(0).at(1).toString()));
  QVERIFY(w.document.plan());
  QCOMPARE(inputScaleInEngine(w.document, "conv2"), static_cast<float>(edited / 127));
  QCOMPARE(inputScaleInEngine(w.document, "conv3"), 0.f);  // pinned: not INT8
  bool conv3Fp16 = false;
  for (const LayerRecord& layer : w.document.plan()->record.layers)
    for (const std::string& source : layer.sourceNodes)
      if (source == "conv3") conv3Fp16 = layer.precision == DataType::kFloat16;
  QVERIFY(conv3Fp16);

  // Save, load into a fresh workspace: the edits come back.
  QTemporaryDir dir;
  const QString cache = dir.filePath("cnn.cache");
  QVERIFY(w.view->session()->saveCache(cache).isOk());
  QVERIFY(QFile::exists(cache + ".preprocess"));
  Workspace fresh;
  QVERIFY(fresh.view->session()->loadCache(cache).isOk());
  QCOMPARE(fresh.view->rangeTable()->rowCount(), 17);
  QCOMPARE(fresh.view->session()->rows()[fresh.rowOf("r1")].chosen.amax, edited);
  QCOMPARE(fresh.view->session()->rows()[fresh.rowOf("r2")].chosen.pinned, DataType::kFloat16);
}

void TestCalibrationView::imagesDecodeThroughQt() {
  QTemporaryDir dir;
  for (int i = 0; i < 3; ++i) {
    QImage image(40, 30, QImage::Format_RGB888);
    image.fill(QColor(60 * i, 200 - 50 * i, 90));
    QVERIFY(image.save(dir.filePath(QString("img%1.png").arg(i))));
  }
  Workspace w;
  w.view->findChild<QSpinBox*>("width")->setValue(16);
  w.view->setFolder(dir.path());
  QSignalSpy loaded(w.view->session(), &CalibrationSession::dataLoaded);
  w.view->loadData();
  QVERIFY(w.idle());
  QCOMPARE(loaded.count(), 1);
  QVERIFY2(loaded.at(0).at(0).toBool(), qPrintable(loaded.at(0).at(1).toString()));
  QCOMPARE(w.view->session()->sampleCount(), 3);
  QCOMPARE(w.view->previewCount(), 3);
  QCOMPARE(w.view->session()->previews().front().width(), 16);
}

void TestCalibrationView::badFolderBecomesAnIssue() {
  Workspace w;
  w.view->setFolder("/nonexistent/calib");
  QSignalSpy loaded(w.view->session(), &CalibrationSession::dataLoaded);
  w.view->loadData();
  QVERIFY(w.idle());
  QCOMPARE(loaded.count(), 1);
  QVERIFY(!loaded.at(0).at(0).toBool());
  QVERIFY(!w.document.issues().empty());
  QVERIFY(w.document.issues().back().message.contains("/nonexistent/calib"));
  // Calibrating without data says what to do first.
  QSignalSpy calibrated(w.view->session(), &CalibrationSession::calibrated);
  w.view->startCalibration();
  QCOMPARE(calibrated.count(), 1);
  QVERIFY(calibrated.at(0).at(1).toString().contains("load a data folder"));
}

// A model of two inputs (x + m, then MatMul): the folder holds x/ and m/ with the same
// number of samples; the view loads both, calibrates, and both inputs get their own
// range (x's values span 1, m's 0.01). Without the subfolders it says what to give.
void TestCalibrationView::severalInputsFromOneSubfolderEach() {
  QTemporaryDir dir;
  auto net = std::make_shared<Network>();
  net->opsets[""] = 17;
  Graph& g = net->graph;
  for (const char* name : {"x", "m"})
    g.inputs.push_back({name, DataType::kFloat32, true, {DimExpr::symbol("n"), DimExpr(8)}});
  Tensor w(DataType::kFloat32, {8, 4});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  g.initializers["w"] = w;
  Node add;
  add.name = "add";
  add.opType = "Add";
  add.inputs = {"x", "m"};
  add.outputs = {"s"};
  Node mm;
  mm.name = "proj";
  mm.opType = "MatMul";
  mm.inputs = {"s", "w"};
  mm.outputs = {"y"};
  g.nodes = {add, mm};
  g.outputs.push_back({"y", DataType::kFloat32, false, {}});
  const QString model = dir.filePath("two.onnx");
  QVERIFY(exportOnnxFile(*net, model.toStdString()).isOk());
  auto imported = importOnnxFile(model.toStdString());
  QVERIFY2(imported.isOk(), imported.status().message().c_str());
  for (const auto& [name, scale] : {std::pair{"x", 1.f}, std::pair{"m", 0.01f}}) {
    QVERIFY(QDir(dir.path()).mkpath(name));
    for (int k = 0; k < 4; ++k) {
      Tensor t(DataType::kFloat32, {8});
      for (int64_t i = 0; i < 8; ++i)
        t.data<float>()[i] = scale * (static_cast<float>((i + k) % 5) / 4.f - 0.5f) * 2.f;
      const QString file = dir.filePath(QString("%1/s%2.npy").arg(name).arg(k));
      QVERIFY(writeNpyFile(file.toStdString(), t).isOk());
    }
  }
  StudioDocument document;
  JobRunner jobs;
  document.setModel(model, std::make_shared<const Network>(std::move(imported.value())));
  CalibrationView view(&document, &jobs);
  QSignalSpy loaded(view.session(), &CalibrationSession::dataLoaded);
  view.setFolder(dir.path());
  view.loadData();
  QVERIFY(jobs.waitForIdle(60000));
  QCOMPARE(loaded.count(), 1);
  QVERIFY2(loaded.at(0).at(0).toBool(), qPrintable(loaded.at(0).at(1).toString()));
  QCOMPARE(loaded.at(0).at(1).toString(), QString("4 samples for each of 2 inputs"));
  QSignalSpy calibrated(view.session(), &CalibrationSession::calibrated);
  view.startCalibration();
  QVERIFY(jobs.waitForIdle(60000));
  QCOMPARE(calibrated.count(), 1);
  QVERIFY2(calibrated.at(0).at(0).toBool(), qPrintable(calibrated.at(0).at(1).toString()));
  double x = -1, m = -1;
  for (const TensorRangeRow& row : view.session()->rows()) {
    if (row.tensor == "x") x = row.minmax;
    if (row.tensor == "m") m = row.minmax;
  }
  QVERIFY2(x > 0.5 && x <= 1.0, qPrintable(QString::number(x)));
  QVERIFY2(m > 0 && m <= 0.01 + 1e-6, qPrintable(QString::number(m)));
  if (const QString shots = qEnvironmentVariable("KILN_SCREENSHOT_DIR"); !shots.isEmpty()) {
    view.resize(1200, 700);
    view.show();
    QTest::qWait(200);
    QVERIFY(view.grab().save(shots + "/calibration-two-inputs.png"));
  }
  // The x folder alone is one input's data: calibrating names what is missing.
  view.setFolder(dir.filePath("x"));
  view.loadData();
  QVERIFY(jobs.waitForIdle(60000));
  view.startCalibration();
  QVERIFY(jobs.waitForIdle(60000));
  QCOMPARE(calibrated.count(), 2);
  QVERIFY(!calibrated.at(1).at(0).toBool());
  QVERIFY2(calibrated.at(1).at(1).toString().contains("one subfolder per input"),
           qPrintable(calibrated.at(1).at(1).toString()));
}

QTEST_MAIN(TestCalibrationView)
#include "test_calibration_view.moc"
