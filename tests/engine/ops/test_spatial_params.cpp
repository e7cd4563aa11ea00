// ops/spatial_params: kernel/stride/dilation/pad lists with their lengths and bounds
// (a stride of INT64_MAX refused at the dim limit), auto_pad, the output extent with
// floor and ceil, and MaxUnpool's extent in checked arithmetic.
#include <gtest/gtest.h>

#include <limits>

#include "ops/spatial_params.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

Node pool() {
  Node n = test::withInts(test::makeNode("MaxPool", {"x"}, {"y"}, 12), "kernel_shape", {3, 3});
  return test::withInts(n, "strides", {2, 2});
}

TEST(SpatialParams, OutputExtentFloorCeilAndSame) {
  ops::SpatialGeometry g;
  ASSERT_TRUE(ops::readSpatialAttributes(pool(), {1, 8, 10, 9}, {}, &g).isOk());
  ASSERT_TRUE(ops::computeForwardGeometry(pool(), false, &g).isOk());
  EXPECT_EQ(g.output, (std::vector<int64_t>{4, 4}));
  ASSERT_TRUE(ops::computeForwardGeometry(pool(), true, &g).isOk());
  EXPECT_EQ(g.output, (std::vector<int64_t>{5, 4}));  // the ceil's last window starts inside
  Node same = pool();
  same.attributes["auto_pad"].kind = Attribute::Kind::kString;
  same.attributes["auto_pad"].s = "SAME_UPPER";
  ASSERT_TRUE(ops::readSpatialAttributes(same, {1, 8, 10, 9}, {}, &g).isOk());
  ASSERT_TRUE(ops::computeForwardGeometry(same, false, &g).isOk());
  EXPECT_EQ(g.output, (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(g.padsBegin, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(g.padsEnd, (std::vector<int64_t>{1, 1}));
}

TEST(SpatialParams, Refusals) {
  ops::SpatialGeometry g;
  EXPECT_EQ(ops::readSpatialAttributes(pool(), {1, 8}, {}, &g).message(),
            "input X must have rank >= 3 (N, C, spatial...), got shape 1x8");
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(
      ops::readSpatialAttributes(test::withInts(pool(), "strides", {big, 1}), {1, 8, 10, 9}, {}, &g)
          .message(),
      "attribute 'strides' has invalid value " + std::to_string(big));
  EXPECT_EQ(
      ops::readSpatialAttributes(test::withInts(pool(), "pads", {1, 1}), {1, 8, 10, 9}, {}, &g)
          .message(),
      "attribute 'pads' has 2 entries, expected 4");
  ASSERT_TRUE(ops::readSpatialAttributes(pool(), {1, 8, 2, 9}, {}, &g).isOk());
  EXPECT_EQ(ops::computeForwardGeometry(pool(), false, &g).message(),
            "kernel window 3 is larger than padded input 2 on spatial axis 0");
  Node odd = pool();
  odd.attributes["auto_pad"].kind = Attribute::Kind::kString;
  odd.attributes["auto_pad"].s = "SIDEWAYS";
  EXPECT_EQ(ops::autoPadOf(odd).status().message(),
            "attribute 'auto_pad' has unknown value 'SIDEWAYS'");
}

TEST(SpatialParams, UnpoolExtentIsChecked) {
  ops::SpatialGeometry g;
  ASSERT_TRUE(ops::readSpatialAttributes(pool(), {1, 8, 4, 4}, {}, &g).isOk());
  auto shape = ops::unpoolShape(1, 8, g);
  ASSERT_TRUE(shape.isOk());
  EXPECT_EQ(*shape, (Shape{1, 8, 9, 9}));  // (4 - 1) * 2 + 3
  g.input[0] = int64_t{1} << 40;
  g.strides[0] = int64_t{1} << 40;
  EXPECT_NE(ops::unpoolShape(1, 8, g).status().message().find("overflows"), std::string::npos);
}

}  // namespace
}  // namespace kiln
