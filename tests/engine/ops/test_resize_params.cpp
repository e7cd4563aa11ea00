// ops/resize_params (issue 23's op table, first row): the Resize/Upsample parameters
// both backends run, parsed once. Scales and sizes per axis, keep_aspect_ratio_policy,
// roi placement for tf_crop_and_resize, Resize-10 / Upsample defaults, and the refusals
// (two or neither of scales and sizes, repeated axes, sizes that wrap, an aspect ratio
// that makes an axis too long) as messages without the node's name.
#include <gtest/gtest.h>

#include "ops/resize_params.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

using test::makeNode;

Node resize(int opset = 19) {
  return makeNode("Resize", {"x", "roi", "scales", "sizes"}, {"y"}, opset);
}

TEST(ResizeParams, ScalesAndSizesGiveTheOutputShape) {
  ops::ResizeParams p = ops::resizeAttributes(resize(), 19);
  EXPECT_EQ(p.coordMode, "half_pixel");
  ASSERT_TRUE(ops::resolveResize(resize(), {1, 3, 4, 6}, {{}, {1, 1, 2, 0.5}, {}}, &p).isOk());
  EXPECT_EQ(p.outShape, (Shape{1, 3, 8, 3}));
  EXPECT_FALSE(p.fromSizes);
  ASSERT_TRUE(ops::resolveResize(resize(), {1, 3, 4, 6}, {{}, {}, {1, 3, 5, 3}}, &p).isOk());
  EXPECT_EQ(p.outShape, (Shape{1, 3, 5, 3}));
  EXPECT_DOUBLE_EQ(p.scales[2], 1.25);
  EXPECT_TRUE(p.fromSizes);
  EXPECT_EQ(p.roi, (std::vector<double>{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST(ResizeParams, KeepAspectRatioAndAxes) {
  Node n = test::withInts(resize(), "axes", {-1, 2});
  n.attributes["keep_aspect_ratio_policy"].kind = Attribute::Kind::kString;
  n.attributes["keep_aspect_ratio_policy"].s = "not_larger";
  ops::ResizeParams p = ops::resizeAttributes(n, 19);
  // sizes for axes (3, 2): 12 / 6 = 2 and 12 / 4 = 3: the smaller scale, 2, for both.
  ASSERT_TRUE(ops::resolveResize(n, {1, 3, 4, 6}, {{}, {}, {12, 12}}, &p).isOk());
  EXPECT_EQ(p.outShape, (Shape{1, 3, 8, 12}));
  EXPECT_FALSE(p.fromSizes);
  n.attributes["keep_aspect_ratio_policy"].s = "not_smaller";
  ASSERT_TRUE(ops::resolveResize(n, {1, 3, 4, 6}, {{}, {}, {12, 12}}, &p).isOk());
  EXPECT_EQ(p.outShape, (Shape{1, 3, 12, 18}));
}

TEST(ResizeParams, RoiGoesToItsAxesForCropAndResize) {
  Node n = test::withInts(resize(), "axes", {2, 3});
  n.attributes["coordinate_transformation_mode"].kind = Attribute::Kind::kString;
  n.attributes["coordinate_transformation_mode"].s = "tf_crop_and_resize";
  ops::ResizeParams p = ops::resizeAttributes(n, 19);
  ASSERT_TRUE(ops::resolveResize(n, {1, 1, 4, 4}, {{0.1, 0.2, 0.9, 0.8}, {}, {3, 3}}, &p).isOk());
  EXPECT_EQ(p.roi, (std::vector<double>{0, 0, 0.1, 0.2, 1, 1, 0.9, 0.8}));
  EXPECT_EQ(ops::resolveResize(n, {1, 1, 4, 4}, {{0.1}, {}, {3, 3}}, &p).message(),
            "roi needs 2 entries per resized axis");
}

TEST(ResizeParams, OlderOpsAreAsymmetricAndBilinearIsLinear) {
  Node up = makeNode("Upsample", {"x", "scales"}, {"y"}, 9);
  up.attributes["mode"].kind = Attribute::Kind::kString;
  up.attributes["mode"].s = "bilinear";
  ops::ResizeParams p = ops::resizeAttributes(up, 9);
  EXPECT_EQ(p.mode, "linear");
  EXPECT_EQ(p.coordMode, "asymmetric");
  EXPECT_EQ(p.nearestMode, "simple");
  ASSERT_TRUE(ops::resolveResize(up, {1, 2, 3}, {{}, {1, 2, 2}, {}}, &p).isOk());
  EXPECT_EQ(p.outShape, (Shape{1, 4, 6}));
  EXPECT_EQ(ops::resizeAttributes(resize(10), 10).coordMode, "asymmetric");
}

TEST(ResizeParams, RefusalsAreOneLineMessages) {
  ops::ResizeParams p = ops::resizeAttributes(resize(), 19);
  const Shape in = {1, 3, 4, 6};
  EXPECT_EQ(ops::resolveResize(resize(), in, {{}, {}, {}}, &p).message(),
            "needs exactly one of scales and sizes");
  EXPECT_EQ(ops::resolveResize(resize(), in, {{}, {1, 1}, {}}, &p).message(),
            "scales has 2 entries for 4 axes");
  EXPECT_EQ(ops::resolveResize(test::withInts(resize(), "axes", {1, -3}), in, {{}, {1, 1}, {}}, &p)
                .message(),
            "axes repeats axis 1");
  EXPECT_NE(ops::resolveResize(resize(), in, {{}, {1, 1, 1e12, 1e12}, {}}, &p)
                .message()
                .find("is not a usable positive scale"),
            std::string::npos);
  EXPECT_NE(
      ops::resolveResize(resize(), in, {{}, {}, {1, 3, int64_t{1} << 31, int64_t{1} << 31}}, &p)
          .message()
          .find("is too large"),
      std::string::npos);
  // A kept aspect ratio multiplies one axis's large scale into another's dim: refused
  // before the cast to int64 (the CUDA copy of this code once cast it unchecked).
  Node kept = test::withInts(resize(), "axes", {2, 3});
  kept.attributes["keep_aspect_ratio_policy"].kind = Attribute::Kind::kString;
  kept.attributes["keep_aspect_ratio_policy"].s = "not_smaller";
  EXPECT_NE(
      ops::resolveResize(kept, {1, 1, 1, int64_t{1} << 30}, {{}, {}, {int64_t{1} << 30, 1}}, &p)
          .message()
          .find("too long"),
      std::string::npos);
}

}  // namespace
}  // namespace kiln
