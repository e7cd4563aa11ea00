// ops/reduce_params: reduced axes from the attribute or input 1 (with the converters'
// leftover attribute honoured), empty axes as all or none (noop_with_empty_axes), and
// the refusals of a wrong axes input.
#include <gtest/gtest.h>

#include "ops/reduce_params.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

TEST(ReduceParams, AxesFromAttributeOrInput) {
  const Node sum13 = test::withInts(test::makeNode("ReduceSum", {"x"}, {"y"}, 11), "axes", {-1});
  auto r = ops::reducedAxes(sum13, false, 3, nullptr);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(*r, (std::vector<bool>{false, false, true}));
  const Node sum18 = test::makeNode("ReduceSum", {"x", "axes"}, {"y"}, 18);
  const Tensor axes = Tensor::int64Vector({0, 2});
  r = ops::reducedAxes(sum18, true, 3, &axes);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(*r, (std::vector<bool>{true, false, true}));
  r = ops::reducedAxes(sum18, true, 3, nullptr);  // no axes: every axis
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(*r, (std::vector<bool>{true, true, true}));
  r = ops::reducedAxes(test::withInt(sum18, "noop_with_empty_axes", 1), true, 3, nullptr);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(*r, (std::vector<bool>{false, false, false}));
  // A converter's leftover attribute is honoured when input 1 is absent.
  r = ops::reducedAxes(test::withInts(sum18, "axes", {1}), true, 3, nullptr);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(*r, (std::vector<bool>{false, true, false}));
}

TEST(ReduceParams, Refusals) {
  const Node sum18 = test::makeNode("ReduceSum", {"x", "axes"}, {"y"}, 18);
  const Tensor floats = Tensor::scalarFloat(1.f);
  EXPECT_EQ(ops::reducedAxes(sum18, true, 3, &floats).status().message(),
            "input 'axes' must be int64, got float32");
  const Tensor out = Tensor::int64Vector({3});
  EXPECT_EQ(ops::reducedAxes(sum18, true, 3, &out).status().message(),
            "axis 3 is out of range for rank 3");
  const Tensor twice = Tensor::int64Vector({1, -2});
  EXPECT_EQ(ops::reducedAxes(sum18, true, 3, &twice).status().message(),
            "axis -2 is repeated in 'axes'");
}

}  // namespace
}  // namespace kiln
