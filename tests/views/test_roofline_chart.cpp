// The Roofline tab (issue 25 item 2), offscreen: an engine report with hand-counted
// layers (FLOPs, tensor bytes, times) on an H100, each point where the hand count puts
// it (intensity = FLOPs / bytes, GFLOP/s = FLOPs / time), the roofs at the H100 SXM's
// peaks, the layers that cannot be drawn counted, a click on a point selecting its layer
// and a layer selected elsewhere ringed, the Roofs box for a device the report does not
// name. KILN_SCREENSHOT_DIR (under Xvfb, QT_QPA_PLATFORM=xcb): screenshots() saves the
// main window on a trtexec export as roofline[-1366x768].png.
#include <QComboBox>
#include <QtTest>
#include <qcustomplot.h>

#include "main_window.h"
#include "window_screenshots.h"
#include "roofline_chart.h"
#include "studio_document.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

inspector::ReportTensor tensor(const std::string& name, std::vector<int64_t> dims,
                               const std::string& type) {
  return {name, std::move(dims), "Row major linear " + type, "Device"};
}

// Four layers with counts a reader can check by hand:
//   0 gemm   FP16, 2e9 FLOPs, in 1000x250 + out 1000x250 FP16 = 1e6 B, 1 ms
//            -> 2000 FLOP/B, 2000 GFLOP/s
//   1 relu   FP32, 1e6 FLOPs, in 1000x1000 + out 1000x1000 FP32 = 8e6 B, 0.01 ms
//            -> 0.125 FLOP/B, 100 GFLOP/s
//   2 copy   0 FLOPs (data movement): not drawn
//   3 conv   FP16, 5e8 FLOPs, untimed: not drawn
std::shared_ptr<inspector::EngineReport> handCountedReport(const std::string& device) {
  auto report = std::make_shared<inspector::EngineReport>();
  report->origin = "kiln plan";
  report->title = "hand";
  report->backend = "cuda";
  report->device = device;
  auto layer = [](std::string name, std::string precision, double flops, double ms,
                  inspector::ReportTensor in, inspector::ReportTensor out) {
    inspector::ReportLayer l;
    l.name = std::move(name);
    l.layerType = l.name;
    l.precision = std::move(precision);
    l.flops = flops;
    l.milliseconds = ms;
    l.inputs = {std::move(in)};
    l.outputs = {std::move(out)};
    return l;
  };
  report->layers = {
      layer("gemm", "FP16", 2e9, 1.0, tensor("a", {1000, 250}, "FP16"),
            tensor("b", {1000, 250}, "FP16")),
      layer("relu", "FP32", 1e6, 0.01, tensor("b", {1000, 1000}, "FP32"),
            tensor("c", {1000, 1000}, "FP32")),
      layer("copy", "FP32", 0, 0.002, tensor("c", {10}, "FP32"), tensor("d", {10}, "FP32")),
      layer("conv", "FP16", 5e8, -1, tensor("d", {1, 64, 8, 8}, "FP16"),
            tensor("e", {1, 64, 8, 8}, "FP16"))};
  report->totalMs = 1.012;
  return report;
}

bool near(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

}  // namespace

class TestRooflineChart : public QObject {
  Q_OBJECT

 private slots:
  void pointsAreWhereTheHandCountPutsThem();
  void roofsAreTheDevicesPeaks();
  void clickSelectsTheLayer();
  void unknownDeviceHasNoRoofsUntilOneIsChosen();
  void reachableFromTheViewMenu();
  void screenshots();
};

void TestRooflineChart::pointsAreWhereTheHandCountPutsThem() {
  StudioDocument document;
  RooflineChart chart(&document);
  document.setEngine("hand.kiln", nullptr, handCountedReport("NVIDIA H100 80GB HBM3"));
  QCOMPARE(chart.plottedLayers().size(), 2);
  double x = 0, y = 0;
  QVERIFY(chart.pointOf(0, &x, &y));
  QVERIFY2(near(x, 2000) && near(y, 2000), qPrintable(QString("%1 %2").arg(x).arg(y)));
  QVERIFY(chart.pointOf(1, &x, &y));
  QVERIFY2(near(x, 0.125) && near(y, 100), qPrintable(QString("%1 %2").arg(x).arg(y)));
  QVERIFY(!chart.pointOf(2, &x, &y));
  QVERIFY(!chart.pointOf(3, &x, &y));
  QVERIFY2(chart.summaryText().startsWith("2 of 4 layers drawn (1 untimed, 1 with no FLOPs"),
           qPrintable(chart.summaryText()));
  // On screen: the GEMM right of and above the ReLU, both inside the axes.
  chart.resize(900, 600);
  chart.show();
  chart.plot()->replot();
  const QPoint gemm = chart.pixelOf(0), relu = chart.pixelOf(1);
  QVERIFY2(gemm.x() > relu.x() && gemm.y() < relu.y(), qPrintable(QString("gemm %1,%2 relu %3,%4")
                                                                      .arg(gemm.x())
                                                                      .arg(gemm.y())
                                                                      .arg(relu.x())
                                                                      .arg(relu.y())));
  const QRect axes = chart.plot()->axisRect()->rect();
  QVERIFY(axes.contains(gemm) && axes.contains(relu));
}

void TestRooflineChart::roofsAreTheDevicesPeaks() {
  StudioDocument document;
  RooflineChart chart(&document);
  document.setEngine("hand.kiln", nullptr, handCountedReport("NVIDIA H100 80GB HBM3"));
  QVERIFY(chart.peaks());
  QCOMPARE(QString::fromStdString(chart.peaks()->name), QString("H100 SXM"));
  const std::vector<double> roofs = chart.roofPeaksGflops();
  QCOMPARE(roofs.size(), size_t(3));
  QVERIFY(near(roofs[0], 67000) && near(roofs[1], 989400) && near(roofs[2], 1979000));
  QVERIFY(chart.summaryText().contains("roofs: H100 SXM, 3350 GB/s DRAM"));
  // The FP16 roof's line: bandwidth slope to the ridge (989.4e12 / 3.35e12 FLOP/B), then flat.
  QCPGraph* fp16 = nullptr;
  for (int i = 0; i < chart.plot()->graphCount(); ++i)
    if (chart.plot()->graph(i)->name().startsWith("FP16/BF16 roof")) fp16 = chart.plot()->graph(i);
  QVERIFY(fp16);
  QCOMPARE(fp16->dataCount(), 3);
  QVERIFY(near(fp16->data()->at(1)->key, 989.4 / 3.35));
  QVERIFY(near(fp16->data()->at(1)->value, 989400));
  QVERIFY(near(fp16->data()->at(2)->value, 989400));
  QVERIFY(near(fp16->data()->at(0)->value, fp16->data()->at(0)->key * 3350));
}

void TestRooflineChart::clickSelectsTheLayer() {
  StudioDocument document;
  RooflineChart chart(&document);
  chart.resize(900, 600);
  chart.show();
  document.setEngine("hand.kiln", nullptr, handCountedReport("H100"));
  chart.plot()->replot();
  QTest::mouseClick(chart.plot(), Qt::LeftButton, {}, chart.pixelOf(1));
  QCOMPARE(document.selectedLayer(), 1);
  QTest::mouseClick(chart.plot(), Qt::LeftButton, {}, chart.pixelOf(0));
  QCOMPARE(document.selectedLayer(), 0);
  // Far from every point: the selection stays.
  QTest::mouseClick(chart.plot(), Qt::LeftButton, {}, chart.pixelOf(0) + QPoint(0, 80));
  QCOMPARE(document.selectedLayer(), 0);
}

void TestRooflineChart::unknownDeviceHasNoRoofsUntilOneIsChosen() {
  StudioDocument document;
  RooflineChart chart(&document);
  document.setEngine("hand.kiln", nullptr, handCountedReport(""));
  QVERIFY(!chart.peaks());
  QVERIFY(chart.roofPeaksGflops().empty());
  QVERIFY(chart.summaryText().contains("no roofs"));
  QCOMPARE(chart.plottedLayers().size(), 2);  // the points do not need peaks
  QVERIFY(chart.setPeaksDevice("H200"));
  QCOMPARE(QString::fromStdString(chart.peaks()->name), QString("H200"));
  QVERIFY(near(chart.roofPeaksGflops()[1], 989400));
  QVERIFY(chart.summaryText().contains("4800 GB/s"));
  QVERIFY(!chart.setPeaksDevice("no such GPU"));
}

void TestRooflineChart::reachableFromTheViewMenu() {
  MainWindow window;
  QVERIFY(dynamic_cast<RooflineChart*>(window.view("roofline")));
  window.showView("roofline");
  auto* tabs = window.findChild<QTabWidget*>(QString(), Qt::FindDirectChildrenOnly);
  QCOMPARE(tabs->tabText(tabs->currentIndex()), QString("Roofline"));
}

// Under Xvfb with KILN_SCREENSHOT_DIR: the QAT MobileNet trtexec export with its profile
// (it names no device: the H100 SXM's peaks are chosen in the Roofs box), its slowest
// layer selected, in the main window at 1920 x 1080 and 1366 x 768.
void TestRooflineChart::screenshots() {
  const QString out = qEnvironmentVariable("KILN_SCREENSHOT_DIR");
  if (out.isEmpty()) QSKIP("KILN_SCREENSHOT_DIR is not set");
  MainWindow window;
  window.openFile(qEnvironmentVariable("KILN_TEST_DATA_DIR") +
                  "/trtexec/mobilenet.qat.onnx.engine.graph.json");
  QVERIFY(window.jobs()->waitForIdle(60000));
  QVERIFY(window.document()->report());
  auto* chart = dynamic_cast<RooflineChart*>(window.view("roofline"));
  QVERIFY(chart->setPeaksDevice("H100 SXM"));
  QVERIFY(!chart->plottedLayers().isEmpty());
  int slowest = chart->plottedLayers().front();
  for (int layer : chart->plottedLayers())
    if (window.document()->report()->layers[layer].milliseconds >
        window.document()->report()->layers[slowest].milliseconds)
      slowest = layer;
  window.document()->selectLayer(slowest);
  window.showView("roofline");
  kiln::test::saveWindowAtScreenSizes(window, "roofline");
}

QTEST_MAIN(TestRooflineChart)
#include "test_roofline_chart.moc"
