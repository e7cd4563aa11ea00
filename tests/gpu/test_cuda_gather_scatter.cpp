// Cross-backend tests for the data_movement family: CUDA engine vs CPU reference.
// Data movement is exact, so float tests compare with zero tolerance at every precision
// (the inputs are rounded to the precision first); only the Scatter add/mul reductions,
// which round at every step in 16-bit storage, use the default tolerances.
// This file: Gather, GatherElements, GatherND, ScatterND, ScatterElements, Expand, Tile,
// ReverseSequence.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gpu/data_movement_test.h"

namespace kiln::test {
namespace {

using namespace data_movement;

// ---------------------------------------------------------------- Gather

TEST(CudaGather, EmbeddingRowsWithNegativeIndices) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Gather", 13)
      .input(floats({50, 64}, 60))
      .constant(indices(DataType::kInt64, {3, 5}, 50, 61))
      .check(kExact);
}

TEST(CudaGather, Int32RuntimeIndicesInnerAxis) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Gather", 13)
      .attr("axis", int64_t{1})
      .input(floats({4, 10, 6}, 62))
      .input(int32s({7}, {0, -1, 9, 3, -10, 3, 5}))
      .check(kExact);
}

TEST(CudaGather, ScalarIndexAndOddRows) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Gather", 13)
      .attr("axis", int64_t{-1})
      .input(floats({4, 5, 3}, 63))
      .constant(int64Tensor({}, {-2}))
      .check(kExact);
  GpuOpTest("Gather", 13)
      .input(floats({9, 3}, 64))
      .constant(indices(DataType::kInt32, {6}, 9, 65))
      .check(kExact);
}

TEST(CudaGather, Int64Data) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Gather", 13)
      .attr("axis", int64_t{0})
      .input(int64s({20, 3}, 66))
      .constant(indices(DataType::kInt64, {4, 2}, 20, 67))
      .check(fp32Only(0, 0));
}

// ---------------------------------------------------------------- GatherElements

TEST(CudaGatherElements, NegativeIndices) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GatherElements", 13)
      .attr("axis", int64_t{1})
      .input(floats({4, 5, 6}, 70))
      .constant(indices(DataType::kInt64, {4, 3, 6}, 5, 71))
      .check(kExact);
}

TEST(CudaGatherElements, Int32LastAxisSmallerIndices) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GatherElements", 13)
      .attr("axis", int64_t{-1})
      .input(floats({3, 5, 7}, 72))
      .input(indices(DataType::kInt32, {2, 5, 9}, 7, 73))
      .check(kExact);
}

// ai.kiln BroadcastGatherElements (fold_expand_into_broadcast's GatherElements of expanded
// indices): the indices broadcast over dims of size 1, the output the data's shape but for
// the axis; against the CPU kernel.
TEST(CudaBroadcastGatherElements, RelativePositionsOverBatchAndHeads) {
  KILN_REQUIRE_GPU();
  // DeBERTa's c2p gather: data [B * H, S, 2S], indices [1, S, S] along the last axis.
  GpuOpTest("BroadcastGatherElements", 1, "ai.kiln")
      .attr("axis", int64_t{-1})
      .input(floats({6, 8, 16}, 74))
      .constant(indices(DataType::kInt64, {1, 8, 8}, 16, 75))
      .check(kExact);
}

TEST(CudaBroadcastGatherElements, RowsOfAnOddLengthOneElementPerThread) {
  KILN_REQUIRE_GPU();
  // 5 outputs per row: no 16-byte stores; the indices broadcast over the first dim.
  GpuOpTest("BroadcastGatherElements", 1, "ai.kiln")
      .attr("axis", int64_t{2})
      .input(floats({4, 3, 9}, 78))
      .input(indices(DataType::kInt32, {1, 3, 5}, 9, 79))
      .check(kExact);
}

TEST(CudaBroadcastGatherElements, Int32MiddleAxisBroadcastLastDim) {
  KILN_REQUIRE_GPU();
  GpuOpTest("BroadcastGatherElements", 1, "ai.kiln")
      .attr("axis", int64_t{1})
      .input(floats({3, 5, 7}, 76))
      .input(indices(DataType::kInt32, {3, 4, 1}, 5, 77))
      .check(kExact);
}

// ---------------------------------------------------------------- GatherND

TEST(CudaGatherND, Slices) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GatherND", 13)
      .input(floats({4, 5, 6}, 80))
      .constant(tuples({4, 5}, 7, 81))
      .check(kExact);
}

TEST(CudaGatherND, ScalarsFromFullTuples) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GatherND", 13).input(floats({4, 5}, 82)).input(tuples({4, 5}, 9, 83)).check(kExact);
}

TEST(CudaGatherND, BatchDims) {
  KILN_REQUIRE_GPU();
  // data [3, 4, 5], indices [3, 2, 1]: two rows of each batch.
  GpuOpTest("GatherND", 13)
      .attr("batch_dims", int64_t{1})
      .input(floats({3, 4, 5}, 84))
      .constant(tuples({4}, 6, 85).reshaped({3, 2, 1}))
      .check(kExact);
}

// ---------------------------------------------------------------- ScatterND

TEST(CudaScatterND, NoneLastDuplicateWins) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ScatterND", 16)
      .input(floats({8, 4}, 90))
      .constant(int64Tensor({4, 1}, {1, 3, 1, -1}))
      .input(floats({4, 4}, 91))
      .check(kExact);
  // Element tuples, many duplicates.
  GpuOpTest("ScatterND", 16)
      .input(floats({4, 5}, 92))
      .constant(tuples({4, 5}, 40, 93))
      .input(floats({40}, 94))
      .check(kExact);
}

TEST(CudaScatterND, RuntimeIndices) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ScatterND", 13)
      .input(floats({3, 4, 5}, 95))
      .input(tuples({3, 4}, 6, 96))
      .input(floats({6, 5}, 97))
      .check(kExact);
}

TEST(CudaScatterND, Reductions) {
  KILN_REQUIRE_GPU();
  const Tensor idx = int64Tensor({5, 1}, {0, 2, 0, 5, -6});
  for (const char* reduction : {"add", "mul", "max", "min"}) {
    SCOPED_TRACE(reduction);
    const bool exact = std::string(reduction) == "max" || std::string(reduction) == "min";
    GpuOpTest("ScatterND", 18)
        .attr("reduction", std::string(reduction))
        .input(randomTensor(DataType::kFloat32, {6, 3}, 98, 0.5, 1.5))
        .constant(idx)
        .input(randomTensor(DataType::kFloat32, {5, 3}, 99, 0.5, 1.5))
        .check(exact ? kExact : defaultTolerances());
  }
}

TEST(CudaScatterND, Int32AddAndInt64None) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ScatterND", 16)
      .attr("reduction", std::string("add"))
      .input(randomTensor(DataType::kInt32, {5, 4}, 100, -100, 100))
      .constant(tuples({5, 4}, 30, 101))
      .input(randomTensor(DataType::kInt32, {30}, 102, -100, 100))
      .check(fp32Only(0, 0));
  GpuOpTest("ScatterND", 16)
      .input(int64s({6, 2}, 103))
      .constant(tuples({6}, 8, 104))
      .input(int64s({8, 2}, 105))
      .check(fp32Only(0, 0));
}

// ---------------------------------------------------------------- ScatterElements

TEST(CudaScatterElements, NoneManyLines) {
  KILN_REQUIRE_GPU();
  // 600 lines of 4 along axis 0: duplicates within lines, last wins.
  GpuOpTest("ScatterElements", 16)
      .attr("axis", int64_t{0})
      .input(floats({3, 600}, 110))
      .constant(indices(DataType::kInt64, {4, 600}, 3, 111))
      .input(floats({4, 600}, 112))
      .check(kExact);
}

TEST(CudaScatterElements, NoneFewLongLines) {
  KILN_REQUIRE_GPU();
  // 2 lines of 40 along axis 1: the last-writer marking path.
  GpuOpTest("ScatterElements", 16)
      .attr("axis", int64_t{1})
      .input(floats({3, 50}, 113))
      .input(indices(DataType::kInt32, {2, 40}, 50, 114))
      .input(floats({2, 40}, 115))
      .check(kExact);
}

TEST(CudaScatterElements, Reductions) {
  KILN_REQUIRE_GPU();
  for (const char* reduction : {"add", "mul", "max", "min"}) {
    SCOPED_TRACE(reduction);
    const bool exact = std::string(reduction) == "max" || std::string(reduction) == "min";
    GpuOpTest("ScatterElements", 18)
        .attr("axis", int64_t{1})
        .attr("reduction", std::string(reduction))
        .input(randomTensor(DataType::kFloat32, {5, 6}, 116, 0.5, 1.5))
        .constant(indices(DataType::kInt64, {4, 9}, 6, 117))
        .input(randomTensor(DataType::kFloat32, {4, 9}, 118, 0.5, 1.5))
        .check(exact ? kExact : defaultTolerances());
  }
}

TEST(CudaScatterElements, ScatterOpset9AndInt64) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Scatter", 9)
      .attr("axis", int64_t{0})
      .input(floats({4, 3}, 119))
      .constant(indices(DataType::kInt64, {2, 3}, 4, 120))
      .input(floats({2, 3}, 121))
      .check(kExact);
  GpuOpTest("ScatterElements", 13)
      .attr("axis", int64_t{-1})
      .input(int64s({3, 7}, 122))
      .constant(indices(DataType::kInt64, {3, 5}, 7, 123))
      .input(int64s({3, 5}, 124))
      .check(fp32Only(0, 0));
}

// ---------------------------------------------------------------- Expand, Tile

TEST(CudaExpand, Broadcasts) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Expand", 13).input(floats({3, 1}, 130)).constant(ints({2, 3, 4})).check(kExact);
  GpuOpTest("Expand", 13).input(floats({1, 4}, 131)).constant(ints({3, 1})).check(kExact);
  GpuOpTest("Expand", 13).input(floats({5}, 132)).input(ints({2, 1, 5})).check(kExact);
  GpuOpTest("Expand", 13)
      .input(int64s({2, 1, 3}, 133))
      .constant(ints({2, 4, 3}))
      .check(fp32Only(0, 0));
}

TEST(CudaTile, Repeats) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Tile", 13).input(floats({2, 3, 4}, 140)).constant(ints({2, 1, 3})).check(kExact);
  GpuOpTest("Tile", 13).input(floats({8}, 141)).constant(ints({3})).check(kExact);
  GpuOpTest("Tile", 13).input(floats({3, 4}, 142)).input(ints({2, 2})).check(kExact);
  GpuOpTest("Tile", 13).input(int64s({2, 3}, 143)).constant(ints({1, 4})).check(fp32Only(0, 0));
}

// ---------------------------------------------------------------- ReverseSequence

TEST(CudaReverseSequence, TimeMajorAndBatchMajor) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ReverseSequence", 10)
      .attr("batch_axis", int64_t{1})
      .attr("time_axis", int64_t{0})
      .input(floats({5, 3, 4}, 150))
      .constant(ints({5, 2, 0}))
      .check(kExact);
  GpuOpTest("ReverseSequence", 10)
      .attr("batch_axis", int64_t{0})
      .attr("time_axis", int64_t{1})
      .input(floats({3, 6, 2}, 151))
      .input(ints({1, 6, 3}))
      .check(kExact);
}

}  // namespace
}  // namespace kiln::test
