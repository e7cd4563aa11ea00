// The Issues dock jumps to the node an error is about, read from the Status's node
// fields (issue 23 item 4), not from its text: node names here hold quotes and spaces,
// which the old readings ("node '([^']+)'" and the build job's parser) cut short.
#include <QSignalSpy>
#include <QtTest>
#include <memory>

#include "build_job.h"
#include "build_panel.h"
#include "build_panel_fixture.h"
#include "issues_dock.h"
#include "kiln/onnx_import.h"
#include "kiln/reference_backend.h"
#include "shapes_dialog.h"
#include "studio_document.h"
#include "support/error_models.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

QString tinyBertPath() {
  return QString::fromLocal8Bit(qgetenv("KILN_TEST_DATA_DIR")) + "/builder/tiny_bert.onnx";
}

// Tiny BERT with its attention scores node renamed to test::kOddNodeName.
std::shared_ptr<const Network> renamedTinyBert() {
  auto imported = importOnnxFile(tinyBertPath().toStdString());
  if (!imported.isOk()) return nullptr;
  auto network = std::make_shared<Network>(std::move(imported.value()));
  for (Node& node : network->graph.nodes)
    if (node.name == "scores") node.name = test::kOddNodeName;
  return network;
}

}  // namespace

class TestIssueNodes : public QObject {
  Q_OBJECT
 private slots:
  // A build that fails on the renamed layer (INT8 obeyed where it cannot be) gives an
  // error Issue naming that node, and activating it selects the node.
  void buildErrorSelectsTheNodeFromTheFields() {
    auto network = renamedTinyBert();
    QVERIFY(network);
    kiln::test::BuildPanelStudio s(tinyBertPath(), network);
    QVERIFY(s.panel->setPassEnabled("fuse_attention", false));  // keep the node a layer
    s.panel->setConstraintMode(ConstraintMode::kObey);
    s.panel->setLayerPrecision(QString::fromStdString(test::kOddNodeName), DataType::kInt8);
    QSignalSpy finished(s.panel.get(), &BuildPanel::buildFinished);
    s.panel->startBuild();
    if (ShapesDialog* dialog = s.panel->shapesDialog()) dialog->accept();
    s.jobs.waitForIdle(120000);
    QCOMPARE(finished.count(), 1);
    QVERIFY(!finished[0][0].toBool());
    const QString message = finished[0][1].toString();
    QVERIFY2(message.contains(QString::fromStdString("layer '" + test::kOddNodeName + "'")),
             qPrintable(message));
    // The text fallback reads the name up to its first quote: no node.
    QCOMPARE(nodeNamedInText(message.toStdString(), network.get()), QString());
    const auto& issues = s.document.issues();
    QVERIFY(!issues.empty());
    const Issue& issue = issues.back();
    QVERIFY(issue.severity == IssueSeverity::kError);
    QCOMPARE(issue.nodeName, QString::fromStdString(test::kOddNodeName));
    IssuesDock dock(&s.document);
    dock.activateRow(static_cast<int>(issues.size()) - 1);
    QCOMPARE(s.document.selectedNodes(), QStringList{QString::fromStdString(test::kOddNodeName)});
  }

  // A kernel's error on a named node: issueNodeName reads the node the run failed on,
  // checked against the network (by index and name).
  void kernelErrorNamesItsNode() {
    const Network network = test::mismatchedMatMul(test::kOddNodeName, "node 'first'");
    ReferenceBackend backend(network);
    std::vector<NamedTensor> outputs;
    const Status status = backend.run({{"x", test::mismatchedMatMulInput()}}, &outputs);
    QVERIFY(!status.isOk());
    QCOMPARE(issueNodeName(status, &network), QString::fromStdString(test::kOddNodeName));
    QCOMPARE(issueNodeName(status), QString::fromStdString(test::kOddNodeName));
    Network other;  // a network without that node: no jump
    QCOMPARE(issueNodeName(status, &other), QString());
    QCOMPARE(issueNodeName(invalidArgument("node 'first' (#0, Relu): text only"), &network),
             QString());
  }

  // An unnamed node is named as Node::displayName() does: <opType>_<index>.
  void unnamedNodeUsesItsDisplayName() {
    Network network;
    network.graph.nodes.push_back(test::withName(test::makeNode("Relu", {"x"}, {"y"}), "", 3));
    const Status status = invalidArgument("bad").withNodeOf(network.graph.nodes[0]);
    QCOMPARE(issueNodeName(status, &network), QString("Relu_3"));
  }
};

QTEST_MAIN(TestIssueNodes)
#include "test_issue_nodes.moc"
