// merge_transposes and merge_reshapes: chains of Transposes and of shape-only ops
// become one node (or none when they cancel); shared intermediates and shapes that
// depend on the dropped node's dims stay. Graphs run with and without the pipeline
// on the CPU reference (fuseAndCompareOutputs).
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kTransposes = "merge_transposes";
constexpr const char* kReshapes = "merge_reshapes";

// x [2, 3, 4] (batch "N" when symbolic) -> Relu -> r -> `nodes` ending in "y".
Network chain(const std::vector<Node>& nodes, bool symbolicBatch = false) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x",
               DataType::kFloat32,
               true,
               {symbolicBatch ? DimExpr::symbol("N") : DimExpr(2), DimExpr(3), DimExpr(4)}}};
  g.initializers["to_6x4"] = int64Tensor({2}, {6, 4});
  g.initializers["to_4x6"] = int64Tensor({2}, {4, 6});
  g.initializers["to_2x3x4"] = int64Tensor({3}, {2, 3, 4});
  g.initializers["batch_x12"] = int64Tensor({2}, {0, 12});
  g.initializers["rows_of_4"] = int64Tensor({2}, {-1, 4});
  g.initializers["batch_x2x6"] = int64Tensor({3}, {0, 2, 6});
  g.initializers["axis0"] = int64Tensor({1}, {0});
  g.nodes = {makeNode("Relu", {"x"}, {"r"})};
  for (const Node& n : nodes) g.nodes.push_back(n);
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

NetworkRunner runner(int64_t batch = 2) {
  return [batch](const Network& net) {
    return runOnReference(net,
                          {{"x", randomTensor(DataType::kFloat32, {batch, 3, 4}, 3, -2.0, 2.0)}});
  };
}

Node transpose(const std::string& in, const std::string& out, std::vector<int64_t> perm) {
  return withInts(makeNode("Transpose", {in}, {out}), "perm", std::move(perm));
}

TEST(MergeTransposes, PairBecomesOneWithComposedPerm) {
  Network fused;
  auto applied = fuseAndCompareOutputs(
      kTransposes, runner(),
      chain({transpose("r", "t", {1, 0, 2}), transpose("t", "y", {0, 2, 1})}), 2, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"t", "y"}));
  const Node& merged = fused.graph.nodes[1];
  EXPECT_EQ(merged.opType, "Transpose");
  // out[i] = r's axis p1[p2[i]]: (p1[0], p1[2], p1[1]) = (1, 2, 0).
  EXPECT_EQ(merged.attrInts("perm"), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(merged.inputs, std::vector<std::string>{"r"});
  EXPECT_EQ(merged.attrStrings(kSourceNodesAttribute), (std::vector<std::string>{"t", "y"}));
  EXPECT_EQ(merged.attrString(kFusionPassAttribute, ""), kTransposes);
}

TEST(MergeTransposes, CancellingPairsAndLongerChainsAndDefaultPerms) {
  // (0,2,1) twice is the identity: both go and the Relu writes y.
  Network fused;
  auto applied = fuseAndCompareOutputs(
      kTransposes, runner(),
      chain({transpose("r", "t", {0, 2, 1}), transpose("t", "y", {0, 2, 1})}), 1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].layer, "");
  EXPECT_EQ(fused.graph.nodes[0].outputs, std::vector<std::string>{"y"});
  // Three in a row fold into one.
  EXPECT_EQ(
      fuseAndCompareOutputs(kTransposes, runner(),
                            chain({transpose("r", "a", {1, 0, 2}), transpose("a", "b", {2, 1, 0}),
                                   transpose("b", "y", {0, 2, 1})}),
                            2)
          .size(),
      2u);
  // No perm reverses the axes: reverse then (2, 1, 0) is the identity.
  EXPECT_EQ(fuseAndCompareOutputs(
                kTransposes, runner(),
                chain({makeNode("Transpose", {"r"}, {"t"}), transpose("t", "y", {2, 1, 0})}), 1)
                .size(),
            1u);
}

TEST(MergeTransposes, SharedIntermediateStays) {
  Network net = chain({transpose("r", "t", {1, 0, 2}), transpose("t", "y", {0, 2, 1})});
  net.graph.outputs.push_back({"t", DataType::kFloat32, false, {}});
  EXPECT_TRUE(fuseAndCompareOutputs(kTransposes, runner(), net, 3).empty());
}

TEST(MergeReshapes, StaticChainsBecomeOneReshape) {
  // Unsqueeze(0) -> Unsqueeze(0): [1, 1, 2, 3, 4], one Reshape to a new constant.
  Network fused;
  auto applied = fuseAndCompareOutputs(kReshapes, runner(),
                                       chain({makeNode("Unsqueeze", {"r", "axis0"}, {"u"}),
                                              makeNode("Unsqueeze", {"u", "axis0"}, {"y"})}),
                                       2, &fused);
  ASSERT_EQ(applied.size(), 1u);
  const Node& merged = fused.graph.nodes[1];
  EXPECT_EQ(merged.opType, "Reshape");
  ASSERT_EQ(merged.inputs.size(), 2u);
  EXPECT_EQ(merged.inputs[0], "r");
  EXPECT_EQ(fused.graph.initializers.at(merged.inputs[1]).toInt64Vector(),
            (std::vector<int64_t>{1, 1, 2, 3, 4}));
  // Reshape [6, 4] -> Reshape [4, 6] -> Flatten: one Reshape to [4, 6].
  EXPECT_EQ(fuseAndCompareOutputs(kReshapes, runner(),
                                  chain({makeNode("Reshape", {"r", "to_6x4"}, {"a"}),
                                         makeNode("Reshape", {"a", "to_4x6"}, {"b"}),
                                         makeNode("Flatten", {"b"}, {"y"})}),
                                  2)
                .size(),
            1u);  // the Flatten of a [4, 6] is a no-op, gone before this pass
}

TEST(MergeReshapes, ChainBackToTheInputShapeGoes) {
  Network fused;
  auto applied = fuseAndCompareOutputs(kReshapes, runner(),
                                       chain({makeNode("Reshape", {"r", "to_6x4"}, {"a"}),
                                              makeNode("Reshape", {"a", "to_2x3x4"}, {"y"})}),
                                       1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].layer, "");
  EXPECT_EQ(fused.graph.nodes[0].outputs, std::vector<std::string>{"y"});
}

TEST(MergeReshapes, SymbolicBatchKeepsTheLastSelfContainedShape) {
  // [N, 3, 4] -> [N, 12] -> [-1, 4]: the last shape names no dim of the first output.
  Network fused;
  auto applied = fuseAndCompareOutputs(kReshapes, runner(3),
                                       chain({makeNode("Reshape", {"r", "batch_x12"}, {"a"}),
                                              makeNode("Reshape", {"a", "rows_of_4"}, {"y"})},
                                             true),
                                       2, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(fused.graph.nodes[1].inputs, (std::vector<std::string>{"r", "rows_of_4"}));
  // [N, 12] -> [0, 2, 6]: the 0 copies a dim of the dropped node's output, and the
  // result is not static, so both stay.
  EXPECT_TRUE(fuseAndCompareOutputs(kReshapes, runner(3),
                                    chain({makeNode("Reshape", {"r", "batch_x12"}, {"a"}),
                                           makeNode("Reshape", {"a", "batch_x2x6"}, {"y"})},
                                          true),
                                    3)
                  .empty());
}

TEST(MergeReshapes, SharedIntermediateStays) {
  Network net = chain(
      {makeNode("Reshape", {"r", "to_6x4"}, {"a"}), makeNode("Reshape", {"a", "to_4x6"}, {"y"})});
  net.graph.outputs.push_back({"a", DataType::kFloat32, false, {}});
  EXPECT_TRUE(fuseAndCompareOutputs(kReshapes, runner(), net, 3).empty());
}

}  // namespace
}  // namespace kiln::test
