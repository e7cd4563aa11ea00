// fold_sequence_first_transposes: nn.MultiheadAttention(batch_first=True)'s copies to and
// from sequence-first order go (the in-projection reads the block's input, the attention's
// views absorb the order, the attention writes batch-first); graphs run with and without the
// pipeline on the CPU reference give the same outputs; views that would carry, dynamic
// shapes and a projection read elsewhere keep their Transposes.
#include <gtest/gtest.h>

#include <algorithm>

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

using passes::viewOverTransposedBase;

TEST(ViewOverTransposedBase, SequenceFirstPackedQkvBecomesBatchFirst) {
  // X [S, B, 3E] = Transpose(X' [B, S, 3E], (1, 0, 2)); Q, K, V at offsets 0, E, 2E.
  const int64_t s = 7, b = 2, h = 3, d = 4, e = h * d;
  for (int64_t part = 0; part < 3; ++part) {
    std::vector<int64_t> view = {part * e, b, h, s, d, 3 * e, d, b * 3 * e};
    ASSERT_TRUE(viewOverTransposedBase({s, b, 3 * e}, {1, 0, 2}, &view)) << part;
    EXPECT_EQ(view, (std::vector<int64_t>{part * e, b, h, s, d, s * 3 * e, d, 3 * e})) << part;
  }
}

TEST(ViewOverTransposedBase, OffsetsInOuterDimsMoveWithTheirDim) {
  // An offset of one row (s = 1) of X [S, B, C] is one row of X' [B, S, C]'s dim 1.
  const int64_t s = 5, b = 3, c = 8;
  std::vector<int64_t> view = {b * c + 2, b, 1, s - 1, 4, c, 0, b * c};
  ASSERT_TRUE(viewOverTransposedBase({s, b, c}, {1, 0, 2}, &view));
  EXPECT_EQ(view, (std::vector<int64_t>{c + 2, b, 1, s - 1, 4, s * c, 0, c}));
}

TEST(ViewOverTransposedBase, RefusesCarriesAndMovedFeatures) {
  const int64_t s = 5, b = 3, c = 8;
  // The sequence dim steps one row of B: it carries into dim 0 (S) after b rows.
  std::vector<int64_t> carry = {0, 1, 1, s * b, c, 0, 0, c};
  const std::vector<int64_t> before = carry;
  EXPECT_FALSE(viewOverTransposedBase({s, b, c}, {1, 0, 2}, &carry));
  EXPECT_EQ(carry, before);
  // Heads and features together past the row's end.
  std::vector<int64_t> wide = {4, b, 2, s, 4, c, 4, b * c};
  EXPECT_FALSE(viewOverTransposedBase({s, b, c}, {1, 0, 2}, &wide));
  // A perm that moves the feature axis.
  std::vector<int64_t> view = {0, b, 1, s, c, c, 0, b * c};
  EXPECT_FALSE(viewOverTransposedBase({s, b, c}, {2, 1, 0}, &view));
  // An offset outside X.
  std::vector<int64_t> outside = {s * b * c, 1, 1, 1, 1, 0, 0, 0};
  EXPECT_FALSE(viewOverTransposedBase({s, b, c}, {1, 0, 2}, &outside));
}

PackedAttentionCase batchFirstCase() {
  PackedAttentionCase c;
  c.sequenceFirst = true;
  c.batchFirstProjections = true;
  return c;
}

int countOf(const Network& net, const std::string& op) {
  return static_cast<int>(std::count_if(net.graph.nodes.begin(), net.graph.nodes.end(),
                                        [&](const Node& n) { return n.opType == op; }));
}

const Node* nodeOfType(const Network& net, const std::string& op) {
  for (const Node& n : net.graph.nodes)
    if (n.opType == op) return &n;
  return nullptr;
}

// The level-1 pipeline (without `disabled`) on `c`'s graph; outputs equal the unfused
// graph's on two seeds within `tolerance`.
Network fusedAndCompared(const Network& original, const PackedAttentionCase& c,
                         const std::vector<std::string>& disabled = {}, double tolerance = 1e-4,
                         std::vector<PassApplication>* appliedOut = nullptr) {
  Network fused = original;
  std::vector<PassApplication> applied;
  const Status status = runPasses(fused, 1, disabled, &applied);
  EXPECT_TRUE(status.isOk()) << status.toString();
  for (uint32_t seed : {3u, 11u}) {
    const auto expected = runOnReference(original, packedAttentionFeeds(c, seed));
    const auto actual = runOnReference(fused, packedAttentionFeeds(c, seed));
    EXPECT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
      EXPECT_EQ(actual[i].tensor.shape(), expected[i].tensor.shape());
      expectTensorNear(castTensor(actual[i].tensor, DataType::kFloat32),
                       castTensor(expected[i].tensor, DataType::kFloat32), tolerance, tolerance);
    }
  }
  if (appliedOut) *appliedOut = applied;
  return fused;
}

TEST(FoldSequenceFirstTransposes, BothCopiesGoAndTheAttentionWritesBatchFirst) {
  const PackedAttentionCase c = batchFirstCase();
  std::vector<PassApplication> applied;
  const Network fused = fusedAndCompared(packedAttentionNetwork(c), c, {}, 1e-4, &applied);
  EXPECT_EQ(countOf(fused, "Transpose"), 0);
  const Node* a = nodeOfType(fused, kFusedAttentionOp);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->attrString("qkv_layout", ""), "STRIDED");
  EXPECT_EQ(a->attrString("output_layout", ""), "BSHD");
  const int64_t e = c.heads * c.headDim, width = 3 * e;
  // Q, K, V read batch-first from the in-projection's [B, S, 3E].
  EXPECT_EQ(a->attrInts("q_view"), (std::vector<int64_t>{0, c.batch, c.heads, c.seq, c.headDim,
                                                         c.seq * width, c.headDim, width}));
  EXPECT_EQ(a->attrInts("v_view"), (std::vector<int64_t>{2 * e, c.batch, c.heads, c.seq, c.headDim,
                                                         c.seq * width, c.headDim, width}));
  // The in-projection reads the graph input itself.
  bool inProjectionReadsX = false;
  for (const Node& n : fused.graph.nodes)
    if (n.opType == "FusedMatMul" && n.inputs[0] == "x") inProjectionReadsX = true;
  EXPECT_TRUE(inProjectionReadsX);
  EXPECT_EQ(std::count_if(applied.begin(), applied.end(),
                          [](const PassApplication& p) {
                            return p.pass == "fold_sequence_first_transposes";
                          }),
            2);
}

TEST(FoldSequenceFirstTransposes, HalfPrecisionStorage) {
  PackedAttentionCase c = batchFirstCase();
  c.type = DataType::kFloat16;
  const Network fused = fusedAndCompared(packedAttentionNetwork(c), c, {}, 3e-2);
  EXPECT_EQ(countOf(fused, "Transpose"), 0);
}

// A symbolic batch on the block's input: the in-projection's output has no static shape, so
// its Transpose stays (the head split's fixed Reshapes make the rest static: the output side
// still goes, and the outputs still match).
TEST(FoldSequenceFirstTransposes, SymbolicInputKeepsTheInputCopy) {
  PackedAttentionCase c = batchFirstCase();
  c.symbolicBatch = true;
  const Network fused = fusedAndCompared(packedAttentionNetwork(c), c);
  ASSERT_NE(nodeOfType(fused, kFusedAttentionOp), nullptr);
  bool inputCopy = false;
  for (const Node& n : fused.graph.nodes)
    inputCopy = inputCopy || (n.opType == "Transpose" && n.inputs[0] == "x");
  EXPECT_TRUE(inputCopy);
}

TEST(FoldSequenceFirstTransposes, AProjectionReadElsewhereKeepsItsInputCopy) {
  const PackedAttentionCase c = batchFirstCase();
  Network net = packedAttentionNetwork(c);
  net.graph.outputs.push_back({"qkv", c.type, false, {}});  // the projection, read outside
  const Network fused = fusedAndCompared(net, c);
  // The input side stays (its Transpose feeds the projection); the output side still goes.
  EXPECT_EQ(countOf(fused, "Transpose"), 1);
  const Node* a = nodeOfType(fused, kFusedAttentionOp);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->attrString("output_layout", ""), "BSHD");
}

TEST(FoldSequenceFirstTransposes, DisabledByName) {
  const PackedAttentionCase c = batchFirstCase();
  const Network fused =
      fusedAndCompared(packedAttentionNetwork(c), c, {"fold_sequence_first_transposes"});
  EXPECT_EQ(countOf(fused, "Transpose"), 2);
  const Node* a = nodeOfType(fused, kFusedAttentionOp);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->attrString("output_layout", ""), "SBHD");
}

}  // namespace
}  // namespace kiln::test
