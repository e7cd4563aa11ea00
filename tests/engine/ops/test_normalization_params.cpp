// ops/normalization_params: MeanVarianceNormalization's reduced axes at opset 9+ and 1,
// and a LayerNormalization Scale/B broadcast onto the normalized shape, with their
// refusals as messages without the node's name.
#include <gtest/gtest.h>

#include "ops/normalization_params.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

TEST(NormalizationParams, MvnAxesByOpset) {
  Node mvn = test::makeNode("MeanVarianceNormalization", {"x"}, {"y"}, 13);
  auto p = ops::mvnParams(mvn, 13, 4);
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(p->reduced, (std::vector<bool>{true, false, true, true}));  // default [0, 2, 3]
  EXPECT_TRUE(p->normalizeVariance);
  p = ops::mvnParams(test::withInts(mvn, "axes", {-1}), 13, 3);
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(p->reduced, (std::vector<bool>{false, false, true}));
  Node old = test::withInt(mvn, "across_channels", 1);
  old = test::withInt(old, "normalize_variance", 0);
  p = ops::mvnParams(old, 1, 4);
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(p->reduced, (std::vector<bool>{false, true, true, true}));
  EXPECT_FALSE(p->normalizeVariance);
  EXPECT_EQ(ops::mvnParams(test::withInts(mvn, "axes", {4}), 13, 4).status().message(),
            "axis 4 in 'axes' is out of range for rank 4");
}

TEST(NormalizationParams, ScaleBroadcastsOntoTheNormalizedShape) {
  auto s = ops::paramBroadcastShape("Scale", {1, 1, 5}, {4, 5}, "normalized shape");
  ASSERT_TRUE(s.isOk());
  EXPECT_EQ(*s, (Shape{1, 5}));  // one leading 1 beyond the target's rank dropped
  EXPECT_TRUE(ops::paramBroadcastShape("B", {4, 1}, {4, 5}, "normalized shape").isOk());
  EXPECT_EQ(
      ops::paramBroadcastShape("Scale", {3, 5}, {4, 5}, "normalized shape").status().message(),
      "input 'Scale' of shape 3x5 does not broadcast to the normalized shape 4x5");
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(NormalizationParams, LayerNormGeometry) {
  const Node ln =
      test::withInt(test::makeNode("LayerNormalization", {"x", "s"}, {"y"}, 17), "axis", -2);
  auto g = ops::layerNormGeometry(ln, {2, 3, 4, 5});
  ASSERT_TRUE(g.isOk());
  EXPECT_EQ(g->axis, 2);
  EXPECT_EQ(g->normShape, (Shape{4, 5}));
  EXPECT_EQ(g->statShape, (Shape{2, 3, 1, 1}));
  EXPECT_EQ(g->rows, 6);
  EXPECT_EQ(g->cols, 20);
  g = ops::layerNormGeometry(ln, {2, 3, 0});  // no elements a row: one stat per row still
  ASSERT_TRUE(g.isOk());
  EXPECT_EQ(g->cols, 0);
  EXPECT_EQ(g->rows, 2);
  EXPECT_EQ(ops::layerNormGeometry(test::withInt(ln, "axis", 3), {2, 3, 4}).status().message(),
            "attribute 'axis' 3 is out of range for rank 3");
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(GroupNormParams, GroupsAndParameterLayout) {
  const Node node = test::withInt(
      test::makeNode("GroupNormalization", {"x", "scale", "bias"}, {"y"}, 18), "num_groups", 4);
  auto perChannel = ops::groupNormParams(node, 18, 8, 8, 8);
  ASSERT_TRUE(perChannel.isOk());
  EXPECT_EQ(perChannel->groups, 4);
  EXPECT_FALSE(perChannel->perGroupParams);
  auto perGroup = ops::groupNormParams(node, 18, 8, 4, 4);
  ASSERT_TRUE(perGroup.isOk());
  EXPECT_TRUE(perGroup->perGroupParams);  // opset 18's layout
  EXPECT_EQ(ops::groupNormParams(node, 21, 8, 4, 4).status().message(),
            "input 'scale' has 4 elements, expected 8");  // opset 21: per channel only
  EXPECT_EQ(ops::groupNormParams(node, 18, 8, 5, 5).status().message(),
            "input 'scale' has 5 elements, expected 4");
  EXPECT_EQ(ops::groupNormParams(node, 18, 8, 8, 4).status().message(),
            "inputs 'scale' and 'bias' differ in size");
  EXPECT_EQ(ops::groupNormParams(node, 18, 6, 6, 6).status().message(),
            "attribute 'num_groups' (4) must be positive and divide the channel count 6");
}

}  // namespace
}  // namespace kiln
