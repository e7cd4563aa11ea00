// ops/split_params: explicit sizes checked (count, sign, sum, a sum that would wrap past
// INT64_MAX refused before it can), equal parts before opset 18 and opset 18's
// num_outputs with a smaller last part.
#include <gtest/gtest.h>

#include <limits>

#include "ops/split_params.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

TEST(SplitParams, ExplicitSizes) {
  const Node split = test::makeNode("Split", {"x", "split"}, {"a", "b"}, 13);
  auto sizes = ops::splitSizes(split, 13, 7, 2, {3, 4});
  ASSERT_TRUE(sizes.isOk());
  EXPECT_EQ(*sizes, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(ops::splitSizes(split, 13, 7, 2, {7}).status().message(),
            "split has 1 entries for 2 outputs");
  EXPECT_EQ(ops::splitSizes(split, 13, 7, 2, {-1, 8}).status().message(),
            "split has a negative size");
  EXPECT_EQ(ops::splitSizes(split, 13, 7, 2, {3, 3}).status().message(),
            "split sizes add up to 6, not the dim 7");
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_NE(ops::splitSizes(split, 13, 7, 2, {big, big})
                .status()
                .message()
                .find("add up to more than the dim 7"),
            std::string::npos);
  EXPECT_TRUE(ops::splitSizesFromInput(13));
  EXPECT_TRUE(ops::splitSizesFromInput(1));
  EXPECT_FALSE(ops::splitSizesFromInput(11));
}

TEST(SplitParams, EqualParts) {
  const Node split = test::makeNode("Split", {"x"}, {"a", "b", "c"}, 13);
  auto sizes = ops::splitSizes(split, 13, 9, 3, {});
  ASSERT_TRUE(sizes.isOk());
  EXPECT_EQ(*sizes, (std::vector<int64_t>{3, 3, 3}));
  EXPECT_EQ(ops::splitSizes(split, 13, 10, 3, {}).status().message(),
            "dim 10 does not split into 3 equal parts");
  const Node v18 =
      test::withInt(test::makeNode("Split", {"x"}, {"a", "b", "c"}, 18), "num_outputs", 3);
  sizes = ops::splitSizes(v18, 18, 10, 3, {});
  ASSERT_TRUE(sizes.isOk());
  EXPECT_EQ(*sizes, (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(ops::splitSizes(split, 18, 10, 3, {}).status().message(), "needs split or num_outputs");
}

// Where the sizes come from, as both backends find them: input 1 through the backend's
// reader (from opset 13, and at opset 1), the attribute before 13, else equal parts; the
// reader is not called where the opset does not read the input, and its error comes back.
TEST(SplitParams, SourceOfTheSizes) {
  int reads = 0;
  auto reader = [&reads](std::vector<int64_t>* given) {
    ++reads;
    *given = {2, 5};
    return Status::ok();
  };
  const Node v13 = test::makeNode("Split", {"x", "split"}, {"a", "b"}, 13);
  auto sizes = ops::splitSizes(v13, 13, 7, 2, true, reader);
  ASSERT_TRUE(sizes.isOk());
  EXPECT_EQ(*sizes, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(reads, 1);
  const Node v11 = test::withInts(test::makeNode("Split", {"x"}, {"a", "b"}, 11), "split", {3, 4});
  sizes = ops::splitSizes(v11, 11, 7, 2, true, reader);  // opset 11 reads the attribute
  ASSERT_TRUE(sizes.isOk());
  EXPECT_EQ(*sizes, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(reads, 1);
  sizes = ops::splitSizes(v13, 13, 8, 2, false, reader);  // no input: equal parts
  ASSERT_TRUE(sizes.isOk());
  EXPECT_EQ(*sizes, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(reads, 1);
  auto failing = [](std::vector<int64_t>*) {
    return Status(StatusCode::kInvalidArgument, "split must be 1-D, got rank 2");
  };
  EXPECT_EQ(ops::splitSizes(v13, 13, 7, 2, true, failing).status().message(),
            "split must be 1-D, got rank 2");
  EXPECT_EQ(ops::splitSizes(v13, 13, 6, 2, true, reader).status().message(),
            "split sizes 2x5 add up to more than the dim 6");
}

}  // namespace
}  // namespace kiln
