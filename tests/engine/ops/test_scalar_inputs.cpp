// ops/scalar_inputs: CumProd's axis tensor (scalar int32/int64, a scalar input's axis 0)
// and one-value numeric inputs, with their refusals.
#include <gtest/gtest.h>

#include "ops/scalar_inputs.h"

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
