// The studio when work fails by throwing (issue 27): a worker's exception becomes a
// failed job with its message in the Issues dock, never a crash or a silent success;
// a build that throws leaves no null plan behind; a plan's recorded source model is
// opened only when the user says so; FIFOs are refused; huge strings are elided.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <sys/stat.h>

#include "build_panel.h"
#include "job_runner.h"
#include "kiln/build_backend.h"
#include "kiln/builder.h"
#include "kiln/onnx_export.h"
#include "kiln/plan.h"
#include "main_window.h"
#include "node_properties.h"
#include "studio_document.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

constexpr int kJobTimeoutMs = 60000;

// x -> Relu -> Softsign -> y, float32 with the given static shape.
std::shared_ptr<Network> twoNodes(const std::vector<int64_t>& dims) {
  auto network = std::make_shared<Network>();
  network->irVersion = 8;
  network->opsets[""] = 17;
  Graph& g = network->graph;
  SymbolicShape shape;
  for (int64_t d : dims) shape.push_back(DimExpr(d));
  g.inputs.push_back(ValueInfo{"x", DataType::kFloat32, true, shape});
  const char* ops[] = {"Relu", "Softsign"};
  for (int i = 0; i < 2; ++i) {
    Node node;
    node.opType = ops[i];
    node.opset = 17;
    node.index = i;
    node.name = node.opType + "_" + std::to_string(i);
    node.inputs = {i == 0 ? "x" : "t0"};
    node.outputs = {i == 0 ? "t0" : "y"};
    g.nodes.push_back(node);
  }
  g.outputs.push_back(ValueInfo{"y", DataType::kFloat32, true, shape});
  return network;
}

int errorsContaining(const StudioDocument& document, const QString& text) {
  int count = 0;
  for (const Issue& issue : document.issues())
    count += issue.severity == IssueSeverity::kError && issue.message.contains(text);
  return count;
}

}  // namespace

class TestJobFailures : public QObject {
  Q_OBJECT

 private slots:
  void thrownExceptionsBecomeFailedJobs() {
    JobRunner jobs;
    QSignalSpy failed(&jobs, &JobRunner::jobFailed);
    QStringList seen;
    auto record = [&seen](const JobContext& context) {
      seen << (context.failed() ? context.failure() : QStringLiteral("ok"));
    };
    jobs.start(
        "alloc", [](JobContext&) { throw std::bad_alloc(); }, record);
    jobs.start(
        "json", [](JobContext&) { (void)nlohmann::json("1").get<int>(); }, record);
    jobs.start(
        "text", [](JobContext&) { throw std::runtime_error("bad\nname\x1b[2J"); }, record);
    jobs.start(
        "fine", [](JobContext&) {}, record);
    QVERIFY(jobs.waitForIdle(kJobTimeoutMs));
    QCOMPARE(seen.size(), 4);
    seen.sort();
    QVERIFY2(seen.contains("ok"), qPrintable(seen.join(" | ")));
    QVERIFY2(seen.filter("out of memory (std::bad_alloc").size() == 1,
             qPrintable(seen.join(" | ")));
    QVERIFY2(seen.filter("failed: [json.exception.type_error.302]").size() == 1,
             qPrintable(seen.join(" | ")));
    QVERIFY2(seen.contains("failed: bad\\nname\\x1b[2J"), qPrintable(seen.join(" | ")));
    QCOMPARE(failed.count(), 3);
  }

  void mainWindowShowsAFailedJobOnce() {
    MainWindow window;
    window.jobs()->start(
        "Boom", [](JobContext&) { throw std::length_error("vector::_M_default_append"); }, nullptr);
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    QCOMPARE(errorsContaining(*window.document(),
                              "Boom: out of memory (std::length_error: vector::_M_default_append)"),
             1);
  }

  void buildThatThrowsFailsWithoutAPlan() {
    // 2^46 float elements: the builder's timing inputs cannot be allocated. Whether
    // that throws (bad_alloc) or is refused as a Status, the build must fail cleanly.
    StudioDocument document;
    JobRunner jobs;
    document.setModel("huge.onnx", twoNodes({int64_t{1} << 23, int64_t{1} << 23}));
    BuildPanel panel(&document, &jobs);
    QVERIFY(jobs.waitForIdle(kJobTimeoutMs));  // the CUDA probe
    QSignalSpy finished(&panel, &BuildPanel::buildFinished);
    panel.startBuild();
    QVERIFY(jobs.waitForIdle(kJobTimeoutMs));
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished[0][0].toBool(), false);
    const QString message = finished[0][1].toString();
    QVERIFY2(message.startsWith("huge.onnx: ") && message.size() > 12, qPrintable(message));
    QVERIFY(!document.plan());
    QVERIFY(errorsContaining(document, message) >= 1);
    QVERIFY(panel.isEnabled());
  }

  void planSourceModelIsOpenedOnlyWhenTheUserSaysSo() {
    QTemporaryDir dir;
    const QString fifo = dir.filePath("source.onnx");
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    auto network = twoNodes({1, 8});
    network->sourcePath = fifo.toStdString();  // recorded as the plan's source model
    auto backend = cpuBuildBackend();
    Result<Plan> plan = buildPlan(network, BuilderConfig{}, *backend);
    QVERIFY2(plan.isOk(), plan.status().message().c_str());
    QCOMPARE(QString::fromStdString(plan->record.modelName), fifo);
    const QString planPath = dir.filePath("p.kiln");
    QVERIFY(savePlan(plan.value(), planPath.toStdString()).isOk());

    MainWindow window;
    QStringList asked;
    window.setSourceModelPrompt([&asked](const QString& planFile, const QString& model) {
      asked << planFile + " -> " + model;
      return false;
    });
    window.openFile(planPath);
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    QTRY_COMPARE_WITH_TIMEOUT(asked.size(), 1, 5000);
    QCOMPARE(asked.front(), planPath + " -> " + fifo);
    QCOMPARE(window.document()->modelPath(), planPath);  // the network as built
    QVERIFY(window.document()->plan());
    bool noted = false;
    for (const Issue& issue : window.document()->issues())
      noted = noted || (issue.severity == IssueSeverity::kInfo && issue.message.contains(fifo) &&
                        issue.message.contains("not opened"));
    QVERIFY(noted);

    // Said yes: the model at the path is opened (here a FIFO, refused without blocking).
    window.setSourceModelPrompt([](const QString&, const QString&) { return true; });
    window.openFile(planPath);
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    QTest::qWait(50);
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    bool refused = false;
    for (const Issue& issue : window.document()->issues())
      refused = refused || issue.message.contains("is a FIFO, not a regular file");
    QVERIFY(refused);
    QCOMPARE(window.document()->modelPath(), planPath);
  }

  void openingAFifoIsRefusedWithItsReason() {
    QTemporaryDir dir;
    const QString fifo = dir.filePath("model.onnx");
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    MainWindow window;
    window.openFile(fifo);  // used to block the GUI thread in detectFileKind
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    QCOMPARE(errorsContaining(*window.document(), fifo + ": is a FIFO, not a regular file"), 1);
  }

  void hugeStringsAreElided() {
    const std::string huge(64 << 20, 'a');
    const QString shown = shownText(huge);
    QVERIFY2(shown.size() < 1100, qPrintable(QString::number(shown.size())));
    QVERIFY(shown.endsWith(" bytes)"));
    Attribute attribute;
    attribute.kind = Attribute::Kind::kString;
    attribute.s = "line\n\x1b[2J" + huge;
    const QString text = attributeText("mode", attribute);
    QVERIFY(text.size() < 1100);
    QVERIFY2(text.startsWith("\"line\\n\\x1b[2J"), qPrintable(text.left(40)));
    // A multi-byte character is never cut in half.
    const std::string accents = std::string(1023, 'a') + "\xC3\xA9\xC3\xA9";
    QVERIFY(shownText(accents).startsWith(QString(1023, 'a') + "…"));
  }
};

QTEST_MAIN(TestJobFailures)
#include "test_job_failures.moc"
