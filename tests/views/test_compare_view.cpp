// The Compare view end to end on CPU builds, offscreen: build A (the document's
// engine), build B as a variant (no Conv+Relu fusion, every layer fp16, no BLAS),
// the aligned lanes and the diff table (sorted by delta), the accuracy of B against
// A with per-output plots and error colouring, a plan opened as B, and precision
// debugging on the fp16-overflow model: the result selects the node, applies as
// constraints and rebuilds into a B whose outputs pass.
#include <QFile>
#include <QHeaderView>
#include <QRegularExpression>
#include <QListWidget>
#include <QPainter>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolBar>
#include <QtTest>
#include <memory>

#include "compare/accuracy_compare.h"
#include "compare_diff_model.h"
#include "compare_lanes.h"
#include "compare_view.h"
#include "error_plots.h"
#include "job_runner.h"
#include "kiln/builder.h"
#include "kiln/onnx_import.h"
#include "precision_debug_panel.h"
#include "studio_document.h"
#include "variant_form.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

QString dataPath(const QString& name) {
  return QString::fromLocal8Bit(qgetenv("KILN_TEST_DATA_DIR")) + "/compare/" + name;
}

std::shared_ptr<const Network> load(const QString& name) {
  auto imported = importOnnxFile(dataPath(name).toStdString());
  return imported.isOk() ? std::make_shared<const Network>(std::move(imported.value())) : nullptr;
}

std::shared_ptr<const Plan> buildCpu(std::shared_ptr<const Network> network,
                                     const BuilderConfig& config) {
  auto backend = cpuBuildBackend();
  auto plan = buildPlan(std::move(network), config, *backend);
  return plan.isOk() ? std::make_shared<const Plan>(std::move(plan.value())) : nullptr;
}

// A document with `model` open and built (fp32) as engine A, and a Compare view.
struct Studio {
  StudioDocument document;
  JobRunner jobs;
  std::unique_ptr<CompareView> view;
  explicit Studio(const QString& model, bool buildA = true) {
    auto network = load(model);
    document.setModel(dataPath(model), network);
    if (buildA && network) {
      auto plan = buildCpu(network, BuilderConfig{});
      document.setEngine("a.kiln", plan,
                         std::make_shared<const inspector::EngineReport>(
                             inspector::reportFromPlan(*plan, "a.kiln")));
    }
    view = std::make_unique<CompareView>(&document, &jobs);
    view->resize(1200, 800);
  }
  bool buildVariantB() {
    VariantForm* form = view->variantForm();
    form->setLayerPrecisions("*:fp16");
    form->setConstraintMode(ConstraintMode::kObey);
    form->setTacticSources("-blas");
    form->setDisabledPasses("fuse_conv_bias_activation");
    QSignalSpy done(view.get(), &CompareView::variantFinished);
    emit form->buildRequested();
    jobs.waitForIdle(60000);
    return done.count() == 1 && done[0][0].toBool();
  }
  int rowOf(const std::string& node) const {
    const compare::BuildDiff* diff = view->diffModel()->diff();
    for (size_t r = 0; diff && r < diff->rows.size(); ++r)
      for (const std::string& n : diff->rows[r].onnxNodes)
        if (n == node) return static_cast<int>(r);
    return -1;
  }
};

}  // namespace

class TestCompareView : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY2(load("small_cnn.onnx"), "cannot import small_cnn.onnx");
    QVERIFY2(load("fp16_overflow.onnx"), "cannot import fp16_overflow.onnx");
  }

  void variantIsAlignedWithTheEngine() {
    Studio s("small_cnn.onnx");
    QVERIFY(s.view->statusText().contains("B:"));
    QVERIFY(s.buildVariantB());
    const compare::BuildDiff* diff = s.view->diffModel()->diff();
    QVERIFY(diff);
    QCOMPARE(s.view->diffModel()->rowCount(), static_cast<int>(diff->rows.size()));
    const int conv2 = s.rowOf("conv2");
    QVERIFY(conv2 >= 0);
    const compare::DiffRow& row = diff->rows[conv2];
    QCOMPARE(row.cells[0].layers.size(), size_t(1));  // Conv+Relu fused in A
    QCOMPARE(row.cells[1].layers.size(), size_t(2));  // apart in B
    QVERIFY(row.fusionChanged && row.precisionChanged && row.tacticChanged);
    const QString changes =
        s.view->diffModel()->index(conv2, CompareDiffModel::kChanges).data().toString();
    QCOMPARE(changes, QStringLiteral("precision, tactic, fusion"));
    QCOMPARE(s.view->diffModel()->index(conv2, CompareDiffModel::kPrecisionB).data().toString(),
             QStringLiteral("FP16"));

    // Sorted by delta, descending: the proxy's rows are in non-increasing delta order.
    s.view->table()->sortByColumn(CompareDiffModel::kTimeDelta, Qt::DescendingOrder);
    QSortFilterProxyModel* proxy = s.view->proxy();
    double previous = std::numeric_limits<double>::infinity();
    for (int r = 0; r < proxy->rowCount(); ++r) {
      const double delta = proxy->index(r, CompareDiffModel::kTimeDelta)
                               .data(CompareDiffModel::kSortRole)
                               .toDouble();
      QVERIFY(delta <= previous);
      previous = delta;
    }

    // Lanes: a click on conv2's band selects its ONNX nodes; time-delta colouring
    // paints B slower (every fp16 layer is slower on the CPU) in red.
    CompareLanes* lanes = s.view->lanes();
    lanes->resize(600, lanes->sizeHint().height());
    const QRect band = lanes->rowRect(conv2);
    QVERIFY(band.isValid());
    QTest::mouseClick(lanes, Qt::LeftButton, {}, band.center());
    QCOMPARE(lanes->selectedRow(), conv2);
    QVERIFY(s.document.selectedNodes().contains("conv2"));
    QVERIFY(s.document.selectedNodes().contains("conv2_relu"));
    const QModelIndexList selected = s.view->table()->selectionModel()->selectedRows();
    QCOMPARE(selected.size(), 1);
    QCOMPARE(proxy->mapToSource(selected.front()).row(), conv2);
    const QColor b = lanes->boxColour(conv2, 1, 0);
    QVERIFY2(b.red() > b.green(), qPrintable(b.name()));
    s.view->setColouring(CompareColouring::kPrecision);
    QVERIFY(lanes->boxColour(conv2, 0, 0) != lanes->boxColour(conv2, 1, 0));
  }

  // Issue 26 item 4: A's profiled total is not set beside B's build timing as if alike.
  void totalsOfDifferentKindsAreNotCompared() {
    Studio s("small_cnn.onnx");
    QVERIFY(s.buildVariantB());
    QVERIFY2(s.view->statusText().contains(QRegularExpression(
                 "total [0-9.]+ ms \\(build timing\\) → [0-9.]+ ms \\(build timing\\), B/A")),
             qPrintable(s.view->statusText()));
    auto profiled = std::make_shared<inspector::EngineReport>(*s.document.report());
    profiled->profileIterations = 20;
    profiled->totalMs = 5.11;
    s.document.setReport(profiled);
    const QString status = s.view->statusText();
    QVERIFY2(status.contains("A 5.1100 ms (profiled median), B "), qPrintable(status));
    QVERIFY(status.contains(" ms (build timing)"));
    QVERIFY(status.contains("not comparable"));
    QVERIFY(status.contains("profile B to compare"));
    QVERIFY(!status.contains("→"));
    QVERIFY(!status.contains("B/A"));
    const QString dir = qEnvironmentVariable("KILN_SCREENSHOT_DIR");
    if (!dir.isEmpty()) {
      s.view->resize(1300, 560);
      s.view->show();
      QVERIFY(QTest::qWaitForWindowExposed(s.view.get()));
      QTest::qWait(300);
      // The status line sits in the view's toolbar, which the main window places: draw
      // the toolbar above the view.
      QToolBar* bar = s.view->toolBar();
      bar->resize(std::max(s.view->width(), bar->sizeHint().width()), bar->sizeHint().height());
      const QPixmap top = bar->grab();
      bar->hide();  // a child of the view until placed: keep it out of the view's picture
      const QPixmap body = s.view->grab();
      QPixmap picture(std::max(top.width(), body.width()), top.height() + body.height());
      picture.fill(Qt::white);
      QPainter painter(&picture);
      painter.drawPixmap(0, 0, top);
      painter.drawPixmap(0, top.height(), body);
      painter.end();
      QVERIFY(picture.save(dir + "/compare-totals.png"));
    }
  }

  // An error within the tolerance paints in the "ok" colour, not red; the scale is said.
  // Issue 26 item 11: at 1366 x 768 the diff table was one row tall (and the view, with
  // the precision debugging panel's minimum, taller than the screen).
  void diffTableKeepsRoomForRows() {
    Studio s("small_cnn.onnx");
    s.view->resize(1300, 560);
    s.view->show();
    QVERIFY(QTest::qWaitForWindowExposed(s.view.get()));
    QTableView* table = s.view->table();
    // The whole view fits the room a 1366 x 768 screen leaves (menus, toolbars, status).
    QVERIFY2(s.view->minimumSizeHint().height() <= 600,
             qPrintable(QString::number(s.view->minimumSizeHint().height())));
    const int rows = table->viewport()->height() / table->verticalHeader()->defaultSectionSize();
    QVERIFY2(rows >= 5, qPrintable(QString("%1 rows fit").arg(rows)));
  }

  void heatmapColoursFollowTheTolerance() {
    auto report = std::make_shared<compare::AccuracyReport>();
    report->tolerance = {1e-5, 1e-3};
    compare::ErrorStats stats;
    stats.name = "y";
    stats.maxAbs = 0.5;
    stats.outsideTolerance = 1;
    stats.pass = false;
    stats.heatmap.rows = 1;
    stats.heatmap.columns = 3;
    stats.heatmap.cells = {4e-5, 0.0, 0.5};
    report->outputs.push_back(stats);
    ErrorPlots plots;
    plots.setReport(report);
    const QImage image = plots.heatmapImage();
    QCOMPARE(image.size(), QSize(3, 1));
    const QColor ok = image.pixelColor(0, 0), zero = image.pixelColor(1, 0),
                 bad = image.pixelColor(2, 0);
    QVERIFY2(ok.green() > ok.red() && ok.green() > ok.blue(), qPrintable(ok.name()));
    QCOMPARE(zero, QColor(Qt::white));
    QVERIFY2(bad.red() > 2 * bad.green() && bad.red() > 2 * bad.blue(), qPrintable(bad.name()));
    QVERIFY2(plots.heatmapScale().contains("green up to 0.00101"),
             qPrintable(plots.heatmapScale()));
    QVERIFY(plots.heatmapScale().contains("red from 1.01"));
    // Nothing outside the tolerance: every cell is "ok", the largest error included.
    report->outputs[0].outsideTolerance = 0;
    plots.setReport(report);
    const QColor worst = plots.heatmapImage().pixelColor(2, 0);
    QVERIFY2(worst.green() > worst.red(), qPrintable(worst.name()));
    const QString dir = qEnvironmentVariable("KILN_SCREENSHOT_DIR");
    if (!dir.isEmpty()) {
      report->outputs[0].outsideTolerance = 1;
      plots.setReport(report);
      plots.resize(640, 320);
      plots.show();
      QVERIFY(QTest::qWaitForWindowExposed(&plots));
      QVERIFY(plots.grab().save(dir + "/compare-heatmap.png"));
    }
  }

  void accuracyGivesPlotsAndErrorColours() {
    Studio s("small_cnn.onnx");
    QVERIFY(s.buildVariantB());
    QSignalSpy done(s.view.get(), &CompareView::accuracyFinished);
    s.view->compareAccuracy();
    s.jobs.waitForIdle(60000);
    QCOMPARE(done.count(), 1);
    QVERIFY2(done[0][0].toBool(), qPrintable(s.view->statusText()));
    auto report = s.view->accuracy();
    QVERIFY(report);
    QCOMPARE(report->outputs.size(), size_t(1));
    const compare::ErrorStats& logits = report->outputs[0];
    QVERIFY(logits.maxAbs > 0);  // fp16 rounding
    QVERIFY(logits.maxAbs < 0.05);
    QVERIFY(!report->intermediates.empty());

    ErrorPlots* plots = s.view->errorPlots();
    QCOMPARE(plots->currentOutput(), 0);
    int64_t counted = 0;
    for (int64_t bar : plots->histogramBars()) counted += bar;
    QCOMPARE(counted, logits.finitePairs);
    QCOMPARE(plots->heatmapImage().size(), QSize(10, 1));  // logits 1x10
    QVERIFY(plots->summary().contains("logits"));

    const int classifier = s.rowOf("classifier");
    QVERIFY(classifier >= 0);
    QCOMPARE(s.view->diffModel()->rowError(classifier), logits.maxAbs);
    s.view->setColouring(CompareColouring::kError);
    const QColor worst = s.view->lanes()->boxColour(classifier, 1, 0);
    QVERIFY2(worst.red() > worst.blue(), qPrintable(worst.name()));
  }

  void planFileOpensAsB() {
    Studio s("small_cnn.onnx");
    QTemporaryDir dir;
    BuilderConfig config;
    config.optimizationLevel = 0;
    auto plan = buildCpu(s.document.network(), config);
    const QString path = dir.filePath("level0.kiln");
    QVERIFY(savePlan(*plan, path.toStdString()).isOk());
    QSignalSpy changed(s.view.get(), &CompareView::comparisonChanged);
    QVERIFY(s.view->openB(path).isOk());
    QCOMPARE(changed.count(), 1);
    QVERIFY(s.view->planB());
    QVERIFY(s.view->statusText().contains("aligned rows"));
    const Status bad = s.view->openB(dir.filePath("missing.kiln"));
    QVERIFY(!bad.isOk());
    QVERIFY(QString::fromStdString(bad.message()).contains("missing.kiln"));
  }

  void precisionDebuggingSelectsAppliesAndRebuilds() {
    Studio s("fp16_overflow.onnx");
    PrecisionDebugPanel* panel = s.view->debugPanel();
    QSignalSpy finished(panel, &PrecisionDebugPanel::finished);
    panel->start();
    s.jobs.waitForIdle(60000);
    QCOMPARE(finished.count(), 1);
    QVERIFY2(finished[0][0].toBool(), qPrintable(panel->status()));
    QCOMPARE(panel->resultList()->count(), 1);
    QVERIFY(panel->resultList()->item(0)->text().startsWith("wide_proj"));
    QVERIFY(panel->stepList()->count() >= 3);
    QVERIFY(panel->stepList()->item(0)->text().contains("FAIL"));

    panel->resultList()->setCurrentRow(0);
    QCOMPARE(s.document.selectedNodes(), QStringList{"wide_proj"});

    QTemporaryDir dir;
    const QString file = dir.filePath("constraints.json");
    QVERIFY(panel->saveConstraints(file).isOk());
    QVERIFY(QFile::exists(file));

    QSignalSpy rebuilt(s.view.get(), &CompareView::variantFinished);
    QVERIFY(panel->applyAndRebuild());
    s.jobs.waitForIdle(60000);
    QCOMPARE(rebuilt.count(), 1);
    QVERIFY(rebuilt[0][0].toBool());
    const BuilderConfig& config = s.document.buildConfig();
    QCOMPARE(config.precisionConstraints, ConstraintMode::kObey);
    QCOMPARE(layerPrecisionSpecToString(config.layerPrecisions),
             std::string("*:fp16,wide_proj:fp32"));
    auto plan = s.view->planB();
    QVERIFY(plan);
    int fp16 = 0;
    for (const LayerRecord& l : plan->record.layers) {
      if (l.name == "wide_proj") QCOMPARE(l.precision, DataType::kFloat32);
      fp16 += l.precision == DataType::kFloat16;
    }
    QCOMPARE(fp16, 7);  // 8 layers (MatMul + activation fused, rescale + Tanh one chain)
    // The rebuilt B meets the tolerance against the fp32 reference.
    auto b = compare::cpuPlanRunner(plan, "b");
    auto reference = compare::referenceRunner(s.document.network(), "ref");
    QVERIFY(b.isOk());
    auto inputs = compare::randomInputSet(*s.document.network(), {}, 3);
    QVERIFY(inputs.isOk());
    compare::CompareOptions options;
    options.tolerance = {1e-2, 1e-2};
    auto report = compare::compareAccuracy(**b, *reference, {inputs.value()}, options);
    QVERIFY(report.isOk());
    QVERIFY(report->pass);

    // Loading the file back into a fresh document gives the same rules.
    Studio other("fp16_overflow.onnx", false);
    QVERIFY(other.view->debugPanel()->loadConstraints(file).isOk());
    QCOMPARE(layerPrecisionSpecToString(other.document.buildConfig().layerPrecisions),
             std::string("*:fp16,wide_proj:fp32"));
    QVERIFY(!other.view->debugPanel()->loadConstraints(dir.filePath("none.json")).isOk());
  }
};

QTEST_MAIN(TestCompareView)
#include "test_compare_view.moc"
