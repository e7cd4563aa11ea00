// fold_attention_views and its view algebra: FusedAttention reads Q, K, V through strides
// from the packed QKV tensor (timm, nn.MultiheadAttention exports) and writes Y
// sequence-first; graphs run with and without the pipeline on the CPU reference give the
// same outputs; views that cannot be expressed, dynamic shapes and views that leave the
// input are refused.
#include <gtest/gtest.h>

#include "engine/passes/packed_attention_graph.h"
#include "engine/passes/pass_test_support.h"
#include "ir/fused_attention.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "passes/strided_view.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

using passes::StridedView;

TEST(StridedView, MergeOfDimsThatDoNotNestSplitsBackToStrides) {
  // [S, B, E] read from [S, B, 3E] at offset 0 (a Gather), merged to [S, B*H, D], then
  // [B*H, S, D] and [B, H, S, D]: nn.MultiheadAttention's head split.
  const int64_t s = 5, b = 2, h = 3, d = 4, e = h * d;
  StridedView v;
  ASSERT_TRUE(StridedView::contiguous({s, b, 3, e}, &v));
  ASSERT_TRUE(v.select(2, 1));
  EXPECT_EQ(v.offset(), e);
  ASSERT_TRUE(v.reshape({s, b * h, d}));
  int64_t size = 0, stride = 0;
  EXPECT_FALSE(v.simpleDim(1, &size, &stride));  // b (stride 3E) and h (stride D) do not nest
  ASSERT_TRUE(v.transpose({1, 0, 2}));
  ASSERT_TRUE(v.reshape({b, h, s, d}));
  EXPECT_EQ(v.shape(), (Shape{b, h, s, d}));
  const int64_t expected[4][2] = {{b, 3 * e}, {h, d}, {s, b * 3 * e}, {d, 1}};
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(v.simpleDim(i, &size, &stride)) << i;
    EXPECT_EQ(size, expected[i][0]) << i;
    EXPECT_EQ(stride, expected[i][1]) << i;
  }
}

TEST(StridedView, NarrowTransposeAndRefusals) {
  StridedView v;
  ASSERT_TRUE(StridedView::contiguous({3, 2, 6}, &v));
  ASSERT_TRUE(v.transpose({2, 0, 1}));  // [6, 3, 2] strides (1, 12, 6)
  ASSERT_TRUE(v.narrow(0, 2, 3));       // [3, 3, 2] at offset 2
  EXPECT_EQ(v.offset(), 2);
  EXPECT_EQ(v.shape(), (Shape{3, 3, 2}));
  EXPECT_FALSE(v.narrow(0, 2, 2));       // past the end
  EXPECT_FALSE(v.reshape({9, 3}));       // 3 x 3 x 2 = 18 elements, not 27
  EXPECT_FALSE(v.transpose({0, 0, 1}));  // not a permutation
  EXPECT_FALSE(v.select(1, 3));          // index out of range
  StridedView w;
  ASSERT_TRUE(StridedView::contiguous({6}, &w));
  EXPECT_FALSE(w.reshape({4, 2}));  // 8 elements from 6
  StridedView u;
  EXPECT_FALSE(StridedView::contiguous({2, 0}, &u));  // no empty views
}

std::vector<NamedTensor> runFeeds(const Network& net, const PackedAttentionCase& c, uint32_t seed) {
  return runOnReference(net, packedAttentionFeeds(c, seed));
}

const Node* nodeOfType(const Network& net, const std::string& op) {
  for (const Node& n : net.graph.nodes)
    if (n.opType == op) return &n;
  return nullptr;
}

// The level-1 pipeline on `c`'s graph: outputs equal the unfused graph's on two seeds.
Network fusedAndCompared(const PackedAttentionCase& c) {
  const Network original = packedAttentionNetwork(c);
  Network fused = original;
  std::vector<PassApplication> applied;
  const Status s = runPasses(fused, 1, {}, &applied);
  EXPECT_TRUE(s.isOk()) << s.toString();
  for (uint32_t seed : {3u, 11u}) {
    const auto expected = runFeeds(original, c, seed);
    const auto actual = runFeeds(fused, c, seed);
    EXPECT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size() && i < expected.size(); ++i)
      expectTensorNear(actual[i].tensor, expected[i].tensor, 1e-5, 1e-5);
  }
  return fused;
}

TEST(FoldAttentionViews, TimmPackedQkvIsReadThroughStrides) {
  PackedAttentionCase c;  // qkv [2, 37, 144] -> [2, 37, 3, 3, 16]
  const Network fused = fusedAndCompared(c);
  const Node* n = nodeOfType(fused, kFusedAttentionOp);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attrString("qkv_layout", ""), "STRIDED");
  EXPECT_EQ(n->inputs, (std::vector<std::string>{"qkv", "qkv", "qkv"}));
  const int64_t width = 3 * 3 * 16;
  // [offset, B, H, S, D, s_b, s_h, s_s]: K starts H * D in, V 2 H D.
  EXPECT_EQ(n->attrInts("q_view"), (std::vector<int64_t>{0, 2, 3, 37, 16, 37 * width, 16, width}));
  EXPECT_EQ(n->attrInts("k_view"), (std::vector<int64_t>{48, 2, 3, 37, 16, 37 * width, 16, width}));
  EXPECT_EQ(n->attrInts("v_view"), (std::vector<int64_t>{96, 2, 3, 37, 16, 37 * width, 16, width}));
  EXPECT_EQ(n->attrString(kFusionPassAttribute, ""), "fold_attention_views");
  for (const char* gone : {"Transpose", "Split", "Squeeze"})
    EXPECT_EQ(nodeOfType(fused, gone), nullptr) << gone;
  const auto sources = n->attrStrings(kSourceNodesAttribute);
  for (const char* taken : {"qkv5", "qkv_t", "q1", "q", "k", "v", "scores", "context_t", "y"})
    EXPECT_NE(std::find(sources.begin(), sources.end(), taken), sources.end()) << taken;
}

TEST(FoldAttentionViews, MultiheadAttentionSequenceFirstReadsAndWritesInPlace) {
  PackedAttentionCase c;
  c.sequenceFirst = true;  // qkv [37, 2, 144]
  const Network fused = fusedAndCompared(c);
  const Node* n = nodeOfType(fused, kFusedAttentionOp);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attrString("qkv_layout", ""), "STRIDED");
  EXPECT_EQ(n->attrString("output_layout", ""), "SBHD");
  const int64_t width = 3 * 3 * 16;
  EXPECT_EQ(n->attrInts("q_view"), (std::vector<int64_t>{0, 2, 3, 37, 16, width, 16, 2 * width}));
  EXPECT_EQ(n->attrInts("v_view"), (std::vector<int64_t>{96, 2, 3, 37, 16, width, 16, 2 * width}));
  for (const char* gone : {"Transpose", "Gather", "Squeeze", "Unsqueeze"})
    EXPECT_EQ(nodeOfType(fused, gone), nullptr) << gone;
  // Left: the head merge's Reshape, which the runtime aliases.
  EXPECT_EQ(fused.graph.nodes.size(), 2u);
}

TEST(FoldAttentionViews, HalfPrecisionStorage) {
  PackedAttentionCase c;
  c.type = DataType::kFloat16;
  c.sequenceFirst = true;
  const Network original = packedAttentionNetwork(c);
  Network fused = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
  ASSERT_NE(nodeOfType(fused, kFusedAttentionOp), nullptr);
  EXPECT_EQ(nodeOfType(fused, kFusedAttentionOp)->attrString("qkv_layout", ""), "STRIDED");
  const auto expected = runFeeds(original, c, 5);
  const auto actual = runFeeds(fused, c, 5);
  ASSERT_EQ(actual.size(), 1u);
  expectTensorNear(castTensor(actual[0].tensor, DataType::kFloat32),
                   castTensor(expected[0].tensor, DataType::kFloat32), 2e-3, 2e-2);
}

TEST(FoldAttentionViews, DynamicBatchKeepsTheChain) {
  PackedAttentionCase c;
  c.symbolicBatch = true;
  const Network fused = fusedAndCompared(c);
  const Node* n = nodeOfType(fused, kFusedAttentionOp);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attrString("qkv_layout", ""), "BHSD");
  EXPECT_NE(nodeOfType(fused, "Transpose"), nullptr);
}

TEST(FoldAttentionViews, AChainNodeReadElsewhereStays) {
  PackedAttentionCase c;
  Network net = packedAttentionNetwork(c);
  // The packed Transpose's output is also a graph output: it stays, the views still fold.
  net.graph.outputs.push_back({"qkv_t", c.type, false, {}});
  Network fused = net;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
  const Node* n = nodeOfType(fused, kFusedAttentionOp);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attrString("qkv_layout", ""), "STRIDED");
  ASSERT_NE(nodeOfType(fused, "Transpose"), nullptr);
  const auto expected = runFeeds(net, c, 2);
  const auto actual = runFeeds(fused, c, 2);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    expectTensorNear(actual[i].tensor, expected[i].tensor, 1e-5, 1e-5);
}

TEST(FoldAttentionViews, DisabledByName) {
  PackedAttentionCase c;
  Network fused = packedAttentionNetwork(c);
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {"fold_attention_views"}, &applied).isOk());
  const Node* n = nodeOfType(fused, kFusedAttentionOp);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attrString("qkv_layout", ""), "BHSD");
}

// A STRIDED node whose view leaves its input is refused before any read, naming the view.
TEST(FusedAttentionStrided, ViewOutsideTheInputIsRefused) {
  Network net;
  net.opsets[""] = 17;
  net.opsets[kKilnDomain] = 1;
  net.graph.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(8), DimExpr(12)}}};
  Node n = makeNode(kFusedAttentionOp, {"x", "x", "x"}, {"y"}, 1);
  n.domain = kKilnDomain;
  n = withString(n, "qkv_layout", "STRIDED");
  n = withInt(n, "num_heads", 1);
  n = withInts(n, "q_view", {0, 2, 1, 8, 4, 96, 4, 12});
  n = withInts(n, "k_view", {4, 2, 1, 8, 4, 96, 4, 12});
  n = withInts(n, "v_view", {9, 2, 1, 8, 4, 96, 4, 12});  // last element 9 + 96 + 84 + 3 = 192
  net.graph.nodes = {n};
  net.graph.outputs = {{"y", DataType::kFloat32, false, {}}};
  std::map<std::string, Tensor> feeds = {
      {"x", randomTensor(DataType::kFloat32, {2, 8, 12}, 1, -1.0, 1.0)}};
  std::vector<NamedTensor> out;
  const Status refused = ReferenceBackend(net).run(feeds, &out);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.message().find("v_view reaches element 192, outside input 'V'"),
            std::string::npos)
      << refused.toString();
  // In bounds (V at offset 8), it runs.
  net.graph.nodes[0] = withInts(n, "v_view", {8, 2, 1, 8, 4, 96, 4, 12});
  out.clear();
  const Status ran = ReferenceBackend(net).run(feeds, &out);
  ASSERT_TRUE(ran.isOk()) << ran.toString();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tensor.shape(), (Shape{2, 8, 1, 4}));
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

TEST(FuseAttention, SwinShiftedWindowMaskIsOneLayerWithAPeriodicMask) {
  const WindowAttentionCase c;
  const Network original = windowAttentionNetwork(c);
  Network fused = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
  const Node* n = nodeOfType(fused, kFusedAttentionOp);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(fused.graph.nodes.size(), 1u);
  EXPECT_EQ(n->attrInt("mask_batch_period", 0), c.windows);
  ASSERT_EQ(n->inputs.size(), 4u);
  const Tensor& mask = fused.graph.initializers.at(n->inputs[3]);
  EXPECT_EQ(mask.shape(), (Shape{c.windows, c.heads, c.seq, c.seq}));
  // Window 1, head 2, row 0: Bias[0, 2, 0, j] + W[0, 1, 0, 0, j].
  const Tensor& bias = original.graph.initializers.at("bias");
  const Tensor& w = original.graph.initializers.at("window_mask");
  for (int64_t j = 0; j < c.seq; ++j)
    EXPECT_FLOAT_EQ(mask.data<float>()[((1 * c.heads + 2) * c.seq + 0) * c.seq + j],
                    bias.data<float>()[(2 * c.seq + 0) * c.seq + j] +
                        w.data<float>()[(1 * c.seq + 0) * c.seq + j]);
  for (uint32_t seed : {4u, 9u}) {
    const auto expected = runOnReference(original, windowAttentionFeeds(c, seed));
    const auto actual = runOnReference(fused, windowAttentionFeeds(c, seed));
    ASSERT_EQ(actual.size(), 1u);
    expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-5);
  }
}

TEST(FuseAttention, AWindowMaskThatDependsOnTheImageDoesNotFuse) {
  WindowAttentionCase c;
  Network net = windowAttentionNetwork(c);
  // W [I, P, 1, N, N]: a mask per image cannot be read modulo the windows.
  net.graph.initializers["window_mask"] =
      randomTensor(DataType::kFloat32, {c.images, c.windows, 1, c.seq, c.seq}, 5);
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(net, 1, {}, &applied).isOk());
  EXPECT_EQ(nodeOfType(net, kFusedAttentionOp), nullptr);
}

}  // namespace
}  // namespace kiln::test
