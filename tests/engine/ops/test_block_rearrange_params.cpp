// ops/block_rearrange_params: DepthToSpace / SpaceToDepth as a 6-D view and permutation
// (DCR and CRD), and the refusals: a blocksize whose square passes the dim limit (2^32
// once overflowed b * b), channels or plane sizes the blocksize does not divide.
#include <gtest/gtest.h>

#include "ops/block_rearrange_params.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

Node op(const char* type, int64_t block, const char* mode = "DCR") {
  Node n = test::withInt(test::makeNode(type, {"x"}, {"y"}, 13), "blocksize", block);
  n.attributes["mode"].kind = Attribute::Kind::kString;
  n.attributes["mode"].s = mode;
  return n;
}

TEST(BlockRearrangeParams, ViewsAndShapes) {
  auto d2s = ops::blockRearrangeOf(op("DepthToSpace", 2, "CRD"), {1, 8, 3, 5}, true);
  ASSERT_TRUE(d2s.isOk());
  EXPECT_EQ(d2s->outShape, (Shape{1, 2, 6, 10}));
  EXPECT_EQ(d2s->split, (Shape{1, 2, 2, 2, 3, 5}));
  EXPECT_EQ(d2s->perm, (std::vector<int>{0, 1, 4, 2, 5, 3}));
  auto s2d = ops::blockRearrangeOf(op("SpaceToDepth", 2), {1, 3, 4, 6}, false);
  ASSERT_TRUE(s2d.isOk());
  EXPECT_EQ(s2d->outShape, (Shape{1, 12, 2, 3}));
}

TEST(BlockRearrangeParams, Refusals) {
  EXPECT_NE(ops::blockRearrangeOf(op("DepthToSpace", int64_t{1} << 32), {1, 8, 3, 5}, true)
                .status()
                .message()
                .find("squared passes the dim limit"),
            std::string::npos);
  EXPECT_EQ(ops::blockRearrangeOf(op("DepthToSpace", 3), {1, 8, 3, 5}, true).status().message(),
            "channels are not a multiple of blocksize^2");
  EXPECT_EQ(ops::blockRearrangeOf(op("SpaceToDepth", 4), {1, 3, 4, 6}, false).status().message(),
            "height and width must be multiples of blocksize");
  EXPECT_EQ(
      ops::blockRearrangeOf(op("SpaceToDepth", 2, "XYZ"), {1, 3, 4, 6}, false).status().message(),
      "unknown mode 'XYZ'");
  EXPECT_EQ(ops::blockRearrangeOf(op("SpaceToDepth", 2), {3, 4, 6}, false).status().message(),
            "input must be 4-D NCHW, got 3x4x6");
}

}  // namespace
}  // namespace kiln
