// fold_transposes_around_linear: a Linear over an inner axis between a Transpose and its
// inverse runs as MatMul(W^T, X) in place, with no Transpose left and the CPU reference's
// outputs of the original graph: gMLP's spatial gating unit (a Linear over the tokens, its
// bias first in the Add, the gate's Mul after), MLP-Mixer's token mixing (two Linears, a GELU
// between) and CaiT's talking heads (a Linear over the heads of [B, H, N, N] scores: X viewed as
// [B, H, N * N]). A chain with no MatMul stays, and so do tokens going back into an image
// and an image's channels moved last (ConvNeXt's permute: NHWC, free on a channels-last engine).
#include <gtest/gtest.h>

#include <string>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fold_transposes_around_linear";

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, randomFloatInputs(net));
}

// y = u * Transpose(Add(b, MatMul(Transpose(x, (0,2,1)), W)), (0,2,1)); x, u [2, 5, 6].
Network gatingUnit(bool linear = true) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, constantDims({2, 5, 6})},
              {"u", DataType::kFloat32, true, constantDims({2, 5, 6})}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {5, 5}, 1);
  g.initializers["b"] = randomTensor(DataType::kFloat32, {5}, 2);
  g.nodes.push_back(withInts(makeNode("Transpose", {"x"}, {"t"}), "perm", {0, 2, 1}));
  if (linear) {
    g.nodes.push_back(makeNode("MatMul", {"t", "w"}, {"m"}));
  } else {
    g.nodes.push_back(makeNode("Relu", {"t"}, {"m"}));
  }
  g.nodes.push_back(makeNode("Add", {"b", "m"}, {"a"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"a"}, {"back"}), "perm", {0, 2, 1}));
  g.nodes.push_back(makeNode("Mul", {"u", "back"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

TEST(FoldTransposesAroundLinear, GatingUnitsLinearOverTokens) {
  Network fused;
  // MatMul(W^T, x), the bias Add (a column), the gate's Mul.
  const auto applied = fuseAndCompareOutputs(kPass, run, gatingUnit(), 3, &fused);
  EXPECT_EQ(applied.size(), 1u);
  EXPECT_EQ(countOps(fused, "Transpose"), 0);
}

TEST(FoldTransposesAroundLinear, MixerTokenMixingTwoLinearsAndGelu) {
  Network net;
  net.opsets[""] = 20;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, constantDims({2, 5, 6})}};
  g.initializers["w1"] = randomTensor(DataType::kFloat32, {5, 7}, 1);
  g.initializers["b1"] = randomTensor(DataType::kFloat32, {7}, 2);
  g.initializers["w2"] = randomTensor(DataType::kFloat32, {7, 5}, 3);
  g.initializers["b2"] = randomTensor(DataType::kFloat32, {5}, 4);
  g.nodes.push_back(withInts(makeNode("Transpose", {"x"}, {"t"}), "perm", {0, 2, 1}));
  g.nodes.push_back(makeNode("MatMul", {"t", "w1"}, {"m1"}));
  g.nodes.push_back(makeNode("Add", {"m1", "b1"}, {"a1"}));
  g.nodes.push_back(makeNode("Gelu", {"a1"}, {"h"}, 20));
  g.nodes.push_back(makeNode("MatMul", {"h", "w2"}, {"m2"}));
  g.nodes.push_back(makeNode("Add", {"m2", "b2"}, {"a2"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"a2"}, {"back"}), "perm", {0, 2, 1}));
  g.nodes.push_back(makeNode("Add", {"x", "back"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  Network fused;
  const auto applied = fuseAndCompareOutputs(kPass, run, net, 6, &fused);
  EXPECT_EQ(applied.size(), 1u);
  EXPECT_EQ(countOps(fused, "Transpose"), 0);
  EXPECT_EQ(countOps(fused, "MatMul"), 2);
}

TEST(FoldTransposesAroundLinear, TalkingHeadsOverTheHeadsOfScores) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"q", DataType::kFloat32, true, constantDims({2, 4, 3, 5})},
              {"kt", DataType::kFloat32, true, constantDims({2, 4, 5, 3})}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {4, 4}, 1);
  g.initializers["b"] = randomTensor(DataType::kFloat32, {4}, 2);
  g.nodes.push_back(makeNode("MatMul", {"q", "kt"}, {"s"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"s"}, {"t"}), "perm", {0, 2, 3, 1}));
  g.nodes.push_back(makeNode("MatMul", {"t", "w"}, {"m"}));
  g.nodes.push_back(makeNode("Add", {"m", "b"}, {"a"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"a"}, {"back"}), "perm", {0, 3, 1, 2}));
  g.nodes.push_back(withInt(makeNode("Softmax", {"back"}, {"y"}), "axis", -1));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  Network fused;
  // Q K^T, Reshape to [2, 4, 9], MatMul, bias, Reshape back, Softmax (the bias, one value a
  // head, kept for this pass to fold: drop_softmax_invariant_add would remove it).
  const auto applied =
      fuseAndCompareOutputs(kPass, run, net, 6, &fused, {"drop_softmax_invariant_add"});
  EXPECT_EQ(applied.size(), 1u);
  EXPECT_EQ(countOps(fused, "Transpose"), 0);
}

TEST(FoldTransposesAroundLinear, ChainWithoutALinearStays) {
  // Relu and a bias between the Transposes: nothing to gain, left to sink_transposes.
  Network fused;
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, gatingUnit(false), 5, &fused).empty());
}

TEST(FoldTransposesAroundLinear, TokensBackIntoAnImageStay) {
  // SegFormer's decoder: [B, C, N] tokens, Linear over C, back to [B, C', N] and Reshape to
  // [B, C', H, W]: a free view on a channels-last engine, so the GEMM keeps its epilogue.
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, constantDims({2, 6, 4})}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {6, 5}, 1);
  g.initializers["image"] = Tensor::int64Vector({2, 5, 2, 2});
  g.nodes.push_back(withInts(makeNode("Transpose", {"x"}, {"t"}), "perm", {0, 2, 1}));
  g.nodes.push_back(makeNode("MatMul", {"t", "w"}, {"m"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"m"}, {"back"}), "perm", {0, 2, 1}));
  g.nodes.push_back(makeNode("Reshape", {"back", "image"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  Network fused;
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, net, 4, &fused).empty());
}

TEST(FoldTransposesAroundLinear, ImageChannelsMovedLastStay) {
  // [B, C, H, W] from an elementwise op (a residual stream), permuted NHWC for a Linear over
  // C and back: ConvNeXt's form, which a channels-last engine reads as it is.
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, constantDims({2, 4, 3, 3})}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {4, 4}, 1);
  g.nodes.push_back(makeNode("Relu", {"x"}, {"r"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"r"}, {"t"}), "perm", {0, 2, 3, 1}));
  g.nodes.push_back(makeNode("MatMul", {"t", "w"}, {"m"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"m"}, {"y"}), "perm", {0, 3, 1, 2}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  Network fused;
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, net, 4, &fused).empty());
}

}  // namespace
}  // namespace kiln::test
