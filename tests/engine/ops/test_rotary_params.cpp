// ops/rotary_params: RotaryEmbedding's geometry from X and the caches, both addressings,
// and each refusal's message (the words both backends give).
#include <gtest/gtest.h>

#include "ops/rotary_params.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

const DataType kF16 = DataType::kFloat16;

Node rotary() {
  return test::makeNode("RotaryEmbedding", {"x", "cos", "sin", "ids"}, {"y"}, 23);
}

std::string refusal(const Node& node, const Shape& x, const Shape& cache, const Shape* ids,
                    DataType idsType = DataType::kInt64, DataType cacheType = kF16) {
  auto g = ops::rotaryGeometry(node, x, kF16, cache, cacheType, cache, cacheType, ids, idsType);
  return g.isOk() ? "" : g.status().message();
}

TEST(RotaryParams, FourDimensionalWithPositionIds) {
  const Shape ids = {1, 5};
  auto g = ops::rotaryGeometry(test::withInt(rotary(), "rotary_embedding_dim", 8), {2, 3, 5, 16},
                               kF16, {40, 4}, kF16, {40, 4}, kF16, &ids, DataType::kInt32);
  ASSERT_TRUE(g.isOk()) << g.status().message();
  EXPECT_EQ(g->batch, 2);
  EXPECT_EQ(g->heads, 3);
  EXPECT_EQ(g->seq, 5);
  EXPECT_EQ(g->headSize, 16);
  EXPECT_FALSE(g->packed);
  EXPECT_EQ(g->half, 4);
  EXPECT_TRUE(g->byPositionIds);
  EXPECT_EQ(g->positions, 40);
  EXPECT_EQ(g->idsBatchStride, 0);  // a batch of 1 broadcasts
}

TEST(RotaryParams, PackedInputWithoutPositionIds) {
  auto g = ops::rotaryGeometry(
      test::withInt(test::withInt(rotary(), "num_heads", 4), "interleaved", 1), {2, 7, 32}, kF16,
      {2, 7, 4}, kF16, {2, 7, 4}, kF16, nullptr, DataType::kUndefined);
  ASSERT_TRUE(g.isOk()) << g.status().message();
  EXPECT_TRUE(g->packed);
  EXPECT_EQ(g->heads, 4);
  EXPECT_EQ(g->headSize, 8);
  EXPECT_EQ(g->half, 4);  // rotary_embedding_dim 0: the whole head
  EXPECT_TRUE(g->interleaved);
  EXPECT_FALSE(g->byPositionIds);
  EXPECT_EQ(g->cacheBatchStride, 7);
}

TEST(RotaryParams, RefusalsNameWhatIsWrong) {
  const Shape ids = {2, 5};
  EXPECT_EQ(refusal(rotary(), {2, 5}, {40, 8}, &ids), "input 'X' must be 3-D or 4-D, got 2x5");
  EXPECT_EQ(refusal(test::withInt(rotary(), "num_heads", 3), {2, 5, 16}, {40, 8}, &ids),
            "3-D input needs a num_heads attribute dividing its hidden size 16");
  EXPECT_EQ(
      refusal(test::withInt(rotary(), "rotary_embedding_dim", 7), {2, 3, 5, 16}, {40, 8}, &ids),
      "rotary_embedding_dim 7 must be even and at most the head size 16");
  EXPECT_EQ(refusal(rotary(), {2, 3, 5, 16}, {40, 8}, &ids, DataType::kInt64, DataType::kFloat32),
            "cos_cache and sin_cache must have X's data type");
  EXPECT_EQ(refusal(rotary(), {2, 3, 5, 16}, {40, 6}, &ids),
            "cache shape 40x6 must end in 8 (rotary_embedding_dim / 2)");
  EXPECT_EQ(refusal(rotary(), {2, 3, 5, 16}, {2, 40, 8}, &ids),
            "with position_ids the caches must be 2-D, got 2x40x8");
  const Shape wrongIds = {3, 5};
  EXPECT_EQ(refusal(rotary(), {2, 3, 5, 16}, {40, 8}, &wrongIds),
            "position_ids must be (batch, seq), got 3x5");
  EXPECT_EQ(refusal(rotary(), {2, 3, 5, 16}, {40, 8}, &ids, DataType::kFloat32),
            "position_ids must be an integer tensor");
  EXPECT_EQ(refusal(rotary(), {2, 3, 5, 16}, {2, 4, 8}, nullptr),
            "without position_ids the caches must be (batch, seq, dim/2), got 2x4x8");
  auto differ = ops::rotaryGeometry(rotary(), {2, 3, 5, 16}, kF16, {40, 8}, kF16, {41, 8}, kF16,
                                    &ids, DataType::kInt64);
  EXPECT_EQ(differ.status().message(), "cos_cache 40x8 and sin_cache 41x8 differ");
}

}  // namespace
}  // namespace kiln
