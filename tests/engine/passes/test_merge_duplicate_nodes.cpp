// merge_duplicate_nodes: the per-layer copies of one computation (the transformers
// exports' attention-mask Where, each layer with its own scalar constants) run once and
// the CPU reference's outputs stay; nodes that differ in an attribute or a constant, random
// ops and nodes writing graph outputs stay.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "merge_duplicate_nodes";

// The pass's records of merged nodes (not of constants read in place of equal ones: those
// name a value, not a node of `network`'s source).
std::vector<PassApplication> nodeMerges(const std::vector<PassApplication>& records,
                                        const Network& source) {
  std::vector<PassApplication> out;
  for (const PassApplication& r : records)
    for (const Node& node : source.graph.nodes)
      if (node.opType != "Constant" && node.displayName() == r.nodes[0]) out.push_back(r);
  return out;
}

Tensor scalar(float v) {
  return Tensor::scalarFloat(v);
}

Node constantNode(const std::string& out, float v) {
  Node n = makeNode("Constant", {}, {out});
  Attribute a;
  a.kind = Attribute::Kind::kTensor;
  a.t = scalar(v);
  n.attributes["value"] = a;
  return n;
}

// `layers` layers of y_i = x_i + Where(mask, zero_i, low_i) with per-layer scalar copies,
// x_{i+1} = y_i * 0.5 (each layer its own 0.5): x [2, 4, 4], mask bool [2, 1, 4, 4] from
// Greater(m, 0) of a float input. With `lowDiffers` the last layer's low is another number.
Network maskedLayers(int layers, bool lowDiffers = false) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(4), DimExpr(4)}},
              {"m", DataType::kFloat32, true, {DimExpr(2), DimExpr(1), DimExpr(4), DimExpr(4)}}};
  g.initializers["zero_init"] = scalar(0.0f);
  g.nodes.push_back(makeNode("Greater", {"m", "zero_init"}, {"mask"}));
  std::string x = "x";
  for (int i = 0; i < layers; ++i) {
    const std::string n = std::to_string(i);
    g.nodes.push_back(constantNode("zero" + n, 0.0f));
    g.nodes.push_back(constantNode("low" + n, lowDiffers && i == layers - 1 ? -3.0f : -2.0f));
    g.initializers["half" + n] = scalar(0.5f);
    g.nodes.push_back(makeNode("Where", {"mask", "zero" + n, "low" + n}, {"bias" + n}));
    g.nodes.push_back(makeNode("Add", {x, "bias" + n}, {"y" + n}));
    g.nodes.push_back(makeNode("Mul", {"y" + n, "half" + n}, {"x" + std::to_string(i + 1)}));
    x = "x" + std::to_string(i + 1);
  }
  g.outputs = {{x, DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 4, 4}, 1)},
                              {"m", randomTensor(DataType::kFloat32, {2, 1, 4, 4}, 2)}});
}

TEST(MergeDuplicateNodes, PerLayerMaskWhereRunsOnce) {
  Network fused;
  // Greater, one Where, the Constant node of its low, and each layer's Add and Mul (the
  // other Constant nodes, now unread, go).
  const Network source = maskedLayers(3);
  const auto records = fuseAndCompareOutputs(kPass, run, source, 9, &fused);
  const auto applied = nodeMerges(records, source);
  ASSERT_EQ(applied.size(), 2u);
  // The per-layer zero, low and half scalars read in place of the first ones: recorded too.
  EXPECT_EQ(records.size(), 2u + 7u);
  EXPECT_EQ(applied[0].nodes, std::vector<std::string>{"bias1"});
  EXPECT_EQ(applied[0].layer, "bias0");
  EXPECT_EQ(applied[1].nodes, std::vector<std::string>{"bias2"});
  int wheres = 0;
  for (const Node& node : fused.graph.nodes) {
    if (node.opType == "Where") ++wheres;
    if (node.opType == "Add") EXPECT_EQ(node.inputs[1], "bias0");
  }
  EXPECT_EQ(wheres, 1);
}

TEST(MergeDuplicateNodes, DifferentConstantsAttributesAndOutputsStay) {
  // The last layer's Where reads another low: it stays with its Constant node (layers 0
  // and 1 still merge).
  const Network source = maskedLayers(3, true);
  const auto applied = nodeMerges(fuseAndCompareOutputs(kPass, run, source, 11), source);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, std::vector<std::string>{"bias1"});

  // Transposes of one input with other perms, a random op twice, and two equal nodes
  // that each write a graph output.
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(3), DimExpr(4)}}};
  g.nodes.push_back(withInts(makeNode("Transpose", {"x"}, {"t0"}), "perm", {0, 2, 1}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"x"}, {"t1"}), "perm", {1, 0, 2}));
  g.nodes.push_back(makeNode("RandomUniformLike", {"x"}, {"r0"}));
  g.nodes.push_back(makeNode("RandomUniformLike", {"x"}, {"r1"}));
  g.nodes.push_back(makeNode("Neg", {"x"}, {"n0"}));
  g.nodes.push_back(makeNode("Neg", {"x"}, {"n1"}));
  for (const char* out : {"t0", "t1", "r0", "r1", "n0", "n1"})
    g.outputs.push_back({out, DataType::kFloat32, false, {}});
  std::vector<PassApplication> records;
  ASSERT_TRUE(runPasses(net, 1, {}, &records).isOk());
  for (const PassApplication& a : records) EXPECT_NE(a.pass, kPass) << a.nodes[0];
  EXPECT_EQ(net.graph.nodes.size(), 6u);
}

}  // namespace
}  // namespace kiln::test
