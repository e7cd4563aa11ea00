// Cross-backend tests for the data_movement family: CUDA engine vs CPU reference.
// Data movement is exact, so float tests compare with zero tolerance at every precision
// (the inputs are rounded to the precision first); only the Scatter add/mul reductions,
// which round at every step in 16-bit storage, use the default tolerances.
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_op_test.h"

namespace kiln::test {
namespace {

using cuda::Precision;

const std::vector<PrecisionTolerance> kExact = {
    {Precision::kFloat32, 0, 0}, {Precision::kFloat16, 0, 0}, {Precision::kBFloat16, 0, 0}};

Tensor floats(const Shape& shape, uint32_t seed) {
  return randomTensor(DataType::kFloat32, shape, seed, -2.0, 2.0);
}
Tensor int64s(const Shape& shape, uint32_t seed) {
  return randomTensor(DataType::kInt64, shape, seed, -1000.0, 1000.0);
}
Tensor ints(const std::vector<int64_t>& values) {
  return int64Tensor({static_cast<int64_t>(values.size())}, values);
}
Tensor int32s(const Shape& shape, const std::vector<int32_t>& values) {
  return Tensor::fromVector(DataType::kInt32, shape, values);
}
// Indices in [-dim, dim): negative ones included.
Tensor indices(DataType type, const Shape& shape, int64_t dim, uint32_t seed) {
  return randomTensor(type, shape, seed, static_cast<double>(-dim), static_cast<double>(dim - 1));
}
// `count` index tuples for GatherND/ScatterND: column j in [-dims[j], dims[j]).
Tensor tuples(const Shape& dims, int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> values;
  for (int64_t t = 0; t < count; ++t) {
    for (int64_t d : dims) values.push_back(std::uniform_int_distribution<int64_t>(-d, d - 1)(rng));
  }
  return int64Tensor({count, static_cast<int64_t>(dims.size())}, values);
}

// ---------------------------------------------------------------- Transpose

TEST(CudaTranspose, DefaultPermReverses) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Transpose", 13).input(floats({2, 3, 4}, 1)).check(kExact);
}

TEST(CudaTranspose, NchwToNhwcAndBack) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{0, 2, 3, 1})
      .input(floats({2, 3, 5, 7}, 2))
      .check(kExact);
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{0, 3, 1, 2})
      .input(floats({2, 5, 7, 3}, 3))
      .check(kExact);
}

TEST(CudaTranspose, LargeBatched) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{0, 2, 1})
      .input(floats({64, 128, 96}, 4))
      .check(kExact);
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{2, 0, 1})
      .input(floats({64, 128, 96}, 5))
      .check(kExact);
}

TEST(CudaTranspose, TileEdges) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Transpose", 13).input(floats({33, 65}, 6)).check(kExact);
  GpuOpTest("Transpose", 13)
      .input(randomTensor(DataType::kUInt8, {17, 40}, 7, 0, 255))
      .check(fp32Only(0, 0));
}

TEST(CudaTranspose, GeneralPermutations) {
  KILN_REQUIRE_GPU();
  // The innermost dim stays: a widened strided copy.
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{1, 0, 2})
      .input(floats({16, 8, 32}, 8))
      .check(kExact);
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{1, 3, 0, 2})
      .input(floats({3, 4, 5, 6}, 9))
      .check(kExact);
  // Unit dims are dropped before the layout is chosen.
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{3, 1, 2, 0})
      .input(floats({7, 1, 1, 9}, 10))
      .check(kExact);
}

TEST(CudaTranspose, Int64) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{2, 0, 1})
      .input(int64s({5, 7, 3}, 11))
      .check(fp32Only(0, 0));
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{1, 0, 2})
      .input(int64s({5, 7, 3}, 12))
      .check(fp32Only(0, 0));
}

// ---------------------------------------------------------------- Concat

TEST(CudaConcat, MiddleAxis) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Concat", 13)
      .attr("axis", int64_t{1})
      .input(floats({2, 3, 4}, 20))
      .input(floats({2, 5, 4}, 21))
      .constant(floats({2, 1, 4}, 22))
      .check(kExact);
}

TEST(CudaConcat, LastAxisNarrowRows) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Concat", 13)
      .attr("axis", int64_t{-1})
      .input(floats({3, 2}, 23))
      .input(floats({3, 5}, 24))
      .input(floats({3, 1}, 25))
      .check(kExact);
}

TEST(CudaConcat, Int64FirstAxis) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Concat", 13)
      .attr("axis", int64_t{0})
      .input(int64s({2, 3}, 26))
      .input(int64s({4, 3}, 27))
      .check(fp32Only(0, 0));
}

// DenseNet's concatenations: channels-last rows of 64 + 32 k channels, one launch per 32
// inputs (37 here: two launches); fp16 rows of 32 channels are 64 bytes (16-byte words),
// an odd channel count falls back to narrower words.
TEST(CudaConcat, ManyInputsAlongTheLastAxisInOneLaunchPerChunk) {
  KILN_REQUIRE_GPU();
  for (int64_t growth : {32, 3}) {
    SCOPED_TRACE("growth " + std::to_string(growth));
    GpuOpTest test("Concat", 13);
    test.attr("axis", int64_t{3}).input(floats({2, 5, 3, 64}, 40));
    for (int i = 0; i < 36; ++i) test.input(floats({2, 5, 3, growth}, 41 + i));
    test.check(kExact);
  }
}

TEST(CudaConcat, EmptyInput) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Concat", 13)
      .attr("axis", int64_t{1})
      .input(floats({2, 0, 4}, 28))
      .input(floats({2, 3, 4}, 29))
      .check(kExact);
}

// ---------------------------------------------------------------- Split

TEST(CudaSplit, SizesFromConstant) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Split", 13)
      .attr("axis", int64_t{1})
      .input(floats({4, 10, 3}, 30))
      .constant(ints({2, 3, 5}))
      .outputs(3)
      .check(kExact);
}

TEST(CudaSplit, SizesFromRuntimeInput) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Split", 13)
      .attr("axis", int64_t{0})
      .input(floats({6, 5}, 31))
      .input(ints({1, 5}))
      .outputs(2)
      .check(kExact);
}

TEST(CudaSplit, NumOutputsUneven) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Split", 18)
      .attr("axis", int64_t{-1})
      .attr("num_outputs", int64_t{3})
      .input(floats({3, 10}, 32))
      .outputs(3)
      .check(kExact);
}

TEST(CudaSplit, AttributeAndEqualParts) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Split", 11)
      .attr("axis", int64_t{0})
      .attr("split", std::vector<int64_t>{1, 3})
      .input(floats({4, 6}, 33))
      .outputs(2)
      .check(kExact);
  GpuOpTest("Split", 13).input(int64s({6, 4}, 34)).outputs(2).check(fp32Only(0, 0));
}

// ---------------------------------------------------------------- Slice

TEST(CudaSlice, StartsEndsAxesSteps) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Slice", 13)
      .input(floats({6, 8, 5}, 40))
      .constant(ints({1, 0}))
      .constant(ints({5, -1}))
      .constant(ints({0, 2}))
      .constant(ints({2, 1}))
      .check(kExact);
}

TEST(CudaSlice, NegativeSteps) {
  KILN_REQUIRE_GPU();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  // Full reversal of axis 1.
  GpuOpTest("Slice", 13)
      .input(floats({4, 7, 3}, 41))
      .constant(ints({-1}))
      .constant(ints({kMin}))
      .constant(ints({1}))
      .constant(ints({-1}))
      .check(kExact);
  // Step -2 with a start past the end (clamped) on two axes.
  GpuOpTest("Slice", 13)
      .input(floats({9, 6}, 42))
      .constant(ints({100, 4}))
      .constant(ints({0, -100}))
      .constant(ints({0, 1}))
      .constant(ints({-2, -3}))
      .check(kExact);
}

TEST(CudaSlice, ClampingAndDefaultAxes) {
  KILN_REQUIRE_GPU();
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  GpuOpTest("Slice", 13)
      .input(floats({5, 6}, 43))
      .constant(ints({-100, 2}))
      .constant(ints({kMax, 100}))
      .check(kExact);
  // An empty result.
  GpuOpTest("Slice", 13)
      .input(floats({5, 6}, 44))
      .constant(ints({3}))
      .constant(ints({1}))
      .check(kExact);
}

TEST(CudaSlice, Int64Data) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Slice", 13)
      .input(int64s({8, 5}, 45))
      .constant(ints({1, -1}))
      .constant(ints({7, -6}))
      .constant(ints({0, 1}))
      .constant(ints({3, -1}))
      .check(fp32Only(0, 0));
}

TEST(CudaSlice, OpsetOneAttributes) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Slice", 9)
      .attr("starts", std::vector<int64_t>{1, 2})
      .attr("ends", std::vector<int64_t>{3, 1000})
      .attr("axes", std::vector<int64_t>{0, -1})
      .input(floats({4, 3, 7}, 46))
      .check(kExact);
}

TEST(CudaSlice, RuntimeParameters) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Slice", 13)
      .input(floats({6, 8}, 47))
      .input(ints({1, 7}))
      .input(ints({6, 0}))
      .input(ints({0, 1}))
      .input(ints({2, -2}))
      .check(kExact);
}

// ---------------------------------------------------------------- Pad

TEST(CudaPad, ConstantWithValue) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Pad", 13)
      .input(floats({3, 4, 5}, 50))
      .constant(ints({1, 0, 2, 0, 3, 1}))
      .constant(floatTensor({}, {0.5f}))
      .check(kExact);
}

TEST(CudaPad, Reflect) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Pad", 13)
      .attr("mode", std::string("reflect"))
      .input(floats({1, 2, 5, 6}, 51))
      .constant(ints({0, 0, 2, 1, 0, 0, 1, 2}))
      .check(kExact);
}

TEST(CudaPad, Edge) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Pad", 13)
      .attr("mode", std::string("edge"))
      .input(floats({3, 4, 5}, 52))
      .constant(ints({0, 1, 2, 1, 0, 3}))
      .check(kExact);
}

TEST(CudaPad, Wrap) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Pad", 19)
      .attr("mode", std::string("wrap"))
      .input(floats({3, 5}, 53))
      .constant(ints({2, 4, 1, 6}))
      .check(kExact);
}

TEST(CudaPad, NegativePadsCrop) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Pad", 13).input(floats({6, 7}, 54)).constant(ints({-1, 2, -2, 1})).check(kExact);
  GpuOpTest("Pad", 13)
      .attr("mode", std::string("reflect"))
      .input(floats({6, 7}, 55))
      .constant(ints({-1, 2, 1, -2}))
      .check(kExact);
}

TEST(CudaPad, AxesInput) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Pad", 18)
      .input(floats({3, 4, 5}, 56))
      .constant(ints({1, 2, 3, 4}))
      .constant(floatTensor({}, {-1.5f}))
      .constant(ints({-1, 0}))
      .check(kExact);
}

TEST(CudaPad, OpsetTwoAttributes) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Pad", 2)
      .attr("pads", std::vector<int64_t>{1, 1, 2, 0})
      .attr("value", 2.0f)
      .input(floats({3, 4}, 57))
      .check(kExact);
}

TEST(CudaPad, RuntimePadsAndInt64) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Pad", 13)
      .attr("mode", std::string("edge"))
      .input(floats({4, 3}, 58))
      .input(ints({2, 0, 1, 3}))
      .check(kExact);
  GpuOpTest("Pad", 13)
      .input(int64s({4, 3}, 59))
      .constant(ints({1, 2, 0, 1}))
      .constant(int64Tensor({}, {-7}))
      .check(fp32Only(0, 0));
}

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
