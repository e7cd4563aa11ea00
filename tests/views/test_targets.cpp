// Remote targets (issue 29 item 1, the studio half), offscreen: addresses accepted and
// refused (a password never), the targets file written and read back, the exact
// `kiln --remote` command line, the saved choice, and the Build panel's build on a
// target: the CLI runs as a process (a stand-in kiln that records its arguments and
// writes a real plan built by the real kiln), its progress lines reach the job's
// progress, the plan opens as a local build's; a dropped connection is one line naming
// the host; Cancel interrupts it (SIGINT). The Target toolbar and Tools menu.
#include <QComboBox>
#include <QFile>
#include <QLineEdit>
#include <QMenuBar>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QVBoxLayout>
#include <QtTest>

#include "build_panel.h"
#include "build_panel_fixture.h"
#include "calibration_session.h"
#include "compare/accuracy_compare.h"
#include "compare_view.h"
#include "error_plots.h"
#include "kiln/plan.h"
#include "variant_form.h"
#include "kiln/calibration.h"
#include "file_loader.h"
#include "job_runner.h"
#include "main_window.h"
#include "remote_run.h"
#include "remote_targets.h"
#include "targets_dialog.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

QString modelPath() {
  return qEnvironmentVariable("KILN_TEST_DATA_DIR") + "/add.onnx";
}

QByteArray readAll(const QString& path) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

void writeExecutable(const QString& path, const QByteArray& text) {
  QFile file(path);
  QVERIFY(file.open(QIODevice::WriteOnly));
  file.write(text);
  file.close();
  file.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
}

// A stand-in for `kiln` on the PATH of the studio: records its arguments and
// KILN_REMOTE_KILN in DIR, then runs `body` (sh).
void writeStandIn(const QString& dir, const QByteArray& body) {
  writeExecutable(
      dir + "/kiln",
      "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + dir.toUtf8() +
          "/argv'\n"
          "echo \"$KILN_REMOTE_KILN\" > '" +
          dir.toUtf8() +
          "/remote_kiln'\n"
          "out=; prev=; for a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n" +
          body);
  qputenv("KILN_PROGRAM", (dir + "/kiln").toUtf8());
}

struct RemoteStudio : test::BuildPanelStudio {
  QTemporaryDir dir;
  TargetList targets{dir.path() + "/targets"};
  RemoteStudio()
      : BuildPanelStudio(modelPath(), loadModel(modelPath().toStdString()).value().network) {
    QString error;
    const bool saved = targets.setTargets({{"gpu@jetson:2222", "/opt/kiln/bin/kiln"}}, &error);
    if (!saved) qFatal("%s", qPrintable(error));
    targets.setCurrent("gpu@jetson:2222");
    panel->setTargets(&targets);
    panel->acceptProposedShapes();  // add.onnx's batch: the proposed 1..N, no Shapes dialog
    panel->findChild<QLineEdit*>("planPath")->setText(dir.path() + "/add.kiln");
  }
  std::pair<bool, QString> build() {
    QSignalSpy finished(panel.get(), &BuildPanel::buildFinished);
    panel->startBuild();
    jobs.waitForIdle(60000);
    if (finished.count() != 1) return {false, QStringLiteral("buildFinished was not emitted once")};
    return {finished[0][0].toBool(), finished[0][1].toString()};
  }
};

// The Compare view over the small CNN: A (fp32) the document's engine, B (all fp16) a plan
// file, both built here by the real kiln; the target is gpu@jetson:2222 (a stand-in
// kiln answers for it) or, with `address`, a real one.
struct RemoteCompare {
  QTemporaryDir dir;
  StudioDocument document;
  JobRunner jobs;
  TargetList targets{dir.path() + "/targets"};
  std::unique_ptr<CompareView> view;
  QString model = qEnvironmentVariable("KILN_TEST_DATA_DIR") + "/compare/small_cnn.onnx";
  explicit RemoteCompare(const RemoteTarget& target = {"gpu@jetson:2222", ""}) {
    const QString a = dir.path() + "/a.kiln", b = dir.path() + "/b.kiln";
    for (const auto& [plan, extra] : {std::pair{a, QString()}, {b, QString("--fp16")}}) {
      QStringList args = {"build", model, "-o", plan, "--backend", "cpu", "--quiet"};
      if (!extra.isEmpty())  // every layer fp16: B differs from A
        args << extra << "--layer-precisions"
             << "*:fp16"
             << "--precision-constraints"
             << "obey";
      if (QProcess::execute(KILN_CLI_PATH, args) != 0) qFatal("kiln build failed");
    }
    document.setModel(model, loadModel(model.toStdString()).value().network);
    auto plan = std::make_shared<const Plan>(loadPlanFile(a.toStdString()).value());
    document.setEngine(a, plan,
                       std::make_shared<const inspector::EngineReport>(
                           inspector::reportFromPlan(*plan, "a.kiln")));
    QString error;
    if (!targets.setTargets({target}, &error)) qFatal("%s", qPrintable(error));
    targets.setCurrent(target.address);
    view = std::make_unique<CompareView>(&document, &jobs);
    view->setTargets(&targets);
    if (!view->openB(b).isOk()) qFatal("cannot open B");
  }
  // Runs Compare accuracy; whether it succeeded.
  bool compare() {
    QSignalSpy done(view.get(), &CompareView::accuracyFinished);
    view->compareAccuracy();
    jobs.waitForIdle(60000);
    return done.count() == 1 && done[0][0].toBool();
  }
};

}  // namespace

class TestTargets : public QObject {
  Q_OBJECT

 private slots:
  void addresses_data();
  void addresses();
  void fileRoundTrip();
  void exactCommandLine();
  void choiceIsSaved();
  void remoteBuildOpensThePlan();
  void droppedConnectionIsOneLineNamingTheHost();
  void cancelInterruptsTheRemoteKiln();
  void toolbarAndMenu();
  void remoteCalibrationFillsTheRanges();
  void remoteCompareShowsTheTargetsReport();
  void remoteCompareFailuresAndCancel();
  void buildThroughARealSshd();
  void compareThroughARealSshd();
  void screenshots();
};

void TestTargets::addresses_data() {
  QTest::addColumn<QString>("address");
  QTest::addColumn<bool>("valid");
  QTest::newRow("host") << "gpu-box" << true;
  QTest::newRow("user@host:port") << "gpu@jetson.lan:2222" << true;
  QTest::newRow("ipv6") << "root@[::1]:22" << true;
  QTest::newRow("password") << "gpu:hunter2@jetson" << false;
  QTest::newRow("option") << "-oProxyCommand=touch" << false;
  QTest::newRow("port 0") << "jetson:0" << false;
  QTest::newRow("port too big") << "jetson:70000" << false;
  QTest::newRow("space") << "jet son" << false;
  QTest::newRow("shell") << "jetson;rm" << false;
}

void TestTargets::addresses() {
  QFETCH(QString, address);
  QFETCH(bool, valid);
  QString why;
  QCOMPARE(checkTargetAddress(address, &why), valid);
  QCOMPARE(why.isEmpty(), valid);
  if (address.contains("hunter2")) QVERIFY(why.contains("password"));
}

void TestTargets::fileRoundTrip() {
  QTemporaryDir dir;
  const QString path = dir.path() + "/kiln/targets";
  const std::vector<RemoteTarget> targets = {{"gpu@jetson:2222", "/opt/kiln/bin/kiln"},
                                             {"build-server", ""}};
  QString error;
  QVERIFY2(writeTargets(path, targets, &error), qPrintable(error));
  const QByteArray text = readAll(path);
  QVERIFY(text.endsWith("\ngpu@jetson:2222  /opt/kiln/bin/kiln\nbuild-server\n"));
  QVERIFY(text.startsWith("# Kiln remote targets"));
  const TargetsFile back = readTargets(path);
  QVERIFY(back.targets == targets);
  QVERIFY(back.problems.isEmpty());
  // Hand edits: blank lines and comments skipped, a bad line named, the rest kept.
  QFile file(path);
  QVERIFY(file.open(QIODevice::Append));
  file.write("\n  # another\nuser:secret@host\nlab:2200   /home/me/kiln/build/app/kiln\n");
  file.close();
  const TargetsFile edited = readTargets(path);
  QCOMPARE(edited.targets.size(), size_t(3));
  QCOMPARE(edited.targets[2].address, QString("lab:2200"));
  QCOMPARE(edited.targets[2].kilnPath, QString("/home/me/kiln/build/app/kiln"));
  QCOMPARE(edited.problems.size(), 1);
  QVERIFY2(edited.problems[0].startsWith("targets:8: "), qPrintable(edited.problems[0]));
  QVERIFY(!writeTargets(path, {{"a:pw@b", ""}}, &error));
  QVERIFY(!readAll(path).contains("pw@"));  // refused whole: the file is unchanged
  QVERIFY(readTargets(dir.path() + "/missing").targets.empty());
}

void TestTargets::exactCommandLine() {
  qputenv("KILN_PROGRAM", "/usr/bin/kiln");
  const RemoteTarget target{"gpu@jetson:2222", "/opt/kiln/bin/kiln"};
  const QStringList args = {"build", "/m/my model.onnx", "-o", "/m/a.kiln", "--fp16"};
  QCOMPARE(remoteArguments(target, args),
           QStringList({"--remote", "gpu@jetson:2222", "build", "/m/my model.onnx", "-o",
                        "/m/a.kiln", "--fp16"}));
  QCOMPARE(remoteCommandLine(target, args),
           QString("KILN_REMOTE_KILN=/opt/kiln/bin/kiln /usr/bin/kiln --remote gpu@jetson:2222 "
                   "build '/m/my model.onnx' -o /m/a.kiln --fp16"));
  QCOMPARE(remoteCommandLine({"lab", ""}, {"run", "a.kiln"}),
           QString("/usr/bin/kiln --remote lab run a.kiln"));
  QCOMPARE(remoteEnvironment(target, QProcessEnvironment()).value("KILN_REMOTE_KILN"),
           QString("/opt/kiln/bin/kiln"));
  QVERIFY(!remoteEnvironment({"lab", ""}, QProcessEnvironment()).contains("KILN_REMOTE_KILN"));
  QCOMPARE(targetHost("gpu@jetson:2222"), QString("jetson"));
  QCOMPARE(targetHost("root@[::1]:22"), QString("::1"));
  // The shown line's words, unquoted as a shell would (QProcess::splitCommand keeps '...').
  QCOMPARE(kilnArgumentsOf("kiln build '/m/my model.onnx' --layer-precisions '*:fp16'"),
           QStringList({"build", "/m/my model.onnx", "--layer-precisions", "*:fp16"}));
  QCOMPARE(remoteProgressFraction("[3/10] 0.4 s timing conv1"), 0.05 + 0.9 * 0.3);
  QVERIFY(remoteProgressFraction("kiln build: warning") < 0);
}

void TestTargets::choiceIsSaved() {
  QTemporaryDir dir;
  QString error;
  {
    TargetList list(dir.path() + "/targets");
    QVERIFY(!list.current());
    QVERIFY(list.setTargets({{"a", ""}, {"b@c:22", ""}}, &error));
    QSignalSpy changed(&list, &TargetList::changed);
    list.setCurrent("b@c:22");
    QCOMPARE(changed.count(), 1);
  }
  TargetList again(dir.path() + "/targets");
  QVERIFY(again.current());
  QCOMPARE(again.current()->address, QString("b@c:22"));
  again.setCurrent(QString());  // Local
  QVERIFY(!TargetList(dir.path() + "/targets").current());
}

void TestTargets::remoteBuildOpensThePlan() {
  RemoteStudio studio;
  // A real plan, built here by the real kiln, is what the stand-in "fetches back".
  const QString built = studio.dir.path() + "/built.kiln";
  QCOMPARE(QProcess::execute(KILN_CLI_PATH,
                             {"build", modelPath(), "-o", built, "--quiet", "--min-shapes", "x:2x3",
                              "--opt-shapes", "x:2x3", "--max-shapes", "x:2x3"}),
           0);
  writeStandIn(studio.dir.path(),
               "echo '[1/2] 0.1 s timing add'\nsleep 0.2\necho '[2/2] 0.2 s timing add'\n"
               "cp '" +
                   built.toUtf8() + "' \"$out\"\n");
  QStringList progress;
  QObject::connect(&studio.jobs, &JobRunner::jobProgress, &studio.jobs,
                   [&progress](int, double, const QString& text) { progress << text; });
  const auto [ok, message] = studio.build();
  QVERIFY2(ok, qPrintable(message));
  QVERIFY2(message.contains("on cpu on gpu@jetson:2222"), qPrintable(message));
  QCOMPARE(studio.document.enginePath(), studio.dir.path() + "/add.kiln");
  QVERIFY(studio.document.plan());
  QVERIFY(studio.document.report() && !studio.document.report()->layers.empty());
  QVERIFY2(progress.contains("jetson: [1/2] 0.1 s timing add"), qPrintable(progress.join('|')));
  QVERIFY(progress.contains("jetson: [2/2] 0.2 s timing add"));
  // Exactly the panel's `kiln build` line, behind --remote, with per-layer progress.
  QStringList expected = QProcess::splitCommand(studio.panel->commandLine()).mid(1);
  expected = QStringList{"--remote", "gpu@jetson:2222"} + expected + QStringList{"--progress"};
  QCOMPARE(QString::fromUtf8(readAll(studio.dir.path() + "/argv")).split('\n', Qt::SkipEmptyParts),
           expected);
  QVERIFY(expected.contains("build") && expected.contains(modelPath()));
  QCOMPARE(readAll(studio.dir.path() + "/remote_kiln"), QByteArray("/opt/kiln/bin/kiln\n"));
}

void TestTargets::droppedConnectionIsOneLineNamingTheHost() {
  RemoteStudio studio;
  writeStandIn(studio.dir.path(),
               "echo '[1/4] 0.1 s timing add'\n"
               "echo 'kiln: remote gpu@jetson:2222: connection lost (ssh exit 255)' >&2\nexit 1\n");
  const auto [ok, message] = studio.build();
  QVERIFY(!ok);
  QCOMPARE(message, QString("add.onnx: remote gpu@jetson:2222: connection lost (ssh exit 255)"));
  QVERIFY(!message.contains('\n'));
  QVERIFY(!QFile::exists(studio.dir.path() + "/add.kiln"));  // nothing local changed
  QVERIFY(!studio.document.plan());
  // A kiln that cannot be started at all: one line, naming the host too.
  qputenv("KILN_PROGRAM", (studio.dir.path() + "/no-such-kiln").toUtf8());
  const auto [ok2, message2] = studio.build();
  QVERIFY(!ok2);
  QVERIFY2(message2.contains("remote jetson:") && !message2.contains('\n'), qPrintable(message2));
}

void TestTargets::cancelInterruptsTheRemoteKiln() {
  RemoteStudio studio;
  const QByteArray marker = studio.dir.path().toUtf8() + "/interrupted";
  writeStandIn(studio.dir.path(), "trap 'echo yes > \"" + marker +
                                      "\"; exit 130' INT\n"
                                      "echo '[1/5] 0.1 s timing add'\n"
                                      "while :; do sleep 0.05; done\n");
  QSignalSpy finished(studio.panel.get(), &BuildPanel::buildFinished);
  QSignalSpy progress(&studio.jobs, &JobRunner::jobProgress);
  studio.panel->startBuild();
  QTRY_VERIFY_WITH_TIMEOUT(!progress.isEmpty(), 10000);
  QVERIFY(studio.panel->isBuilding());
  studio.panel->cancelBuild();
  QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 15000);
  QCOMPARE(finished[0][1].toString(), QString("build cancelled"));
  QCOMPARE(readAll(QString::fromUtf8(marker)), QByteArray("yes\n"));
}

void TestTargets::toolbarAndMenu() {
  QTemporaryDir dir;
  qputenv("KILN_TARGETS_FILE", (dir.path() + "/targets").toUtf8());
  QString error;
  QVERIFY(writeTargets(dir.path() + "/targets", {{"gpu@jetson:2222", ""}}, &error));
  QSettings("Kiln", "kiln-studio").remove("remoteTarget");  // what earlier tests chose
  MainWindow window;
  auto* box = window.findChild<QComboBox*>("targetBox");
  QVERIFY(box);
  QCOMPARE(box->count(), 2);
  QCOMPARE(box->itemText(0), QString("Local"));
  QCOMPARE(box->currentIndex(), 0);  // Local is the default
  QVERIFY(!window.targets()->current());
  box->setCurrentIndex(1);
  emit box->activated(1);
  QCOMPARE(window.targets()->current()->address, QString("gpu@jetson:2222"));
  window.targets()->setCurrent(QString());
  QStringList tools;
  for (QAction* menu : window.menuBar()->actions())
    if (menu->text() == "&Tools")
      for (QAction* action : menu->menu()->actions()) tools << action->text();
  QVERIFY(tools.contains("&Remote Targets…"));
  qunsetenv("KILN_TARGETS_FILE");
}

// Calibrate on a target: `kiln calibrate` with the session's data folder, method and
// preprocessing runs through kiln --remote; the cache that comes back (a real one, made
// here by the real kiln) fills the range table.
void TestTargets::remoteCalibrationFillsTheRanges() {
  QTemporaryDir dir;
  const QString model = qEnvironmentVariable("KILN_TEST_DATA_DIR") + "/quant/small_cnn.onnx";
  const QString data = qEnvironmentVariable("KILN_TEST_DATA_DIR") + "/quant/calib";
  const QString built = dir.path() + "/made.cache";
  QCOMPARE(QProcess::execute(KILN_CLI_PATH, {"calibrate", model, "--data", data, "-o", built,
                                             "--backend", "cpu", "--quiet"}),
           0);
  writeStandIn(dir.path(), "echo '[1/2] calibrating'\ncp '" + built.toUtf8() + "' \"$out\"\n");
  StudioDocument document;
  JobRunner jobs;
  document.setModel(model, loadModel(model.toStdString()).value().network);
  TargetList targets(dir.path() + "/targets");
  QString error;
  QVERIFY(targets.setTargets({{"gpu@jetson:2222", ""}}, &error));
  targets.setCurrent("gpu@jetson:2222");
  CalibrationSession session(&document, &jobs);
  session.setTargets(&targets);
  QSignalSpy loaded(&session, &CalibrationSession::dataLoaded);
  session.loadFolder(data, PreprocessSpec{}, 4);
  QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
  QSignalSpy calibrated(&session, &CalibrationSession::calibrated);
  session.calibrate();
  QTRY_COMPARE_WITH_TIMEOUT(calibrated.count(), 1, 30000);
  QVERIFY2(calibrated[0][0].toBool(), qPrintable(calibrated[0][1].toString()));
  QVERIFY(calibrated[0][1].toString().startsWith("calibrated on gpu@jetson:2222"));
  const Result<CalibrationTable> table = loadCalibrationCache(built.toStdString());
  QVERIFY(table.isOk());
  QCOMPARE(session.rows().size(), table.value().tensors.size());
  QVERIFY(!session.rows().empty());
  const QStringList args =
      QString::fromUtf8(readAll(dir.path() + "/argv")).split('\n', Qt::SkipEmptyParts);
  QCOMPARE(args.mid(0, 7),
           QStringList({"--remote", "gpu@jetson:2222", "calibrate", model, "--data", data, "-o"}));
  QVERIFY(args.contains("--preprocess"));
  QCOMPARE(args.mid(args.indexOf("--method"), 4),
           QStringList({"--method", "entropy", "--batch", "4"}));
}

// Compare accuracy on a target: `kiln compare B A --per-tensor` with the local tolerance
// and seed, both plans saved for the upload; the report that comes back (a real one, made
// here by the real kiln from the same plans) fills the plots and the diff table. Exit 3
// (outside the tolerance) is a result too.
void TestTargets::remoteCompareShowsTheTargetsReport() {
  RemoteCompare studio;
  const QString made = studio.dir.path() + "/made.json";
  QCOMPARE(QProcess::execute(KILN_CLI_PATH, {"compare", studio.dir.path() + "/b.kiln",
                                             studio.dir.path() + "/a.kiln", "--per-tensor",
                                             "--atol", "0.01", "--rtol", "0.01", "--output", made}),
           0);
  writeStandIn(studio.dir.path(),
               "echo 'kiln: remote jetson: uploading B.kiln'\n"
               "out=; prev=; for a in \"$@\"; do [ \"$prev\" = --output ] && "
               "out=$a; prev=$a; done\ncp '" +
                   made.toUtf8() + "' \"$out\"\n");
  QStringList progress;
  QObject::connect(&studio.jobs, &JobRunner::jobProgress, &studio.jobs,
                   [&progress](int, double, const QString& text) { progress << text; });
  QVERIFY2(studio.compare(), qPrintable(studio.view->statusText()));
  QCOMPARE(studio.view->statusText(),
           QString("accuracy of B against A on gpu@jetson:2222: within tolerance"));
  QVERIFY2(progress.contains("jetson: kiln: remote jetson: uploading B.kiln"),
           qPrintable(progress.join('|')));
  const auto report = studio.view->accuracy();
  QVERIFY(report && report->perTensor && !report->intermediates.empty());
  const auto expected =
      compare::accuracyReportFromJson(nlohmann::json::parse(readAll(made).toStdString()));
  QVERIFY(expected.isOk());
  QCOMPARE(report->outputs.size(), expected->outputs.size());
  QCOMPARE(report->outputs[0].maxAbs, expected->outputs[0].maxAbs);
  QVERIFY(report->outputs[0].maxAbs > 0);  // fp16 against fp32: not zeros against zeros
  QCOMPARE(studio.view->errorPlots()->currentOutput(), 0);  // the plots show it
  QVERIFY(!studio.view->errorPlots()->heatmapImage().isNull());
  const QStringList args =
      QString::fromUtf8(readAll(studio.dir.path() + "/argv")).split('\n', Qt::SkipEmptyParts);
  QCOMPARE(args.mid(0, 3), QStringList({"--remote", "gpu@jetson:2222", "compare"}));
  QVERIFY(args[3].endsWith("/B.kiln") && args[4].endsWith("/A.kiln"));
  QCOMPARE(args.mid(5, 8), QStringList({"--per-tensor", "--atol", "0.01", "--rtol", "0.01",
                                        "--seed", "1", "--output"}));
  // Outside the tolerance, kiln compare exits 3: still a result.
  auto outside = nlohmann::json::parse(readAll(made).toStdString());
  outside["pass"] = false;
  QFile file(made);
  QVERIFY(file.open(QIODevice::WriteOnly));
  file.write(QByteArray::fromStdString(outside.dump()));
  file.close();
  writeStandIn(studio.dir.path(),
               "out=; prev=; for a in \"$@\"; do [ \"$prev\" = --output ] && "
               "out=$a; prev=$a; done\ncp '" +
                   made.toUtf8() + "' \"$out\"\nexit 3\n");
  QVERIFY2(studio.compare(), qPrintable(studio.view->statusText()));
  QCOMPARE(studio.view->statusText(),
           QString("accuracy of B against A on gpu@jetson:2222: outside tolerance"));
}

void TestTargets::remoteCompareFailuresAndCancel() {
  RemoteCompare studio;
  writeStandIn(studio.dir.path(),
               "echo 'kiln: remote jetson: connection lost or ssh failed (exit 255); nothing "
               "fetched' >&2\nexit 1\n");
  QVERIFY(!studio.compare());
  QCOMPARE(studio.view->statusText(),
           QString("accuracy failed: remote jetson: connection lost or ssh failed (exit 255); "
                   "nothing fetched"));
  QVERIFY(!studio.view->accuracy());
  // A variant build on the target that drops: one line too, and B stays as it was.
  const auto planB = studio.view->planB();
  QSignalSpy built(studio.view.get(), &CompareView::variantFinished);
  studio.view->buildVariant(BuilderConfig{}, "variant");
  studio.jobs.waitForIdle(30000);
  QCOMPARE(built.count(), 1);
  QVERIFY(!built[0][0].toBool());
  QVERIFY2(studio.view->statusText().startsWith("build B failed: remote jetson: connection lost"),
           qPrintable(studio.view->statusText()));
  QCOMPARE(studio.view->planB(), planB);
  QVERIFY(readAll(studio.dir.path() + "/argv").contains("--progress"));
  // Cancel: the remote kiln gets SIGINT, the view says cancelled.
  const QByteArray marker = studio.dir.path().toUtf8() + "/interrupted";
  writeStandIn(studio.dir.path(), "trap 'echo yes > \"" + marker +
                                      "\"; exit 130' INT\necho 'comparing'\n"
                                      "while :; do sleep 0.05; done\n");
  QSignalSpy done(studio.view.get(), &CompareView::accuracyFinished);
  QSignalSpy progress(&studio.jobs, &JobRunner::jobProgress);
  studio.view->compareAccuracy();
  QVERIFY(studio.view->isBusy());
  QTRY_VERIFY_WITH_TIMEOUT(
      !progress.isEmpty() && progress.back()[2].toString().contains("comparing"), 15000);
  QCOMPARE(studio.view->statusText(), QString("jetson: comparing"));
  studio.view->cancel();
  QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 15000);
  QVERIFY(!done[0][0].toBool());
  QCOMPARE(studio.view->statusText(), QString("accuracy cancelled"));
  QCOMPARE(readAll(QString::fromUtf8(marker)), QByteArray("yes\n"));
  QVERIFY(!studio.view->isBusy());
}

// Run by tests/scaleout/sshd_remote.sh (ctest scaleout_sshd) with its sshd on 127.0.0.1:
// KILN_TEST_SSH_TARGET is the address, KILN_REMOTE_SSH_OPTIONS and KILN_REMOTE_KILN are
// set, the real kiln runs `kiln --remote`. The Build panel's build goes over ssh and its
// plan opens as a local one; with the wrong host key it is one line naming the host.
void TestTargets::buildThroughARealSshd() {
  const QString address = qEnvironmentVariable("KILN_TEST_SSH_TARGET");
  if (address.isEmpty())
    QSKIP("KILN_TEST_SSH_TARGET is not set (tests/scaleout/sshd_remote.sh sets it)");
  qputenv("KILN_PROGRAM", KILN_CLI_PATH);
  RemoteStudio studio;
  QString error;
  QVERIFY(studio.targets.setTargets({{address, qEnvironmentVariable("KILN_REMOTE_KILN")}}, &error));
  studio.targets.setCurrent(address);
  QStringList progress;
  QObject::connect(&studio.jobs, &JobRunner::jobProgress, &studio.jobs,
                   [&progress](int, double, const QString& text) { progress << text; });
  const auto [ok, message] = studio.build();
  QVERIFY2(ok, qPrintable(message));
  QCOMPARE(studio.document.enginePath(), studio.dir.path() + "/add.kiln");
  QVERIFY(studio.document.plan() && !studio.document.report()->layers.empty());
  QVERIFY2(!progress.filter("127.0.0.1: ").isEmpty(), qPrintable(progress.join('|')));
  const QByteArray options = qgetenv("KILN_REMOTE_SSH_OPTIONS");
  qputenv("KILN_REMOTE_SSH_OPTIONS", qgetenv("KILN_TEST_WRONG_HOSTS_OPTIONS"));
  QFile::remove(studio.dir.path() + "/add.kiln");
  const auto [refused, why] = studio.build();
  qputenv("KILN_REMOTE_SSH_OPTIONS", options);
  QVERIFY(!refused);
  QVERIFY2(why.contains("remote 127.0.0.1") && !why.contains('\n'), qPrintable(why));
  QVERIFY(!QFile::exists(studio.dir.path() + "/add.kiln"));
}

// Run by tests/scaleout/sshd_remote.sh as buildThroughARealSshd is: the Compare view builds
// B (every layer fp16) on the target through the real kiln --remote and sshd, then
// compares B with A there; the plan and the report come back. With the wrong host key,
// one line naming the host. With KILN_SCREENSHOT_DIR (under Xvfb), a picture of the view.
void TestTargets::compareThroughARealSshd() {
  const QString address = qEnvironmentVariable("KILN_TEST_SSH_TARGET");
  if (address.isEmpty())
    QSKIP("KILN_TEST_SSH_TARGET is not set (tests/scaleout/sshd_remote.sh sets it)");
  qputenv("KILN_PROGRAM", KILN_CLI_PATH);
  RemoteCompare studio({address, qEnvironmentVariable("KILN_REMOTE_KILN")});
  QStringList progress;
  QObject::connect(&studio.jobs, &JobRunner::jobProgress, &studio.jobs,
                   [&progress](int, double, const QString& text) { progress << text; });
  studio.view->variantForm()->setLayerPrecisions("*:fp16");
  studio.view->variantForm()->setConstraintMode(ConstraintMode::kObey);
  QSignalSpy built(studio.view.get(), &CompareView::variantFinished);
  emit studio.view->variantForm()->buildRequested();
  studio.jobs.waitForIdle(60000);
  QCOMPARE(built.count(), 1);
  QVERIFY2(built[0][0].toBool(), qPrintable(progress.join('\n')));
  QVERIFY(studio.view->planB());
  QVERIFY2(!progress.filter(QRegularExpression("^127.0.0.1: \\[\\d+/\\d+\\]")).isEmpty(),
           qPrintable(progress.join('|')));  // the build's per-layer progress, live
  int fp16 = 0;
  for (const LayerImplementation& layer : studio.view->planB()->layers)
    fp16 += layer.precision == DataType::kFloat16;
  QVERIFY(fp16 > 0);
  QVERIFY(studio.compare());
  QVERIFY2(studio.view->statusText().startsWith("accuracy of B against A on " + address),
           qPrintable(studio.view->statusText()));
  const auto report = studio.view->accuracy();
  QVERIFY(report && !report->outputs.empty() && report->outputs[0].maxAbs > 0);
  QVERIFY(!report->intermediates.empty());
  const QByteArray options = qgetenv("KILN_REMOTE_SSH_OPTIONS");
  qputenv("KILN_REMOTE_SSH_OPTIONS", qgetenv("KILN_TEST_WRONG_HOSTS_OPTIONS"));
  const bool refused = !studio.compare();
  qputenv("KILN_REMOTE_SSH_OPTIONS", options);
  QVERIFY(refused);
  QVERIFY2(studio.view->statusText().contains("remote 127.0.0.1: cannot connect") &&
               !studio.view->statusText().contains('\n'),
           qPrintable(studio.view->statusText()));
  if (const QString out = qEnvironmentVariable("KILN_SCREENSHOT_DIR"); !out.isEmpty()) {
    // The view under its toolbar (the main window's place for it), as the comparison ended.
    QVERIFY(studio.compare());
    QWidget frame;
    auto* layout = new QVBoxLayout(&frame);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(studio.view->toolBar());
    layout->addWidget(studio.view.get());
    frame.resize(1366, 740);
    frame.show();
    QTest::qWait(500);
    const bool saved = frame.grab().save(out + "/compare-remote.png");
    studio.view->toolBar()->setParent(studio.view.get());  // back to their owner
    studio.view->setParent(nullptr);
    QVERIFY(saved);
  }
}

// Under Xvfb with KILN_SCREENSHOT_DIR: the Remote Targets dialog with two targets.
void TestTargets::screenshots() {
  const QString out = qEnvironmentVariable("KILN_SCREENSHOT_DIR");
  if (out.isEmpty()) QSKIP("KILN_SCREENSHOT_DIR is not set");
  TargetsDialog dialog({{"gpu@jetson:2222", "/opt/kiln/bin/kiln"}, {"h200-node-07", ""}},
                       "/home/me/.config/kiln/targets");
  dialog.show();
  QTest::qWait(300);
  QVERIFY(dialog.grab().save(out + "/targets-dialog.png"));
}

QTEST_MAIN(TestTargets)
#include "test_targets.moc"
