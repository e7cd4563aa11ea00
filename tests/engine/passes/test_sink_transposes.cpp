// sink_transposes: ConvNeXt's residual stream in code (two blocks of permute -> Linear ->
// permute back -> layer scale and residual Add), fused at level 2 into PointwiseChains; the
// chains between a permute and its inverse compute in the permuted layout, the permutes
// go, and the outputs on the CPU reference equal the original graph's.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

Node transpose(const std::string& in, const std::string& out, std::vector<int64_t> perm) {
  return withInts(makeNode("Transpose", {in}, {out}), "perm", std::move(perm));
}

// x [2, 8, 5, 6]: xt = NHWC view; r = xt back to NCHW (what a layout reformat leaves);
// block k: m = MatMul(NHWC, W) -> t = Transpose to NCHW -> y = t * gamma [C, 1, 1] + residual;
// z = y to NHWC for the next block.
Network residualStream() {
  const int64_t c = 8;
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(c), DimExpr(5), DimExpr(6)}}};
  g.initializers["w1"] = randomTensor(DataType::kFloat32, {c, c}, 1, -0.5, 0.5);
  g.initializers["w2"] = randomTensor(DataType::kFloat32, {c, c}, 2, -0.5, 0.5);
  g.initializers["gamma1"] = randomTensor(DataType::kFloat32, {c, 1, 1}, 3, 0.5, 1.5);
  g.initializers["gamma2"] = randomTensor(DataType::kFloat32, {c, 1, 1}, 4, 0.5, 1.5);
  g.nodes = {transpose("x", "xt", {0, 2, 3, 1}),        transpose("xt", "r", {0, 3, 1, 2}),
             makeNode("MatMul", {"xt", "w1"}, {"m1"}),  transpose("m1", "t1", {0, 3, 1, 2}),
             makeNode("Mul", {"t1", "gamma1"}, {"s1"}), makeNode("Add", {"s1", "r"}, {"y1"}),
             transpose("y1", "z1", {0, 2, 3, 1}),       makeNode("MatMul", {"z1", "w2"}, {"m2"}),
             transpose("m2", "t2", {0, 3, 1, 2}),       makeNode("Mul", {"t2", "gamma2"}, {"s2"}),
             makeNode("Add", {"s2", "y1"}, {"y2"})};
  g.outputs = {{"y2", DataType::kFloat32, false, {}}};
  return net;
}

TEST(SinkTransposes, ResidualStreamComputesInThePermutedLayout) {
  const Network original = residualStream();
  Network fused = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 2, {}, &applied).isOk());
  int sunk = 0;
  for (const PassApplication& a : applied) sunk += a.pass == "sink_transposes";
  EXPECT_EQ(sunk, 1);  // block 1's chain (block 2's output is no permute's input)
  EXPECT_EQ(countOps(original, "Transpose"), 5);
  EXPECT_EQ(countOps(fused, "Transpose"), 3);  // x's permute, y1 back for block 2, block 2's
  for (uint32_t seed : {5u, 9u}) {
    const std::map<std::string, Tensor> feeds = {
        {"x", randomTensor(DataType::kFloat32, {2, 8, 5, 6}, seed, -2.0, 2.0)}};
    const auto expected = runOnReference(original, feeds);
    const auto actual = runOnReference(fused, feeds);
    ASSERT_EQ(actual.size(), 1u);
    expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-5);
  }
}

TEST(SinkTransposes, ABroadcastDataInputStays) {
  Network net = residualStream();
  // Block 1's residual now broadcasts ([2, 8, 1, 1] from a graph input): not the output's
  // shape, so the chain stays in the model's layout.
  net.graph.inputs.push_back(
      {"b", DataType::kFloat32, true, {DimExpr(2), DimExpr(8), DimExpr(1), DimExpr(1)}});
  net.graph.nodes.insert(net.graph.nodes.begin(), transpose("b", "bt", {0, 2, 3, 1}));
  net.graph.nodes.insert(net.graph.nodes.begin() + 1, transpose("bt", "bb", {0, 3, 1, 2}));
  for (Node& n : net.graph.nodes)
    if (n.name == "y1") n.inputs[1] = "bb";
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(net, 2, {}, &applied).isOk());
  int chains = 0;
  for (const PassApplication& a : applied) {
    chains += a.pass == "fuse_pointwise_chain";
    EXPECT_NE(a.pass, "sink_transposes") << a.layer;
  }
  EXPECT_EQ(chains, 2);  // the chains formed; block 1's has the broadcast permuted input
}

TEST(SinkTransposes, DisabledByName) {
  Network net = residualStream();
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(net, 2, {"sink_transposes"}, &applied).isOk());
  EXPECT_EQ(countOps(net, "Transpose"), 5);
}

}  // namespace
}  // namespace kiln::test
