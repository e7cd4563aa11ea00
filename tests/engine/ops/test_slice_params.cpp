// ops/slice_params: defaults and length checks of starts/ends/axes/steps, numpy clamping
// per axis (negative indices, reversed slices, past-the-end bounds), and steps far past
// the dim held to it, so INT64_MAX and INT64_MIN steps count one element without
// leaving int64 (the CUDA copy of this code once computed end - start + step - 1).
#include <gtest/gtest.h>

#include <limits>

#include "ops/slice_params.h"

namespace kiln {
namespace {

TEST(SliceParams, DefaultsAndLengths) {
  ops::SliceArgs a{{1}, {3}, {}, {}};
  ASSERT_TRUE(ops::completeSliceArgs(false, false, &a).isOk());
  EXPECT_EQ(a.axes, (std::vector<int64_t>{0}));
  EXPECT_EQ(a.steps, (std::vector<int64_t>{1}));
  ops::SliceArgs b{{1, 2}, {3}, {}, {}};
  EXPECT_EQ(ops::completeSliceArgs(false, false, &b).message(), "starts and ends differ in length");
  ops::SliceArgs c{{1}, {3}, {}, {}};  // the node gave an empty axes input
  EXPECT_EQ(ops::completeSliceArgs(true, false, &c).message(),
            "starts, ends, axes and steps differ in length");
}

TEST(SliceParams, NumpyClampingPerAxis) {
  auto plan = ops::planSlice({10, 6}, {{-3, 5}, {100, -7}, {0, -1}, {1, -2}});
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  EXPECT_EQ((*plan)[0].first, 7);  // 7, 8, 9
  EXPECT_EQ((*plan)[0].count, 3);
  EXPECT_EQ((*plan)[1].first, 5);  // 5, 3, 1 (end -7 clamps to before the start)
  EXPECT_EQ((*plan)[1].count, 3);
  EXPECT_EQ((*plan)[1].step, -2);
  auto untouched = ops::planSlice({4, 5}, {{1}, {3}, {0}, {1}});
  ASSERT_TRUE(untouched.isOk());
  EXPECT_EQ((*untouched)[1].first, 0);
  EXPECT_EQ((*untouched)[1].count, 5);
}

TEST(SliceParams, HugeStepsTakeOneElementWithoutOverflow) {
  const int64_t big = std::numeric_limits<int64_t>::max(),
                low = std::numeric_limits<int64_t>::min();
  auto up = ops::planSlice({1000}, {{0}, {1000}, {0}, {big}});
  ASSERT_TRUE(up.isOk());
  EXPECT_EQ((*up)[0].count, 1);
  EXPECT_EQ((*up)[0].step, 1000);
  auto down = ops::planSlice({1000}, {{-1}, {low}, {0}, {low}});
  ASSERT_TRUE(down.isOk());
  EXPECT_EQ((*down)[0].first, 999);
  EXPECT_EQ((*down)[0].count, 1);
  EXPECT_EQ((*down)[0].step, -1000);
}

TEST(SliceParams, Refusals) {
  EXPECT_EQ(ops::planSlice({4, 5}, {{0}, {1}, {2}, {1}}).status().message(),
            "axis 2 is out of range for rank 2");
  EXPECT_EQ(ops::planSlice({4, 5}, {{0, 0}, {1, 1}, {1, -1}, {1, 1}}).status().message(),
            "axis 1 is repeated");
  EXPECT_EQ(ops::planSlice({4, 5}, {{0}, {1}, {0}, {0}}).status().message(), "steps must not be 0");
}

}  // namespace
}  // namespace kiln
