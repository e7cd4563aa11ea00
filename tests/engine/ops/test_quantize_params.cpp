// ops/quantize_params: the scale layout of Q/DQ (per tensor, per axis, blocked, with a
// block_size of INT64_MAX computed without wrapping) and its refusals; integer ranges.
#include <gtest/gtest.h>

#include <limits>

#include "ops/quantize_params.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

const Node kQ = test::makeNode("QuantizeLinear", {"x", "s", "z"}, {"y"}, 21);

TEST(QuantizeParams, LayoutPerTensorAxisAndBlock) {
  auto l = ops::quantLayout(kQ, {2, 4, 3}, {}, nullptr);
  ASSERT_TRUE(l.isOk());
  EXPECT_EQ(l->kind, ops::QuantLayout::kTensor);
  const Shape four = {4};
  l = ops::quantLayout(kQ, {2, 4, 3}, {4}, &four);
  ASSERT_TRUE(l.isOk());
  EXPECT_EQ(l->kind, ops::QuantLayout::kAxis);
  EXPECT_EQ(l->axisDim, 4);
  EXPECT_EQ(l->inner, 3);
  l = ops::quantLayout(test::withInt(kQ, "block_size", 3), {2, 4, 3}, {2, 2, 3}, nullptr);
  ASSERT_TRUE(l.isOk());
  EXPECT_EQ(l->kind, ops::QuantLayout::kBlocked);
  EXPECT_EQ(l->scaleAxisDim, 2);  // ceil(4 / 3)
  const int64_t big = std::numeric_limits<int64_t>::max();
  l = ops::quantLayout(test::withInt(kQ, "block_size", big), {2, 4, 3}, {2, 1, 3}, nullptr);
  ASSERT_TRUE(l.isOk());
  EXPECT_EQ(l->scaleAxisDim, 1);
}

TEST(QuantizeParams, Refusals) {
  const Shape three = {3};
  EXPECT_EQ(ops::quantLayout(kQ, {2, 4}, {4}, &three).status().message(),
            "zero point shape 3 differs from scale shape 4");
  EXPECT_EQ(ops::quantLayout(test::withInt(kQ, "axis", 2), {2, 4}, {4}, nullptr).status().message(),
            "attribute 'axis': axis 2 is out of range for rank 2");
  EXPECT_EQ(ops::quantLayout(kQ, {2, 4}, {5}, nullptr).status().message(),
            "scale 5 must be a scalar or 1-D of size 4 (x dim 1)");
  EXPECT_EQ(ops::quantLayout(test::withInt(kQ, "block_size", 2), {2, 4}, {2, 3}, nullptr)
                .status()
                .message(),
            "blocked scale must have shape 2x2, got 2x3");
}

TEST(QuantizeParams, IntegerRanges) {
  double lo = 0, hi = 0;
  ASSERT_TRUE(ops::integerRange(DataType::kInt4, &lo, &hi));
  EXPECT_EQ(lo, -8);
  EXPECT_EQ(hi, 7);
  ASSERT_TRUE(ops::integerRange(DataType::kUInt16, &lo, &hi));
  EXPECT_EQ(hi, 65535);
  EXPECT_FALSE(ops::integerRange(DataType::kFloat32, &lo, &hi));
}

}  // namespace
}  // namespace kiln
