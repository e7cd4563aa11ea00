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
