// fold_matmul_batch_norm: timm's LinearNorm (MatMul, Flatten, BatchNormalization,
// Reshape back) and a rank-2 MatMul + BatchNormalization become the MatMul with folded
// weights and a bias Add, which fuse_matmul_bias_activation then takes with the
// activation after it; outputs equal the unfolded graph's on random data.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fold_matmul_batch_norm";

// x [2, 5, 8] -> MatMul(W [8, 6]) -> [Flatten(axis 2) -> BN -> Reshape [2, 5, 6]] ->
// HardSwish -> y; with `rank2`, x [10, 8] and the BN straight on the MatMul.
// `shapeReader`: the Reshape's target is Shape(MatMul output), as timm exports it.
Network linearNorm(bool rank2, bool shapeReader) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  const Shape x = rank2 ? Shape{10, 8} : Shape{2, 5, 8};
  SymbolicShape dims;
  for (int64_t d : x) dims.push_back(DimExpr(d));
  g.inputs = {{"x", DataType::kFloat32, true, dims}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {8, 6}, 1);
  g.initializers["scale"] = randomTensor(DataType::kFloat32, {6}, 2, 0.5, 1.5);
  g.initializers["shift"] = randomTensor(DataType::kFloat32, {6}, 3);
  g.initializers["mean"] = randomTensor(DataType::kFloat32, {6}, 4);
  g.initializers["var"] = randomTensor(DataType::kFloat32, {6}, 5, 0.2, 2.0);
  g.nodes.push_back(makeNode("MatMul", {"x", "w"}, {"mm"}));
  std::string bnIn = "mm", bnOut = "act_in";
  if (!rank2) {
    g.nodes.push_back(withInt(makeNode("Flatten", {"mm"}, {"flat"}), "axis", 2));
    bnIn = "flat";
    bnOut = "bn";
  }
  Node bn = makeNode("BatchNormalization", {bnIn, "scale", "shift", "mean", "var"}, {bnOut});
  bn.attributes["epsilon"].kind = Attribute::Kind::kFloat;
  bn.attributes["epsilon"].f = 1e-3f;
  g.nodes.push_back(bn);
  if (!rank2) {
    std::string target = "target";
    if (shapeReader)
      g.nodes.push_back(makeNode("Shape", {"mm"}, {"target"}));
    else
      g.initializers["target"] = int64Tensor({3}, {2, 5, 6});
    g.nodes.push_back(makeNode("Reshape", {"bn", target}, {"act_in"}));
  }
  g.nodes.push_back(makeNode("HardSwish", {"act_in"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

NetworkRunner runner(const Shape& x) {
  return [x](const Network& net) {
    return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, x, 9)}});
  };
}

TEST(FoldMatMulBatchNorm, LinearNormBecomesOneFusedMatMul) {
  for (bool shapeReader : {false, true}) {
    SCOPED_TRACE(shapeReader ? "Reshape to Shape(MatMul)" : "Reshape to a constant");
    Network fused;
    // The Shape of a static shape folds first: one FusedMatMul (bias + HardSwish) either way.
    auto applied =
        fuseAndCompareOutputs(kPass, runner({2, 5, 8}), linearNorm(false, shapeReader), 1, &fused);
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_EQ(applied[0].nodes.size(), 3u);  // Flatten, BN, Reshape
    EXPECT_EQ(fused.graph.nodes[0].opType, "FusedMatMul");
  }
}

// LeViT's qkv: the LinearNorm's Reshape merged with the head split after it, so the
// Reshape goes to [2, 5, 2, 3] and stays, reading the Add.
TEST(FoldMatMulBatchNorm, AReshapeToAnotherShapeStays) {
  Network net = linearNorm(false, false);
  net.graph.initializers["target"] = int64Tensor({4}, {2, 5, 2, 3});
  net.graph.nodes.back().opType = "Relu";  // an activation of the 4-D result
  Network fused;
  // MatMul + Add (bias) + Relu as one FusedMatMul (sink_reshape_below_activation moves
  // the Relu above the Reshape), then the Reshape.
  auto applied = fuseAndCompareOutputs(kPass, runner({2, 5, 8}), net, 2, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes.size(), 2u);  // Flatten, BN
  EXPECT_EQ(fused.graph.nodes[0].opType, "FusedMatMul");
  EXPECT_EQ(fused.graph.nodes[1].opType, "Reshape");
}

TEST(FoldMatMulBatchNorm, RankTwoMatMul) {
  auto applied = fuseAndCompareOutputs(kPass, runner({10, 8}), linearNorm(true, false), 1);
  ASSERT_EQ(applied.size(), 1u);
}

TEST(FoldMatMulBatchNorm, AMatMulOutputReadElsewhereIsLeftAlone) {
  Network net = linearNorm(false, false);
  net.graph.outputs.push_back({"mm", DataType::kFloat32, false, {}});
  auto applied = fuseAndCompareOutputs(kPass, runner({2, 5, 8}), net, 5);
  EXPECT_TRUE(applied.empty());
}

}  // namespace
}  // namespace kiln::test
