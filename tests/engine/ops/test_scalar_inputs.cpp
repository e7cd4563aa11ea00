// ops/scalar_inputs: CumProd's axis tensor (scalar int32/int64, a scalar input's axis 0)
// and one-value numeric inputs, with their refusals.
#include <gtest/gtest.h>

#include <limits>

#include "ops/scalar_inputs.h"
#include "support/op_test.h"

namespace kiln {
namespace {

TEST(ScalarInputs, AxisTensor) {
  auto a = ops::scalarAxisInput(Tensor::scalarInt64(-1), 3);
  ASSERT_TRUE(a.isOk());
  EXPECT_EQ(*a, 2);
  a = ops::scalarAxisInput(Tensor::scalarInt64(0), 0);  // a scalar input
  ASSERT_TRUE(a.isOk());
  EXPECT_EQ(*a, 0);
  EXPECT_EQ(ops::scalarAxisInput(Tensor::scalarFloat(1.f), 3).status().message(),
            "axis must be a scalar int32 or int64 tensor");
  EXPECT_EQ(ops::scalarAxisInput(Tensor::int64Vector({0, 1}), 3).status().message(),
            "axis must be a scalar int32 or int64 tensor");
  EXPECT_EQ(ops::scalarAxisInput(Tensor::scalarInt64(3), 3).status().message(),
            "axis 3 is out of range for rank 3");
}

TEST(ScalarInputs, Numbers) {
  auto v = ops::scalarNumber(Tensor::scalarFloat(0.25f), "ratio");
  ASSERT_TRUE(v.isOk());
  EXPECT_DOUBLE_EQ(*v, 0.25);
  EXPECT_EQ(ops::scalarNumber(Tensor::int64Vector({1, 2}), "ratio").status().message(),
            "input 'ratio' must hold one value, got shape 2");
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(RangeCount, CeilingOfTheSpanAndItsRefusals) {
  EXPECT_EQ(ops::rangeCount<double>(0.0, 1.0, 0.3).value(), 4);
  EXPECT_EQ(ops::rangeCount<int64_t>(10, 0, -3).value(), 4);
  EXPECT_EQ(ops::rangeCount<int64_t>(5, 1, 1).value(), 0);  // empty, never negative
  EXPECT_EQ(ops::rangeCount<int64_t>(0, 1, 0).status().message(), "delta must not be 0");
  // limit - start overflows int64; in 128 bits it is 2^63 elements: too large, no wrap.
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(ops::rangeCount<int64_t>(-1, max, 1).status().message(), "range is too large");
  EXPECT_EQ(
      ops::rangeCount<int64_t>(std::numeric_limits<int64_t>::min(), max, int64_t{1} << 62).value(),
      4);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(IntListInput, IntegerTensorsOfRankAtMostOne) {
  EXPECT_EQ(ops::intListInput(test::int64Tensor({3}, {1, -2, 3}), "starts").value(),
            (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(ops::intListInput(test::floatTensor({1}, {1}), "starts").status().message(),
            "starts must be an integer tensor, got float32");
  EXPECT_EQ(ops::intListInput(test::int64Tensor({1, 2}, {1, 2}), "pads").status().message(),
            "pads must be 1-D, got rank 2");
}

}  // namespace
}  // namespace kiln
