// ops/broadcast_params: numpy broadcasting of two shapes, the rule both backends' kernels
// share (right-aligned dims, each pair equal or one of them 1).
#include <gtest/gtest.h>

#include "ops/broadcast_params.h"

namespace kiln {
namespace {

TEST(BroadcastParams, RightAlignedDimsEqualOrOne) {
  Shape out;
  ASSERT_TRUE(ops::broadcastShapes({8, 1, 6, 1}, {7, 1, 5}, &out).isOk());
  EXPECT_EQ(out, (Shape{8, 7, 6, 5}));
  ASSERT_TRUE(ops::broadcastShapes({}, {3, 2}, &out).isOk());  // a scalar
  EXPECT_EQ(out, (Shape{3, 2}));
  ASSERT_TRUE(ops::broadcastShapes({4, 0}, {1, 1}, &out).isOk());  // an empty dim stays
  EXPECT_EQ(out, (Shape{4, 0}));
}

TEST(BroadcastParams, IncompatibleDimsAreOneLineErrors) {
  Shape out;
  const Status s = ops::broadcastShapes({2, 3}, {4, 3}, &out);
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "shapes 2x3 and 4x3 cannot broadcast");
}

}  // namespace
}  // namespace kiln
