// ops/axis_params: an axis attribute within each op's range (Softmax's pre-13 axis == rank,
// ArgMax's axis 0 of a scalar), and the [outer, n, inner] view around it.
#include <gtest/gtest.h>

#include "ops/axis_params.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

TEST(AxisParams, RangesPerOp) {
  const Node n = test::withInt(test::makeNode("Softmax", {"x"}, {"y"}, 11), "axis", 3);
  auto axis = ops::axisAttribute(n, 1, 3, 3);  // Softmax-11: axis == rank allowed
  ASSERT_TRUE(axis.isOk());
  EXPECT_EQ(*axis, 3);
  EXPECT_EQ(ops::axisAttribute(n, -1, 3, 2).status().message(),
            "attribute 'axis' 3 is out of range for rank 3");
  const Node arg = test::makeNode("ArgMax", {"x"}, {"y"}, 13);
  axis = ops::axisAttribute(arg, 0, 0, 0);  // a scalar's axis 0
  ASSERT_TRUE(axis.isOk());
  EXPECT_EQ(*axis, 0);
  axis = ops::axisAttribute(test::withInt(arg, "axis", -2), 0, 3, 2);
  ASSERT_TRUE(axis.isOk());
  EXPECT_EQ(*axis, 1);
}

TEST(AxisParams, SplitAroundAndShapeWithoutAxis) {
  const ops::AxisSplit s = ops::splitAround({2, 3, 4, 5}, 1);
  EXPECT_EQ(s.outer, 2);
  EXPECT_EQ(s.n, 3);
  EXPECT_EQ(s.inner, 20);
  const ops::AxisSplit flat = ops::splitAround({2, 3, 4, 5}, 1, /*through=*/true);
  EXPECT_EQ(flat.n, 60);
  EXPECT_EQ(flat.inner, 1);
  const ops::AxisSplit scalar = ops::splitAround({}, 0);
  EXPECT_EQ(scalar.outer * scalar.n * scalar.inner, 1);
  EXPECT_EQ(ops::shapeWithoutAxis({2, 3, 4}, 1, false), (Shape{2, 4}));
  EXPECT_EQ(ops::shapeWithoutAxis({2, 3, 4}, 1, true), (Shape{2, 1, 4}));
}

}  // namespace
}  // namespace kiln
