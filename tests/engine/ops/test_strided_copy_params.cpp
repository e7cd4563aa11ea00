// ops/strided_copy_params: the geometry's checks (ranks, signs, reads inside X, int64
// overflow) and which geometries read one contiguous run of X (the CUDA backend's planned
// views: MViTv2's Q, K and V taken out of one packed tensor).
#include <gtest/gtest.h>

#include <limits>

#include "ops/strided_copy_params.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

Node stridedCopy(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                 int64_t offset) {
  Node node = test::makeNode("StridedCopy", {"x"}, {"y"}, 1);
  node.domain = "ai.kiln";
  node.attributes["shape"] = Attribute{.kind = Attribute::Kind::kInts, .ints = shape};
  node.attributes["strides"] = Attribute{.kind = Attribute::Kind::kInts, .ints = strides};
  node.attributes["offset"] = Attribute{.kind = Attribute::Kind::kInt, .i = offset};
  return node;
}

bool contiguousRun(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                   int64_t offset, int64_t inputElements) {
  auto geometry = ops::stridedCopyGeometry(stridedCopy(shape, strides, offset), inputElements);
  EXPECT_TRUE(geometry.isOk()) << geometry.status().toString();
  return geometry.isOk() && ops::stridedCopyIsContiguousRun(geometry.value());
}

TEST(StridedCopyParams, GeometryChecks) {
  EXPECT_EQ(ops::stridedCopyGeometry(stridedCopy({2, 3}, {3}, 0), 6).status().message(),
            "shape [2, 3] and strides [3] differ in rank");
  EXPECT_EQ(ops::stridedCopyGeometry(stridedCopy({2, 3}, {-3, 1}, 0), 6).status().message(),
            "stride 0 is negative: -3");
  EXPECT_EQ(ops::stridedCopyGeometry(stridedCopy({2, 3}, {3, 1}, -1), 6).status().message(),
            "offset is negative: -1");
  EXPECT_EQ(ops::stridedCopyGeometry(stridedCopy({2, 3}, {3, 1}, 1), 6).status().message(),
            "reads element 6 of an input of 6 elements");
  const int64_t big = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_NE(ops::stridedCopyGeometry(stridedCopy({4}, {big}, 0), ops::kUnknownInputElements)
                .status()
                .message()
                .find("overflow int64"),
            std::string::npos);
  // An empty Y reads nothing, wherever its strides point.
  EXPECT_TRUE(ops::stridedCopyGeometry(stridedCopy({0, 3}, {100, 1}, 50), 6).isOk());
}

TEST(StridedCopyParams, ContiguousRuns) {
  // Q, K, V of a packed [3, B=2, H=4, S=5, D=8]: each a whole leading block.
  EXPECT_TRUE(contiguousRun({2, 4, 5, 8}, {160, 40, 8, 1}, 320, 960));
  // Dims of extent 1 take any stride; a rank-0 Y is one element.
  EXPECT_TRUE(contiguousRun({1, 6, 1, 4}, {999, 4, 7, 1}, 8, 1000));
  EXPECT_TRUE(contiguousRun({}, {}, 5, 6));
  // A row of a wider matrix is a run; two rows of it are not.
  EXPECT_TRUE(contiguousRun({1, 3}, {10, 1}, 20, 40));
  EXPECT_FALSE(contiguousRun({2, 3}, {10, 1}, 20, 40));
  // Transposed, broadcast (stride 0) and stepped reads are not runs.
  EXPECT_FALSE(contiguousRun({3, 2}, {1, 3}, 0, 6));
  EXPECT_FALSE(contiguousRun({2, 3}, {0, 1}, 0, 6));
  EXPECT_FALSE(contiguousRun({3}, {2}, 0, 6));
  // An empty Y is no view.
  EXPECT_FALSE(contiguousRun({0, 3}, {3, 1}, 0, 6));
}

}  // namespace
}  // namespace kiln
