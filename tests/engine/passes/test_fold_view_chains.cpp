// fold_view_chains: tokens [B, N, C] turned into an image (Transpose, Reshape) and
// reformatted to NHWC are the tokens' own bytes, so the three become one Reshape, and the
// way back too; with a depthwise convolution between them (SegFormer's Mix-FFN) a
// channels-last build keeps no Transpose at all. A channel shuffle between two reformats
// (three Transposes) becomes one Transpose of the channels' two factors (and between
// channels-last convolutions the layout keeps it one such Transpose). The outputs stay the CPU
// reference's. A chain with one Transpose, or whose reshape does not split and merge whole factors,
// stays.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fold_view_chains";

// x of `in` -> Transpose(p1) -> Reshape(to) -> Transpose(p2) -> y.
Network chain(const Shape& in, const std::vector<int64_t>& p1, const std::vector<int64_t>& to,
              const std::vector<int64_t>& p2) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  SymbolicShape dims;
  for (int64_t d : in) dims.push_back(DimExpr(d));
  g.inputs = {{"x", DataType::kFloat32, true, dims}};
  g.initializers["to"] = Tensor::int64Vector(to);
  g.nodes.push_back(withInts(makeNode("Transpose", {"x"}, {"t1"}), "perm", p1));
  g.nodes.push_back(makeNode("Reshape", {"t1", "to"}, {"r"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"r"}, {"y"}), "perm", p2));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

NetworkRunner runner(const Shape& shape) {
  return [shape](const Network& net) {
    return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, shape, 5)}});
  };
}

TEST(FoldViewChains, TokensToNhwcImageAndBackAreReshapes) {
  // [2, 12, 8] -> [2, 8, 12] -> [2, 8, 3, 4] -> [2, 3, 4, 8]: the same bytes.
  Network fused;
  auto applied =
      fuseAndCompareOutputs(kPass, runner({2, 12, 8}),
                            chain({2, 12, 8}, {0, 2, 1}, {2, 8, 3, 4}, {0, 2, 3, 1}), 1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(fused.graph.nodes[0].opType, "Reshape");
  // [2, 3, 4, 8] NHWC -> NCHW -> [2, 8, 12] -> [2, 12, 8]: back to tokens.
  applied = fuseAndCompareOutputs(kPass, runner({2, 3, 4, 8}),
                                  chain({2, 3, 4, 8}, {0, 3, 1, 2}, {2, 8, 12}, {0, 2, 1}), 1);
  ASSERT_EQ(applied.size(), 1u);
  // Size-1 axes do not count: [1, 6, 4] -> [1, 4, 6] -> [1, 4, 1, 2, 3] -> [1, 1, 2, 3, 4].
  applied = fuseAndCompareOutputs(kPass, runner({1, 6, 4}),
                                  chain({1, 6, 4}, {0, 2, 1}, {1, 4, 1, 2, 3}, {0, 2, 3, 4, 1}), 1);
  ASSERT_EQ(applied.size(), 1u);
}

int count(const Network& net, const std::string& op) {
  return static_cast<int>(std::count_if(net.graph.nodes.begin(), net.graph.nodes.end(),
                                        [&](const Node& n) { return n.opType == op; }));
}

// x NHWC [2, 3, 4, 8] -> reformat to NCHW -> view [2, 2, 4, 3, 4] -> transpose(1, 2) ->
// view [2, 8, 3, 4] -> reformat to NHWC -> y: ShuffleNet's channel shuffle in an NHWC region.
Network nhwcShuffle() {
  Network net = chain({2, 3, 4, 8}, {0, 3, 1, 2}, {2, 2, 4, 3, 4}, {0, 2, 1, 3, 4});
  Graph& g = net.graph;
  g.initializers["merged"] = Tensor::int64Vector({2, 8, 3, 4});
  g.nodes.back().outputs = {"shuffled"};
  g.nodes.push_back(makeNode("Reshape", {"shuffled", "merged"}, {"nchw"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"nchw"}, {"y"}), "perm", {0, 2, 3, 1}));
  return net;
}

TEST(FoldViewChains, ChannelShuffleBetweenReformatsIsOneTranspose) {
  Network fused;
  auto applied = fuseAndCompareOutputs(kPass, runner({2, 3, 4, 8}), nhwcShuffle(), 3, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes.size(), 5u);
  EXPECT_EQ(count(fused, "Transpose"), 1);
  for (const Node& n : fused.graph.nodes)
    if (n.opType == "Transpose") EXPECT_EQ(n.attrInts("perm"), (std::vector<int64_t>{0, 2, 1}));
  // H and W swapped on the way: the elements move, one Transpose does it (after a Reshape
  // that splits N into H and W; its output has y's shape already).
  applied =
      fuseAndCompareOutputs(kPass, runner({2, 12, 8}),
                            chain({2, 12, 8}, {0, 2, 1}, {2, 8, 3, 4}, {0, 3, 2, 1}), 2, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(count(fused, "Transpose"), 1);
}

TEST(FoldViewChains, ChainsThatMoveElementsStay) {
  // One Transpose already (a channel shuffle in NCHW): nothing to gain.
  Network shuffle = chain({2, 8, 3, 4}, {0, 1, 2, 3}, {2, 2, 4, 3, 4}, {0, 2, 1, 3, 4});
  shuffle.graph.nodes.erase(shuffle.graph.nodes.begin());
  shuffle.graph.nodes[0].inputs[0] = "x";
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, runner({2, 8, 3, 4}), shuffle, 2).empty());
  // [2, 10, 6] -> [2, 4, 15]: 10 and 6 share no split with 4 and 15.
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, runner({2, 6, 10}),
                                    chain({2, 6, 10}, {0, 2, 1}, {2, 4, 15}, {0, 2, 1}), 3)
                  .empty());
}

TEST(FoldViewChains, ChainInsideAnotherChainsSpanFoldsToo) {
  // x's chain is nodes 0, 4 and 5 (a stage's output viewed by a decoder later on); z's chain,
  // nodes 1-3, lies between them and folds as well.
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  const SymbolicShape tokens = {DimExpr(2), DimExpr(12), DimExpr(8)};
  g.inputs = {{"x", DataType::kFloat32, true, tokens}, {"z", DataType::kFloat32, true, tokens}};
  g.initializers["image"] = Tensor::int64Vector({2, 8, 3, 4});
  g.nodes.push_back(withInts(makeNode("Transpose", {"x"}, {"x1"}), "perm", {0, 2, 1}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"z"}, {"z1"}), "perm", {0, 2, 1}));
  g.nodes.push_back(makeNode("Reshape", {"z1", "image"}, {"z2"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"z2"}, {"zy"}), "perm", {0, 2, 3, 1}));
  g.nodes.push_back(makeNode("Reshape", {"x1", "image"}, {"x2"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"x2"}, {"xy"}), "perm", {0, 2, 3, 1}));
  g.outputs = {{"zy", DataType::kFloat32, false, {}}, {"xy", DataType::kFloat32, false, {}}};
  auto run = [](const Network& n) {
    return runOnReference(n, {{"x", randomTensor(DataType::kFloat32, {2, 12, 8}, 5)},
                              {"z", randomTensor(DataType::kFloat32, {2, 12, 8}, 6)}});
  };
  Network fused;
  EXPECT_EQ(fuseAndCompareOutputs(kPass, run, net, 2, &fused).size(), 2u);
  EXPECT_EQ(count(fused, "Transpose"), 0);
}

// A stage's output: tokens x [2, 12, 8] -> Reshape [2, 3, 4, 8] -> Transpose (0, 3, 1, 2),
// read by the next stage's reformat to NHWC and by a decoder's view back to tokens
// (Reshape [2, 8, 12], Transpose (0, 2, 1)); with `sideReader` also by a Relu.
Network sharedStageOutput(bool sideReader) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(12), DimExpr(8)}}};
  g.initializers["image"] = Tensor::int64Vector({2, 3, 4, 8});
  g.initializers["flat"] = Tensor::int64Vector({2, 8, 12});
  g.nodes.push_back(makeNode("Reshape", {"x", "image"}, {"nhwc"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"nhwc"}, {"stage"}), "perm", {0, 3, 1, 2}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"stage"}, {"next"}), "perm", {0, 2, 3, 1}));
  g.nodes.push_back(makeNode("Reshape", {"stage", "flat"}, {"channels"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"channels"}, {"tokens"}), "perm", {0, 2, 1}));
  g.outputs = {{"next", DataType::kFloat32, false, {}}, {"tokens", DataType::kFloat32, false, {}}};
  if (sideReader) {
    g.nodes.push_back(makeNode("Relu", {"stage"}, {"side"}));
    g.outputs.push_back({"side", DataType::kFloat32, false, {}});
  }
  return net;
}

TEST(FoldViewChains, ViewReadByTwoChainsIsCopiedForEach) {
  // Copied once per reader, each chain is x's own bytes: the first Reshape and one Reshape
  // per reader, no Transpose.
  Network fused;
  auto applied =
      fuseAndCompareOutputs(kPass, runner({2, 12, 8}), sharedStageOutput(false), 3, &fused);
  EXPECT_EQ(applied.size(), 2u);
  EXPECT_EQ(count(fused, "Transpose"), 0);
  // A reader that is no view (the Relu) needs the shared Transpose: nothing is copied and
  // nothing folds.
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, runner({2, 12, 8}), sharedStageOutput(true), 6).empty());
}

TEST(FoldViewChains, ChainOfRunsAndTilesDoesNotBecomeAGather) {
  // SegFormer's spatial reduction as patch rows: tokens [2, 256, 32] -> image [2, 32, 16, 16]
  // (a tiled transpose) -> patches [2, 2, 2, 32, 8, 8] (runs of 8 move). As one Transpose
  // the channels (innermost in x) would go to the middle and 8-element rows innermost: a
  // gather of single elements, so the two stay.
  Network patches = chain({2, 256, 32}, {0, 2, 1}, {2, 32, 2, 8, 2, 8}, {0, 2, 4, 1, 3, 5});
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, runner({2, 256, 32}), patches, 3).empty());
  // The same chain whose first Transpose gathers already ([2, 4, 6, 8] -> [6, 2, 8, 4]):
  // merged, one gather instead of a gather and a copy.
  Network gathers = chain({2, 4, 6, 8}, {2, 0, 3, 1}, {6, 2, 2, 4, 4}, {0, 1, 2, 4, 3});
  Network fused;
  ASSERT_EQ(fuseAndCompareOutputs(kPass, runner({2, 4, 6, 8}), gathers, 2, &fused).size(), 1u);
  EXPECT_EQ(count(fused, "Transpose"), 1);
}

// Tokens [2, 12, 8] -> image [2, 8, 3, 4] -> depthwise 3x3 conv -> tokens -> y. A
// channels-last build reformats around the convolution; every Transpose then folds away.
Network mixFfn() {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(12), DimExpr(8)}}};
  g.initializers["image"] = Tensor::int64Vector({2, 8, 3, 4});
  g.initializers["tokens"] = Tensor::int64Vector({2, 8, 12});
  g.initializers["w"] = randomTensor(DataType::kFloat32, {8, 1, 3, 3}, 6);
  g.initializers["b"] = randomTensor(DataType::kFloat32, {8}, 7);
  g.nodes.push_back(withInts(makeNode("Transpose", {"x"}, {"t"}), "perm", {0, 2, 1}));
  g.nodes.push_back(makeNode("Reshape", {"t", "image"}, {"img"}));
  Node conv = withInts(makeNode("Conv", {"img", "w", "b"}, {"c"}), "pads", {1, 1, 1, 1});
  g.nodes.push_back(withInt(conv, "group", 8));
  g.nodes.push_back(makeNode("Reshape", {"c", "tokens"}, {"flat"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"flat"}, {"y"}), "perm", {0, 2, 1}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

// x [2, 8, 3, 4] -> 1x1 conv -> channel shuffle (2 groups) -> 1x1 conv -> y.
Network shuffleBlock() {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(8), DimExpr(3), DimExpr(4)}}};
  g.initializers["w1"] = randomTensor(DataType::kFloat32, {8, 8, 1, 1}, 8);
  g.initializers["w2"] = randomTensor(DataType::kFloat32, {8, 8, 1, 1}, 9);
  g.initializers["groups"] = Tensor::int64Vector({2, 2, 4, 3, 4});
  g.initializers["merged"] = Tensor::int64Vector({2, 8, 3, 4});
  g.nodes.push_back(makeNode("Conv", {"x", "w1"}, {"c1"}));
  g.nodes.push_back(makeNode("Reshape", {"c1", "groups"}, {"g"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"g"}, {"t"}), "perm", {0, 2, 1, 3, 4}));
  g.nodes.push_back(makeNode("Reshape", {"t", "merged"}, {"s"}));
  g.nodes.push_back(makeNode("Conv", {"s", "w2"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

TEST(FoldViewChains, ChannelShuffleBetweenChannelsLastConvolutionsIsOneTranspose) {
  const Network original = shuffleBlock();
  Network nhwc = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(nhwc, 2, {}, &applied, /*channelsLast=*/true).isOk());
  // x in and y out are reformats; the shuffle between the convolutions one Transpose of
  // the innermost axis's two factors (channels_last_layout keeps it in the region, so no
  // chain is left for this pass).
  EXPECT_EQ(count(nhwc, "Transpose"), 3);
  int innermost = 0;
  for (const Node& n : nhwc.graph.nodes)
    innermost +=
        n.opType == "Transpose" && n.attrInts("perm") == std::vector<int64_t>{0, 1, 2, 4, 3};
  EXPECT_EQ(innermost, 1);
  const auto run = runner({2, 8, 3, 4});
  const auto want = run(original), got = run(nhwc);
  ASSERT_EQ(want.size(), got.size());
  expectTensorNear(got[0].tensor, want[0].tensor, 1e-5, 1e-5);
}

TEST(FoldViewChains, ChannelsLastConvolutionBetweenTokensKeepsNoTranspose) {
  const Network original = mixFfn();
  Network nhwc = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(nhwc, 2, {}, &applied, /*channelsLast=*/true).isOk());
  EXPECT_EQ(std::count_if(applied.begin(), applied.end(),
                          [](const PassApplication& a) { return a.pass == kPass; }),
            2);
  for (const Node& n : nhwc.graph.nodes) EXPECT_NE(n.opType, "Transpose") << n.displayName();
  const auto run = runner({2, 12, 8});
  const auto want = run(original), got = run(nhwc);
  ASSERT_EQ(want.size(), got.size());
  expectTensorNear(got[0].tensor, want[0].tensor, 1e-5, 1e-5);
}

}  // namespace
}  // namespace kiln::test
