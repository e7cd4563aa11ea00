// ops/attention_params: ONNX Attention's layouts (3-D split by the head attributes, 4-D
// as given), the refusals both backends now share (more heads than features, which the
// CUDA copy lacked, heads that do not divide, 4-D with head attributes at opset 25,
// mismatched batches / heads / head sizes), the KV cache's past shapes and the
// attributes' defaults and bounds. No backend.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/attention_params.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

Node attention(int64_t qHeads, int64_t kvHeads, int opset = 23) {
  Node n = test::makeNode("Attention", {"q", "k", "v"}, {"y"}, opset);
  if (qHeads) n = test::withInt(n, "q_num_heads", qHeads);
  if (kvHeads) n = test::withInt(n, "kv_num_heads", kvHeads);
  return n;
}

TEST(AttentionParams, PackedInputsSplitByTheHeadAttributes) {
  auto l = ops::attentionLayouts(attention(8, 2), 23, {2, 5, 64}, {2, 7, 16}, {2, 7, 16});
  ASSERT_TRUE(l.isOk()) << l.status().message();
  EXPECT_EQ(l->q.heads, 8);
  EXPECT_EQ(l->q.headSize, 8);
  EXPECT_EQ(l->k.heads, 2);
  EXPECT_EQ(l->k.seq, 7);
  EXPECT_TRUE(l->q.packed);
  EXPECT_EQ(l->group, 4);
  EXPECT_NE(ops::attentionLayouts(attention(0, 2), 23, {2, 5, 64}, {2, 7, 16}, {2, 7, 16})
                .status()
                .message()
                .find("need positive q_num_heads"),
            std::string::npos);
  // 2^62 heads over an empty hidden size: refused before any product of batch and heads.
  EXPECT_NE(ops::attentionLayouts(attention(int64_t{1} << 62, 1), 23, {2, 5, 0}, {2, 7, 0},
                                  {2, 7, 0})
                .status()
                .message()
                .find("exceed the hidden sizes"),
            std::string::npos);
  EXPECT_NE(ops::attentionLayouts(attention(6, 2), 23, {2, 5, 64}, {2, 7, 16}, {2, 7, 16})
                .status()
                .message()
                .find("not multiples of q_num_heads 6"),
            std::string::npos);
}

TEST(AttentionParams, FourDimensionalInputsAndTheirChecks) {
  auto l = ops::attentionLayouts(attention(0, 0), 23, {2, 4, 5, 8}, {2, 2, 7, 8}, {2, 2, 7, 8});
  ASSERT_TRUE(l.isOk()) << l.status().message();
  EXPECT_FALSE(l->q.packed);
  EXPECT_EQ(l->group, 2);
  EXPECT_NE(ops::attentionLayouts(attention(4, 2, 25), 25, {2, 4, 5, 8}, {2, 2, 7, 8},
                                  {2, 2, 7, 8})
                .status()
                .message()
                .find("must not be set for 4-D inputs"),
            std::string::npos);
  EXPECT_TRUE(ops::attentionLayouts(attention(4, 2, 23), 23, {2, 4, 5, 8}, {2, 2, 7, 8},
                                    {2, 2, 7, 8})
                  .isOk());
  EXPECT_NE(ops::attentionLayouts(attention(0, 0), 23, {2, 4, 5, 8}, {3, 2, 7, 8}, {2, 2, 7, 8})
                .status()
                .message()
                .find("batch sizes differ"),
            std::string::npos);
  EXPECT_NE(ops::attentionLayouts(attention(0, 0), 23, {2, 4, 5, 8}, {2, 2, 7, 4}, {2, 2, 7, 4})
                .status()
                .message()
                .find("head sizes differ"),
            std::string::npos);
  EXPECT_NE(ops::attentionLayouts(attention(0, 0), 23, {2, 3, 5, 8}, {2, 2, 7, 8}, {2, 2, 7, 8})
                .status()
                .message()
                .find("must be a multiple of key/value heads"),
            std::string::npos);
  EXPECT_NE(ops::attentionLayouts(attention(0, 0), 23, {2, 4, 5, 8}, {2, 2, 7}, {2, 2, 7, 8})
                .status()
                .message()
                .find("must all be 3-D or all 4-D"),
            std::string::npos);
}

TEST(AttentionParams, PastLengthsAndShapes) {
  const ops::AttentionHeadLayout k{2, 2, 7, 8, false};
  auto length = ops::attentionPastLength("past_key", {2, 2, 11, 8}, DataType::kFloat16, k,
                                         DataType::kFloat16);
  ASSERT_TRUE(length.isOk());
  EXPECT_EQ(*length, 11);
  EXPECT_EQ(ops::attentionPastLength("past_value", {2, 2, 10, 8}, DataType::kFloat16, k,
                                     DataType::kFloat16, 11)
                .status()
                .message(),
            "input 'past_value' has shape 2x2x10x8, expected 2x2x11x8");
  EXPECT_NE(ops::attentionPastLength("past_key", {2, 2, 11, 8}, DataType::kFloat32, k,
                                     DataType::kFloat16)
                .status()
                .message()
                .find("type differs"),
            std::string::npos);
  EXPECT_NE(ops::attentionPastLength("past_key", {2, 11, 8}, DataType::kFloat16, k,
                                     DataType::kFloat16)
                .status()
                .message()
                .find("must be 4-D"),
            std::string::npos);
}

TEST(AttentionParams, AttributesDefaultsAndBounds) {
  auto a = ops::attentionAttributes(attention(0, 0), 23, 64);
  ASSERT_TRUE(a.isOk());
  EXPECT_DOUBLE_EQ(a->scale, 0.125);
  EXPECT_EQ(a->softmaxPrecision, 0);
  EXPECT_EQ(a->leftWindow, -1);
  Node n = test::withFloat(attention(0, 0), "scale", -1.f);
  EXPECT_NE(ops::attentionAttributes(n, 23, 64).status().message().find("non-negative"),
            std::string::npos);
  n = test::withInt(attention(0, 0), "qk_matmul_output_mode", 4);
  EXPECT_NE(ops::attentionAttributes(n, 23, 64).status().message().find("must be 0..3"),
            std::string::npos);
  n = test::withInt(attention(0, 0), "softmax_precision", 7);
  EXPECT_NE(ops::attentionAttributes(n, 23, 64).status().message().find("1, 10, 11 or 16"),
            std::string::npos);
  n = test::withInt(attention(0, 0, 25), "left_window_size", -3);
  EXPECT_NE(ops::attentionAttributes(n, 25, 64).status().message().find("window sizes"),
            std::string::npos);
  EXPECT_TRUE(ops::attentionAttributes(n, 24, 64).isOk());  // no windows before opset 25
}

}  // namespace
}  // namespace kiln
