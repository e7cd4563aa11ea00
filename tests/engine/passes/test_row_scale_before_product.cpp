// row_scale_before_product: SwinV2's cosine attention (normalized Q and K, a per-head logit
// scale [H, 1, 1] on the scores, a relative-position bias, softmax) fuses into one
// FusedAttention once the scale moves onto Q; the CPU reference's output of the rewritten graph
// equals the original's on random non-zero data. A per-key scale (last dim not 1), a scale that
// would broadcast Q up a rank, a product with constant weights and a Q wider than the scores
// stay as they are.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "row_scale_before_product";
constexpr int64_t kBatch = 2, kHeads = 3, kSeq = 5, kDim = 4;

// q, k, v [B, H, S, D] -> (q * s?) then scores = MatMul(q, Transpose(k)) -> Mul(scores, scale)
// -> Add(bias [1, H, S, S]) -> Softmax -> MatMul(., v) -> out. `scaleShape` is the scale's.
// With `scaleNode`, the scale is a Constant node placed between the product and the Mul (as
// older exporters place them), not an initializer.
Network cosineAttention(const Shape& scaleShape, bool constantKey = false, bool scaleNode = false,
                        int64_t headSize = kDim) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  const std::vector<DimExpr> dims = {kBatch, kHeads, kSeq, headSize};
  g.inputs = {{"q", DataType::kFloat32, true, dims}, {"v", DataType::kFloat32, true, dims}};
  if (constantKey) {
    g.initializers["kt"] =
        randomTensor(DataType::kFloat32, {kBatch, kHeads, headSize, kSeq}, 3, 0.5, 2.0);
  } else {
    g.inputs.push_back({"k", DataType::kFloat32, true, dims});
    g.nodes.push_back(withInts(makeNode("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2}));
  }
  g.initializers["logit_scale"] = randomTensor(DataType::kFloat32, scaleShape, 4, 0.5, 2.0);
  g.initializers["bias"] = randomTensor(DataType::kFloat32, {1, kHeads, kSeq, kSeq}, 5, -1.0, 1.0);
  g.nodes.push_back(makeNode("MatMul", {"q", "kt"}, {"scores"}));
  if (scaleNode) {
    Node constant = makeNode("Constant", {}, {"logit_scale"});
    Attribute value;
    value.kind = Attribute::Kind::kTensor;
    value.t = g.initializers.at("logit_scale");
    constant.attributes["value"] = value;
    g.initializers.erase("logit_scale");
    g.nodes.push_back(constant);
  }
  g.nodes.push_back(makeNode("Mul", {"scores", "logit_scale"}, {"scaled"}));
  g.nodes.push_back(makeNode("Add", {"scaled", "bias"}, {"biased"}));
  g.nodes.push_back(withInt(makeNode("Softmax", {"biased"}, {"p"}), "axis", -1));
  g.nodes.push_back(makeNode("MatMul", {"p", "v"}, {"out"}));
  g.outputs = {{"out", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> runAttention(const Network& net) {
  std::map<std::string, Tensor> feeds;
  uint32_t seed = 10;
  for (const ValueInfo& in : net.graph.inputs)
    feeds[in.name] =
        randomTensor(DataType::kFloat32, {kBatch, kHeads, kSeq, kDim}, seed++, 0.5, 2.0);
  return runOnReference(net, feeds);
}

std::vector<PassApplication> applied(const Network& original, Network* out) {
  *out = original;
  std::vector<PassApplication> records;
  EXPECT_TRUE(runPasses(*out, 1, {}, &records).isOk());
  std::vector<PassApplication> mine;
  for (const PassApplication& r : records)
    if (r.pass == kPass) mine.push_back(r);
  return mine;
}

TEST(RowScaleBeforeProduct, PerHeadLogitScaleLetsTheAttentionFuse) {
  Network fused;
  // FusedAttention and the Mul on Q: two nodes.
  const auto records =
      fuseAndCompareOutputs(kPass, runAttention, cosineAttention({kHeads, 1, 1}), 2, &fused);
  EXPECT_EQ(records.size(), 1u);
  EXPECT_EQ(countOps(fused, "FusedAttention"), 1);
  ASSERT_EQ(countOps(fused, "Mul"), 1);
  for (const Node& n : fused.graph.nodes)
    if (n.opType == "Mul") EXPECT_EQ(n.inputs, (std::vector<std::string>{"q", "logit_scale"}));
  // Without the pass the attention does not fuse (Transpose, MatMul, Mul, the softmax with its
  // bias, MatMul): the scale sits between the product and the softmax.
  Network unfused;
  fuseAndCompareOutputs(kPass, runAttention, cosineAttention({kHeads, 1, 1}), 5, &unfused, {kPass});
  EXPECT_EQ(countOps(unfused, "FusedAttention"), 0);
  // The scale from a Constant node between the product and the Mul: the rewritten nodes go
  // after it (the reference run needs every input produced before its reader).
  fuseAndCompareOutputs(kPass, runAttention,
                        cosineAttention({kHeads, 1, 1}, false, /*scaleNode=*/true), 3, &fused);
  EXPECT_EQ(countOps(fused, "FusedAttention"), 1);
  // A scale per query row and head ([1, H, S, 1]) moves the same way.
  fuseAndCompareOutputs(kPass, runAttention, cosineAttention({1, kHeads, kSeq, 1}), 2, &fused);
  EXPECT_EQ(countOps(fused, "FusedAttention"), 1);
}

TEST(RowScaleBeforeProduct, WhatIsNoRowScaleStays) {
  Network out;
  // A scale per key (the last dim): not constant along the product's rows' columns.
  EXPECT_TRUE(applied(cosineAttention({kHeads, 1, kSeq}), &out).empty());
  // A scale of a higher rank than Q ([1, 1, H, 1, 1]: it broadcasts the scores up a dim), so
  // Mul(Q, c) would not keep Q's shape.
  EXPECT_TRUE(applied(cosineAttention({1, 1, kHeads, 1, 1}), &out).empty());
  // The right operand a constant (a GEMM's weights): fold_scale_into_matmul's case.
  EXPECT_TRUE(applied(cosineAttention({kHeads, 1, 1}, /*constantKey=*/true), &out).empty());
  // Q wider than the scores (heads of 8 over 5 keys, XCiT's channel attention in small): the
  // scale would move onto more elements than it scaled.
  EXPECT_TRUE(applied(cosineAttention({kHeads, 1, 1}, false, false, /*headSize=*/8), &out).empty());
}

}  // namespace
}  // namespace kiln::test
