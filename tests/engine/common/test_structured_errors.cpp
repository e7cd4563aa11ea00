// Structured errors (issue 23 item 4): a Status names the node it is about (name,
// index, op type) and the tensor as fields, set where the error is made or attached by
// the layer that knows the node, so no reader parses the message. The node names here
// hold quotes and spaces, which a reading of the text ("node '([^']+)'") gets wrong.
#include <gtest/gtest.h>

#include "kiln/graph.h"
#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"
#include "kiln/status.h"
#include "support/error_models.h"

namespace kiln {
namespace {

using test::kOddNodeName;
using test::makeNode;
using test::mismatchedMatMul;
using test::withName;

TEST(StructuredErrors, FieldsSurviveContextAndTheFirstNodeStays) {
  const Status made = invalidArgument("bad").withNode({"a", 3, "Conv", ""}).withTensor("t");
  const Status wrapped = made.withContext("model.onnx").withNode({"b", 7, "Relu", ""});
  EXPECT_EQ(wrapped.message(), "model.onnx: bad");
  ASSERT_NE(wrapped.node(), nullptr);
  EXPECT_EQ(*wrapped.node(), (StatusNode{"a", 3, "Conv", ""}));
  EXPECT_EQ(wrapped.tensor(), "t");
  EXPECT_EQ(wrapped.layer(), "");
  EXPECT_EQ(Status::ok().withNode({"a", 3, "Conv", ""}).node(), nullptr);  // ok stays ok
  EXPECT_EQ(invalidArgument("no node").node(), nullptr);
}

TEST(StructuredErrors, KernelErrorOnANamedNodeCarriesThatNode) {
  const Network network = mismatchedMatMul();
  ReferenceBackend backend(network);
  std::vector<NamedTensor> outputs;
  const Status status = backend.run({{"x", test::mismatchedMatMulInput()}}, &outputs);
  ASSERT_FALSE(status.isOk());
  // The message is as it was: the node described first.
  EXPECT_EQ(status.message().rfind("node '" + kOddNodeName + "' (#1, MatMul)", 0), 0u)
      << status.message();
  ASSERT_NE(status.node(), nullptr) << status.message();
  EXPECT_EQ(status.node()->name, kOddNodeName);
  EXPECT_EQ(status.node()->index, 1);
  EXPECT_EQ(status.node()->opType, "MatMul");
  EXPECT_EQ(status.node()->domain, "");
}

TEST(StructuredErrors, OneNodeRunNamesItsNode) {
  const Network network = mismatchedMatMul();
  std::vector<Tensor> outputs;
  const Status status = runReferenceNode(
      network.graph.nodes[1],
      {{"r", test::mismatchedMatMulInput()}, {"w", network.graph.initializers.at("w")}}, &outputs);
  ASSERT_FALSE(status.isOk());
  ASSERT_NE(status.node(), nullptr);
  EXPECT_EQ(status.node()->name, kOddNodeName);
}

TEST(StructuredErrors, GraphErrorsNameTheNodeAndTheTensor) {
  Graph graph;
  graph.inputs = {ValueInfo{"x", DataType::kFloat32, true, {2}}};
  graph.nodes.push_back(withName(makeNode("Add", {"x", "nowhere"}, {"y"}), kOddNodeName, 4));
  const Status status = graph.sortTopologically();
  ASSERT_FALSE(status.isOk());
  ASSERT_NE(status.node(), nullptr) << status.message();
  EXPECT_EQ(status.node()->name, kOddNodeName);
  EXPECT_EQ(status.node()->index, 4);
  EXPECT_EQ(status.tensor(), "nowhere");
}

TEST(StructuredErrors, UnsupportedNodesCarryTheirNodes) {
  Network network = mismatchedMatMul();
  network.graph.nodes.push_back(
      withName(makeNode("NoSuchOp", {"y"}, {"z"}), kOddNodeName + " 2", 2));
  const std::vector<Status> unsupported = findUnsupportedNodeStatuses(network);
  ASSERT_EQ(unsupported.size(), 1u);
  EXPECT_EQ(unsupported[0].code(), StatusCode::kUnsupported);
  ASSERT_NE(unsupported[0].node(), nullptr);
  EXPECT_EQ(*unsupported[0].node(), (StatusNode{kOddNodeName + " 2", 2, "NoSuchOp", ""}));
  // The text list is the same messages.
  EXPECT_EQ(findUnsupportedNodes(network), std::vector<std::string>{unsupported[0].message()});
}

TEST(StructuredErrors, UnresolvedShapesListTheirNodes) {
  Network network;
  network.opsets[""] = 17;
  network.graph.inputs = {ValueInfo{"x", DataType::kFloat32, true, {2, 3}}};
  network.graph.outputs = {ValueInfo{"z", DataType::kFloat32, false, {}}};
  network.graph.nodes.push_back(
      withName(makeNode("NoSuchOp", {"x"}, {"z"}), kOddNodeName + " 2", 2));
  auto inferred = inferShapes(network);
  ASSERT_TRUE(inferred.isOk()) << inferred.status().message();
  ASSERT_EQ(inferred->unresolvedNodes.size(), inferred->unresolved.size());
  ASSERT_EQ(inferred->unresolvedNodes.size(), 1u);
  EXPECT_EQ(inferred->unresolvedNodes[0], (StatusNode{kOddNodeName + " 2", 2, "NoSuchOp", ""}));
}

}  // namespace
}  // namespace kiln
