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
#include <QtTest>

#include "build_panel.h"
#include "build_panel_fixture.h"
#include "calibration_session.h"
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
  void buildThroughARealSshd();
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
