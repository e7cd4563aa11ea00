// patch_conv_as_matmul: a ViT patch embedding (Conv with stride = kernel, read into
// tokens by Reshape + Transpose) becomes patch rows and one GEMM with its bias, with
// the CPU reference's outputs unchanged; at a symbolic batch too. When the image is a
// channels-first view of channels-last data (NHWC transposed, or tokens turned into an
// image), the patch rows read that data in (kh, kw, C) order. A padded, overlapping
// or grouped convolution, and a Conv output read elsewhere, stay.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "patch_conv_as_matmul";

struct PatchCase {
  int64_t kernel = 4, stride = 4, group = 1, pad = 0;
  bool bias = true, symbolicBatch = false, tapConv = false;
  std::vector<int64_t> perm = {0, 2, 1};
};

// x [2, 4, 8, 12] -> Conv(W [6, 4 / group, k, k], b [6]) -> Reshape [N, 6, P] ->
// Transpose(perm) -> + r -> y; with tapConv the Conv's output is a graph output too.
Network patchEmbedding(const PatchCase& c) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  const DimExpr batch = c.symbolicBatch ? DimExpr::symbol("N") : DimExpr(2);
  g.inputs = {{"x", DataType::kFloat32, true, {batch, DimExpr(4), DimExpr(8), DimExpr(12)}}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {6, 4 / c.group, c.kernel, c.kernel}, 1);
  g.initializers["b"] = randomTensor(DataType::kFloat32, {6}, 2);
  g.initializers["r"] = randomTensor(DataType::kFloat32, {6}, 3);
  g.initializers["flat"] = Tensor::int64Vector({0, 6, -1});
  std::vector<std::string> convInputs = {"x", "w"};
  if (c.bias) convInputs.push_back("b");
  Node conv = withInts(makeNode("Conv", convInputs, {"conv"}), "strides", {c.stride, c.stride});
  conv = withInts(conv, "kernel_shape", {c.kernel, c.kernel});
  conv = withInts(conv, "pads", {c.pad, c.pad, c.pad, c.pad});
  if (c.group != 1) conv = withInt(conv, "group", c.group);
  g.nodes.push_back(conv);
  g.nodes.push_back(makeNode("Reshape", {"conv", "flat"}, {"flattened"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"flattened"}, {"tokens"}), "perm", c.perm));
  g.nodes.push_back(makeNode("Add", {"tokens", "r"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  if (c.tapConv) g.outputs.push_back({"conv", DataType::kFloat32, false, {}});
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 4, 8, 12}, 4)}});
}

TEST(PatchConvAsMatMul, PatchEmbeddingBecomesPatchRowsAndOneGemm) {
  for (bool bias : {true, false})
    for (bool symbolicBatch : {false, true}) {
      SCOPED_TRACE(std::string(bias ? "with" : "without") + " bias, " +
                   (symbolicBatch ? "symbolic" : "fixed") + " batch");
      PatchCase c;
      c.bias = bias;
      c.symbolicBatch = symbolicBatch;
      Network fused;
      // Reshape (grid), Transpose (patches), Reshape (rows), FusedMatMul or MatMul,
      // Reshape (tokens), Add.
      auto applied = fuseAndCompareOutputs(kPass, run, patchEmbedding(c), 6, &fused);
      ASSERT_EQ(applied.size(), 1u);
      EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"conv", "flattened", "tokens"}));
      const Graph& g = fused.graph;
      EXPECT_EQ(g.nodes[1].attrInts("perm"), (std::vector<int64_t>{0, 2, 4, 1, 3, 5}));
      EXPECT_EQ(g.nodes[3].opType, bias ? "FusedMatMul" : "MatMul");
      // The GEMM stands for the Conv; the tokens' Reshape for the model's Reshape + Transpose.
      EXPECT_EQ(g.nodes[3].attrStrings(kSourceNodesAttribute)[0], "conv");
      EXPECT_EQ(g.nodes[4].attrStrings(kSourceNodesAttribute),
                (std::vector<std::string>{"flattened", "tokens"}));
      EXPECT_EQ(g.nodes[4].outputs[0], "tokens");
    }
}

// x [2, 4, 8, 12] as a view of channels-last s: s [2, 8, 12, 4] -> Transpose (0, 3, 1, 2),
// or tokens s [2, 96, 4] -> Transpose (0, 2, 1) -> Reshape [2, 4, 8, 12]; then as above.
Network channelsLastPatchEmbedding(bool tokens) {
  Network net = patchEmbedding(PatchCase{});
  Graph& g = net.graph;
  const Shape source = tokens ? Shape{2, 96, 4} : Shape{2, 8, 12, 4};
  g.inputs = {{"s", DataType::kFloat32, true, {}}};
  for (int64_t d : source) g.inputs[0].shape.push_back(DimExpr(d));
  std::vector<Node> view;
  if (tokens) {
    g.initializers["image"] = Tensor::int64Vector({2, 4, 8, 12});
    view.push_back(withInts(makeNode("Transpose", {"s"}, {"channels"}), "perm", {0, 2, 1}));
    view.push_back(makeNode("Reshape", {"channels", "image"}, {"x"}));
  } else {
    view.push_back(withInts(makeNode("Transpose", {"s"}, {"x"}), "perm", {0, 3, 1, 2}));
  }
  g.nodes.insert(g.nodes.begin(), view.begin(), view.end());
  return net;
}

TEST(PatchConvAsMatMul, ChannelsLastSourceGivesPatchRowsInItsOrder) {
  for (bool tokens : {false, true}) {
    SCOPED_TRACE(tokens ? "tokens" : "NHWC image");
    const Shape source = tokens ? Shape{2, 96, 4} : Shape{2, 8, 12, 4};
    auto runSource = [&](const Network& net) {
      return runOnReference(net, {{"s", randomTensor(DataType::kFloat32, source, 4)}});
    };
    Network fused;
    // The view of s is read by nothing else and goes.
    auto applied =
        fuseAndCompareOutputs(kPass, runSource, channelsLastPatchEmbedding(tokens), 6, &fused);
    ASSERT_EQ(applied.size(), 1u);
    const Graph& g = fused.graph;
    const Node& grid = g.nodes[0];
    EXPECT_EQ(grid.inputs[0], "s");
    EXPECT_EQ(g.initializers.at(grid.inputs[1]).toInt64Vector(),
              (std::vector<int64_t>{-1, 2, 4, 3, 4, 4}));
    EXPECT_EQ(g.nodes[1].attrInts("perm"), (std::vector<int64_t>{0, 1, 3, 2, 4, 5}));
  }
}

TEST(PatchConvAsMatMul, OtherConvolutionsStay) {
  PatchCase overlapping;  // stride 2 under a 4 x 4 kernel: patches overlap
  overlapping.stride = 2;
  PatchCase padded;
  padded.pad = 2;
  PatchCase grouped;
  grouped.group = 2;
  PatchCase pointwise;  // a 1 x 1 convolution is no patch embedding
  pointwise.kernel = pointwise.stride = 1;
  PatchCase tapped;
  tapped.tapConv = true;
  PatchCase otherPerm;  // the Transpose keeps channels first
  otherPerm.perm = {0, 1, 2};
  for (const PatchCase& c : {overlapping, padded, grouped, pointwise, tapped, otherPerm}) {
    SCOPED_TRACE("kernel " + std::to_string(c.kernel) + " stride " + std::to_string(c.stride) +
                 " pad " + std::to_string(c.pad) + " group " + std::to_string(c.group));
    Network fused = patchEmbedding(c);
    std::vector<PassApplication> applied;
    ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
    for (const PassApplication& a : applied) EXPECT_NE(a.pass, kPass);
  }
}

}  // namespace
}  // namespace kiln::test
