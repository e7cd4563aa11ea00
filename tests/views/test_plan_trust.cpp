// Trusted plan keys in the studio (issue 27): the Plan Trust dialog's list is applied
// and saved and comes back in a new window; a key file that does not load is shown
// with its error and leaves the policy in force; with a key set, a plan signed by it
// shows "signed", an unsigned CPU plan (no generated code) "unsigned", and a plan
// whose signature does not verify is refused with the engine's one-line error.
#include <QApplication>
#include <QFile>
#include <QLabel>
#include <QMessageBox>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeWidget>
#include <QtTest>
#include <fstream>

#include "kiln/builder.h"
#include "kiln/plan.h"
#include "kiln/plan_signature.h"
#include "main_window.h"
#include "plan_trust.h"
#include "plan_trust_dialog.h"
#include "properties_panel.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

constexpr int kJobTimeoutMs = 60000;
constexpr const char* kNotPem = "not an Ed25519 public key in PEM (make one with `kiln keygen`)";

// x -> Relu -> y on [1, 8]: a CPU plan, which carries no generated code.
std::shared_ptr<Network> reluNetwork() {
  auto network = std::make_shared<Network>();
  network->irVersion = 8;
  network->opsets[""] = 17;
  Graph& g = network->graph;
  g.inputs.push_back(ValueInfo{"x", DataType::kFloat32, true, {DimExpr(1), DimExpr(8)}});
  Node relu;
  relu.opType = "Relu";
  relu.opset = 17;
  relu.name = "Relu_0";
  relu.inputs = {"x"};
  relu.outputs = {"y"};
  g.nodes.push_back(relu);
  g.outputs.push_back(ValueInfo{"y", DataType::kFloat32, true, {DimExpr(1), DimExpr(8)}});
  return network;
}

// Calls `act` on the next modal widget of type T once it shows (exec() blocks the test).
template <typename T>
void onNextModal(std::function<void(T*)> act) {
  auto poll = std::make_shared<std::function<void(int)>>();
  *poll = [act, poll](int left) {
    if (auto* widget = qobject_cast<T*>(QApplication::activeModalWidget())) return act(widget);
    if (left > 0) QTimer::singleShot(10, [poll, left] { (*poll)(left - 1); });
  };
  QTimer::singleShot(0, [poll] { (*poll)(500); });
}

// With KILN_SCREENSHOT_DIR set (docs/security.md: run under Xvfb with
// QT_QPA_PLATFORM=xcb), saves `widget` there as NAME.png for the documentation.
void saveScreenshot(QWidget* widget, const QString& name) {
  const QString dir = qEnvironmentVariable("KILN_SCREENSHOT_DIR");
  if (dir.isEmpty()) return;
  if (auto* window = qobject_cast<MainWindow*>(widget)) {
    window->resize(1500, 950);
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window));
  }
  QTest::qWait(100);
  QVERIFY(widget->grab().save(dir + "/" + name + ".png"));
}

QString trustLabel(const MainWindow& window) {
  return window.findChild<QLabel*>("planTrustLabel")->text();
}

// The Properties dock's Plan section with nothing selected: "Signature | Verified against".
QString propertiesSignature(MainWindow& window) {
  auto* panel = qobject_cast<PropertiesPanel*>(window.panel("properties"));
  if (!panel) return "no panel";
  return panel->text({"Plan", "Signature"}) + " | " + panel->text({"Plan", "Verified against"});
}

QStringList errors(const StudioDocument& document) {
  QStringList found;
  for (const Issue& issue : document.issues())
    if (issue.severity == IssueSeverity::kError) found << issue.message;
  return found;
}

}  // namespace

class TestPlanTrust : public QObject {
  Q_OBJECT

  QTemporaryDir m_dir;
  QString path(const QString& name) const { return m_dir.filePath(name); }

  void openAndWait(MainWindow& window, const QString& file) {
    window.openFile(file);
    QVERIFY(window.jobs()->waitForIdle(kJobTimeoutMs));
    QCoreApplication::processEvents();
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
    for (const char* name : {"a", "b"})
      QVERIFY(generateSigningKeyPair(path(QString(name) + ".key").toStdString(),
                                     path(QString(name) + ".pub").toStdString())
                  .isOk());
    QFile bad(path("bad.pub"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n");
    bad.close();
    auto backend = cpuBuildBackend();
    Result<Plan> plan = buildPlan(reluNetwork(), BuilderConfig{}, *backend);
    QVERIFY2(plan.isOk(), plan.status().message().c_str());
    QVERIFY(plan->generatedKernels.empty());
    for (const char* name : {"signed", "unsigned", "tampered", "other"})
      QVERIFY(savePlan(plan.value(), path(QString(name) + ".kiln").toStdString()).isOk());
    QVERIFY(signPlanFile(path("signed.kiln").toStdString(), path("a.key").toStdString()).isOk());
    QVERIFY(signPlanFile(path("other.kiln").toStdString(), path("b.key").toStdString()).isOk());
    QVERIFY(signPlanFile(path("tampered.kiln").toStdString(), path("a.key").toStdString()).isOk());
    std::fstream tampered(path("tampered.kiln").toStdString(),
                          std::ios::in | std::ios::out | std::ios::binary);
    tampered.seekp(100);
    tampered.put('Z');
  }

  void init() {
    QSettings("Kiln", "kiln-studio").clear();
    QVERIFY(requirePlanSignatures({}).isOk());
  }
  void cleanupTestCase() { QVERIFY(requirePlanSignatures({}).isOk()); }

  void dialogRoundTripsSettings() {
    const QString id = QString::fromStdString(publicKeyId(path("a.pub").toStdString()).value());
    QCOMPARE(id.size(), 16);
    {
      MainWindow window;
      QCOMPARE(trustLabel(window), QString("Plan signatures: not required"));
      QStringList shown;
      onNextModal<PlanTrustDialog>([&](PlanTrustDialog* dialog) {
        shown = dialog->keyFiles();
        dialog->addKeyFiles({path("a.pub"), path("b.pub"), path("a.pub")});  // no duplicate
        shown << dialog->rowTexts();
        dialog->accept();
      });
      window.editPlanTrust();
      QCOMPARE(shown, QStringList({path("a.pub") + "\tEd25519 key " + id,
                                   path("b.pub") + "\tEd25519 key " +
                                       QString::fromStdString(
                                           publicKeyId(path("b.pub").toStdString()).value())}));
      QCOMPARE(QSettings("Kiln", "kiln-studio").value("trust/publicKeys").toStringList(),
               QStringList({path("a.pub"), path("b.pub")}));
      QVERIFY(planSignaturesRequired());
      QCOMPARE(trustLabel(window), QString("Plan signatures: required (2 keys)"));
    }
    QVERIFY(requirePlanSignatures({}).isOk());
    MainWindow again;  // start-up applies the saved list
    QVERIFY(planSignaturesRequired());
    QCOMPARE(again.trustedKeys(), QStringList({path("a.pub"), path("b.pub")}));
    onNextModal<PlanTrustDialog>([&](PlanTrustDialog* dialog) {
      QCOMPARE(dialog->keyFiles(), QStringList({path("a.pub"), path("b.pub")}));
      dialog->list()->topLevelItem(0)->setSelected(true);
      dialog->removeSelected();
      dialog->accept();
    });
    again.editPlanTrust();
    QCOMPARE(savedTrustedKeys(), QStringList({path("b.pub")}));
    QCOMPARE(trustLabel(again), QString("Plan signatures: required (1 key)"));
    onNextModal<PlanTrustDialog>([&](PlanTrustDialog* dialog) {
      dialog->list()->selectAll();
      dialog->removeSelected();
      dialog->accept();
    });
    again.editPlanTrust();  // an empty list turns the requirement off
    QCOMPARE(savedTrustedKeys(), QStringList());
    QVERIFY(!planSignaturesRequired());
  }

  void badKeyIsReportedAndPolicyUnchanged() {
    MainWindow window;
    QVERIFY(window.setTrustedKeys({path("a.pub")}, true).isOk());
    QStringList rows;
    QString warning;
    onNextModal<PlanTrustDialog>([&](PlanTrustDialog* dialog) {
      dialog->addKeyFiles({path("bad.pub"), path("a.key")});
      rows = dialog->rowTexts();
      saveScreenshot(dialog, "security-plan-trust-dialog");
      dialog->accept();
    });
    onNextModal<QMessageBox>([&](QMessageBox* box) {
      warning = box->text();
      box->accept();
    });
    window.editPlanTrust();
    QCOMPARE(rows.size(), 3);
    QCOMPARE(rows[1], path("bad.pub") + "\t" + kNotPem);
    QCOMPARE(rows[2], path("a.key") + "\t" + kNotPem);
    QCOMPARE(warning,
             path("bad.pub") + ": " + kNotPem + "\n\nThe trusted keys in force are unchanged.");
    QCOMPARE(savedTrustedKeys(), QStringList({path("a.pub")}));
    QCOMPARE(window.trustedKeys(), QStringList({path("a.pub")}));
    QVERIFY(planSignaturesRequired());
    openAndWait(window, path("signed.kiln"));  // still verified against a.pub
    QCOMPARE(trustLabel(window), QString("Plan: signed (verified against a.pub)"));

    const Status missing = window.setTrustedKeys({path("missing.pub")}, false);
    QVERIFY(!missing.isOk());
    QVERIFY2(missing.message().find("missing.pub") != std::string::npos, missing.message().c_str());
    QCOMPARE(window.trustedKeys(), QStringList({path("a.pub")}));

    // A saved key that went away at start-up: an error issue, the other key stays in force.
    saveTrustedKeys({path("missing.pub"), path("a.pub")});
    QVERIFY(requirePlanSignatures({}).isOk());
    MainWindow restarted;
    QCOMPARE(restarted.trustedKeys(), QStringList({path("a.pub")}));
    QVERIFY(planSignaturesRequired());
    const QStringList startup = errors(*restarted.document());
    QCOMPARE(startup.size(), 1);
    QVERIFY2(startup[0].startsWith("trusted plan key not loaded: " + path("missing.pub")),
             qPrintable(startup[0]));
  }

  void planTrustStateIsShown_data() {
    QTest::addColumn<QStringList>("keys");
    QTest::addColumn<QString>("plan");
    QTest::addColumn<QString>("state");
    QTest::addColumn<QString>("keyFile");
    QTest::addColumn<QString>("properties");  // Plan section: Signature | Verified against
    QTest::newRow("signed") << QStringList{path("b.pub"), path("a.pub")} << "signed.kiln"
                            << "signed (verified against a.pub)" << path("a.pub")
                            << "signed | a.pub";
    QTest::newRow("unsigned CPU plan") << QStringList{path("a.pub")} << "unsigned.kiln"
                                       << "unsigned" << QString() << "unsigned | ";
    QTest::newRow("no keys") << QStringList{} << "signed.kiln"
                             << "signatures not required" << QString()
                             << "signatures not required | ";
  }
  void planTrustStateIsShown() {
    QFETCH(QStringList, keys);
    QFETCH(QString, plan);
    QFETCH(QString, state);
    QFETCH(QString, keyFile);
    QFETCH(QString, properties);
    MainWindow window;
    QVERIFY(window.setTrustedKeys(keys, false).isOk());
    QVERIFY(!window.document()->planTrust());
    openAndWait(window, path(plan));
    QVERIFY(window.document()->plan());
    QVERIFY(window.document()->planTrust());
    QCOMPARE(QString::fromStdString(window.document()->planTrust()->keyFile), keyFile);
    QCOMPARE(trustLabel(window), "Plan: " + state);
    QCOMPARE(propertiesSignature(window), properties);
    QCOMPARE(errors(*window.document()), QStringList());
    if (QTest::currentDataTag() == QByteArray("signed"))
      saveScreenshot(&window, "security-plan-signed");
  }

  void unverifiedPlanIsRefused_data() {
    QTest::addColumn<QString>("plan");
    QTest::addColumn<QString>("error");
    QTest::newRow("changed after signing")
        << "tampered.kiln"
        << path("tampered.kiln") +
               ": the signature does not match the plan (changed after signing?)";
    QTest::newRow("other signer") << "other.kiln"
                                  << path("other.kiln") + ": signed by key " +
                                         QString::fromStdString(
                                             publicKeyId(path("b.pub").toStdString()).value()) +
                                         ", which is not among the trusted keys";
  }
  void unverifiedPlanIsRefused() {
    QFETCH(QString, plan);
    QFETCH(QString, error);
    MainWindow window;
    QVERIFY(window.setTrustedKeys({path("a.pub")}, false).isOk());
    openAndWait(window, path(plan));
    QCOMPARE(errors(*window.document()), QStringList({error}));
    QVERIFY(!window.document()->plan());
    QVERIFY(!window.document()->planTrust());
    QCOMPARE(trustLabel(window), QString("Plan signatures: required (1 key)"));
    if (QTest::currentDataTag() == QByteArray("changed after signing"))
      saveScreenshot(&window, "security-plan-refused");
  }
};

QTEST_MAIN(TestPlanTrust)
#include "test_plan_trust.moc"
