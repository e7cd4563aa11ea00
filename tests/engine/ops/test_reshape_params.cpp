// ops/reshape_params: 0 copies the input dim, -1 infers, allowzero keeps a 0, and the
// refusals, an element count that would wrap int64 (3 x 6148914691236517206 = 2 mod 2^64)
// among them.
#include <gtest/gtest.h>

#include "ops/reshape_params.h"

namespace kiln {
namespace {

TEST(ReshapeParams, ZerosAndMinusOne) {
  auto s = ops::resolveReshape({2, 3, 4}, {0, -1}, false);
  ASSERT_TRUE(s.isOk());
  EXPECT_EQ(*s, (Shape{2, 12}));
  s = ops::resolveReshape({0, 3}, {0, 3}, true);  // allowzero: a real 0
  ASSERT_TRUE(s.isOk());
  EXPECT_EQ(*s, (Shape{0, 3}));
}

TEST(ReshapeParams, Refusals) {
  EXPECT_EQ(ops::resolveReshape({2, 3}, {-1, -1}, false).status().message(),
            "shape has more than one -1");
  EXPECT_EQ(ops::resolveReshape({2, 3}, {0, -1}, true).status().message(),
            "allowzero=1 with both 0 and -1 in shape");
  EXPECT_EQ(ops::resolveReshape({6}, {2, 0}, false).status().message(),
            "shape[1] is 0 but the input has rank 1");
  EXPECT_EQ(ops::resolveReshape({2, 3}, {4, 2}, false).status().message(),
            "cannot reshape 2x3 (6 elements) to 4x2");
  EXPECT_NE(ops::resolveReshape({2}, {3, 6148914691236517206}, false)
                .status()
                .message()
                .find("more elements than a 64-bit count holds"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
