// Cross-backend tests for the reduce_norm family: CUDA engine vs CPU reference.
// Covers the Reduce* ops (row, column and general kernels, attribute and input
// axes), ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax, CumSum and the normalizations.
// Rows longer than 1024 elements exercise the block-per-row paths.
#include <limits>
#include <string>
#include <vector>

#include "gpu/gpu_op_test.h"

namespace kiln::test {
namespace {

Tensor axes(const std::vector<int64_t>& values) {
  return int64Tensor({static_cast<int64_t>(values.size())}, values);
}

Tensor scalarInt64(int64_t value) {
  return int64Tensor({}, {value});
}

// Float32 values in {0, ..., levels - 1}: many exact ties for ArgMax/ArgMin.
Tensor integerValued(const Shape& shape, int levels, uint32_t seed) {
  Tensor ints = randomTensor(DataType::kInt64, shape, seed, 0, levels - 1);
  return castTensor(ints, DataType::kFloat32);
}

// The product and log-sum-exp of 16-bit inputs are rounded to 16 bits once more on
// output; values next to a rounding boundary may land one 16-bit ulp away from the
// float32 reference, so these get a little more slack than the defaults.
std::vector<PrecisionTolerance> looseSixteenBit() {
  return {{cuda::Precision::kFloat32, 1e-5, 1e-5},
          {cuda::Precision::kFloat16, 6e-3, 6e-3},
          {cuda::Precision::kBFloat16, 4e-2, 4e-2}};
}

// ---- Reduce* ---------------------------------------------------------------------

TEST(CudaReduce, SumAxesInputKeepDimsColumns) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ReduceSum", 13).input(randomFloats({4, 37, 5}, 1)).constant(axes({1})).check();
}

TEST(CudaReduce, SumAxesRuntimeInput) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ReduceSum", 13)
      .attr("keepdims", int64_t{0})
      .input(randomFloats({3, 6, 10}, 2))
      .input(axes({-1, 1}))
      .check();
}

TEST(CudaReduce, SumAttributeAxesLastAxisRows) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ReduceSum", 11)
      .attr("axes", std::vector<int64_t>{-1})
      .attr("keepdims", int64_t{0})
      .input(randomFloats({6, 3, 50}, 3))
      .check();
}

TEST(CudaReduce, SumAllAxesLongRow) {
  KILN_REQUIRE_GPU();
  // No axes: everything into one value over 2 * 40 * 30 = 2400 elements (block row).
  GpuOpTest("ReduceSum", 13).input(randomFloats({2, 40, 30}, 4, 0.1, 1.0)).check();
}

TEST(CudaReduce, SumNoopWithEmptyAxes) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ReduceSum", 13)
      .attr("noop_with_empty_axes", int64_t{1})
      .input(randomFloats({3, 4, 5}, 5))
      .check();
}

TEST(CudaReduce, SumLongColumns) {
  KILN_REQUIRE_GPU();
  // Reducing axis 0 of [3000, 7]: few tiles, many rows split across threadIdx.y.
  GpuOpTest("ReduceSum", 13)
      .input(randomFloats({3000, 7}, 6, 0.1, 1.0))
      .constant(axes({0}))
      .check();
}

TEST(CudaReduce, SumInt64) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ReduceSum", 13)
      .input(randomTensor(DataType::kInt64, {5, 9, 4}, 7, -1000, 1000))
      .constant(axes({1}))
      .check(fp32Only());
}

TEST(CudaReduce, MeanNonContiguousAxesGeneral) {
  KILN_REQUIRE_GPU();
  // Axes 0 and 2 of [6, 5, 7] are two separate reduced runs: the general kernel.
  GpuOpTest("ReduceMean", 13)
      .attr("axes", std::vector<int64_t>{0, 2})
      .input(randomFloats({6, 5, 7}, 8))
      .check();
  GpuOpTest("ReduceMean", 18)
      .attr("keepdims", int64_t{0})
      .input(randomFloats({3, 4, 5, 6}, 9))
      .constant(axes({-1, 1}))
      .check();
}

TEST(CudaReduce, MeanSpatialAxesInput) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ReduceMean", 18).input(randomFloats({2, 3, 8, 8}, 10)).constant(axes({2, 3})).check();
}

TEST(CudaReduce, MeanInt32TruncatesLikeCpu) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ReduceMean", 13)
      .attr("axes", std::vector<int64_t>{1})
      .input(randomTensor(DataType::kInt32, {4, 7}, 11, -50, 50))
      .check(fp32Only());
}

TEST(CudaReduce, MaxAndMin) {
  KILN_REQUIRE_GPU();
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    SCOPED_TRACE(op);
    GpuOpTest(op, 13)
        .attr("axes", std::vector<int64_t>{1})
        .attr("keepdims", int64_t{0})
        .input(randomFloats({4, 33, 6}, 12))
        .check();
    GpuOpTest(op, 18).input(randomFloats({5, 70}, 13)).constant(axes({-1})).check();
    GpuOpTest(op, 18).input(randomFloats({2, 3, 4}, 14)).check();  // all axes
    GpuOpTest(op, 18)
        .input(randomTensor(DataType::kInt32, {3, 40}, 15, -1000, 1000))
        .constant(axes({1}))
        .check(fp32Only());
  }
}

TEST(CudaReduce, Prod) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ReduceProd", 13)
      .attr("axes", std::vector<int64_t>{-1})
      .input(randomFloats({6, 4, 5}, 16, 0.5, 1.5))
      .check(looseSixteenBit());
  GpuOpTest("ReduceProd", 18)
      .input(randomFloats({3, 6, 4}, 17, 0.5, 1.5))
      .constant(axes({1}))
      .check(looseSixteenBit());
  GpuOpTest("ReduceProd", 18)
      .input(randomTensor(DataType::kInt64, {3, 5}, 18, -9, 9))
      .constant(axes({1}))
      .check(fp32Only());
}

TEST(CudaReduce, NormsAndLogs) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ReduceL1", 13)
      .attr("axes", std::vector<int64_t>{1})
      .input(randomFloats({3, 20, 4}, 19))
      .check();
  GpuOpTest("ReduceL2", 18).input(randomFloats({5, 40}, 20)).constant(axes({1})).check();
  GpuOpTest("ReduceSumSquare", 18)
      .attr("keepdims", int64_t{0})
      .input(randomFloats({4, 5, 6}, 21))
      .constant(axes({0, 2}))
      .check();
  GpuOpTest("ReduceLogSum", 13)
      .attr("axes", std::vector<int64_t>{2})
      .input(randomFloats({3, 4, 9}, 22, 0.5, 2.0))
      .check();
}

TEST(CudaReduce, LogSumExp) {
  KILN_REQUIRE_GPU();
  // Large inputs: the per-output shift keeps exp() in range.
  GpuOpTest("ReduceLogSumExp", 13)
      .attr("axes", std::vector<int64_t>{-1})
      .input(randomFloats({4, 3, 30}, 23, 50.0, 90.0))
      .check(looseSixteenBit());
  GpuOpTest("ReduceLogSumExp", 18)
      .input(randomFloats({5, 12, 3}, 24, -3.0, 3.0))
      .constant(axes({1}))
      .check(looseSixteenBit());
  GpuOpTest("ReduceLogSumExp", 18)
      .attr("keepdims", int64_t{0})
      .input(randomFloats({4, 3, 5}, 25, -3.0, 3.0))
      .constant(axes({0, 2}))
      .check(looseSixteenBit());
}

// Rows of at most 64 elements take 1-16 lanes each (row counts that do not fill the last
// warp's rows included); reductions over inner runs of even length read column pairs in
// 16-bit and float data, odd lengths one column a thread.
TEST(CudaReduce, ShortRowsAndColumnPairsAcrossLengths) {
  KILN_REQUIRE_GPU();
  for (int64_t n : {1, 3, 4, 5, 8, 17, 32, 33, 64, 65}) {
    SCOPED_TRACE("rows of " + std::to_string(n));
    const uint32_t seed = static_cast<uint32_t>(n);
    GpuOpTest("ReduceL2", 18)
        .input(randomFloats({7, 3, n}, 40 + seed))
        .constant(axes({-1}))
        .check();
    GpuOpTest("ReduceMax", 13)
        .attr("axes", std::vector<int64_t>{-1})
        .input(randomFloats({37, n}, 140 + seed))
        .check();
    GpuOpTest("ReduceLogSumExp", 18)
        .input(randomFloats({5, 7, n}, 240 + seed, -3.0, 3.0))
        .constant(axes({2}))
        .check(looseSixteenBit());
  }
  for (int64_t inner : {2, 6, 7, 64, 66, 130}) {
    SCOPED_TRACE("columns of " + std::to_string(inner));
    const uint32_t seed = static_cast<uint32_t>(inner);
    GpuOpTest("ReduceMean", 18)
        .input(randomFloats({3, 9, 40, inner}, 340 + seed))
        .constant(axes({1, 2}))
        .check();
    GpuOpTest("ReduceL2", 13)
        .attr("axes", std::vector<int64_t>{1})
        .input(randomFloats({2, 70, inner}, 440 + seed))
        .check();
  }
}

// Short rows of whole 16-byte words (n a multiple of 8 for 16-bit data, of 4 for float32; the
// arena's rows 16-byte aligned) take the packed kernel: G lanes a row, one 16-byte load a trip
// (n = 24, 40, 48, 56: a lane of the last power of two idle). Thousands of rows, so blocks loop,
// and a row count that leaves the last warp's rows part empty; every op's prepare and combine,
// LogSumExp's shift included.
TEST(CudaReduce, ShortRowsOfWholeWords) {
  KILN_REQUIRE_GPU();
  for (int64_t n : {8, 16, 24, 32, 40, 48, 56, 64}) {
    SCOPED_TRACE("rows of " + std::to_string(n));
    const uint32_t seed = static_cast<uint32_t>(n);
    GpuOpTest("ReduceL2", 18)
        .input(randomFloats({3, 1001, n}, 540 + seed))
        .constant(axes({-1}))
        .check();
    GpuOpTest("ReduceSum", 13)
        .input(randomFloats({2, 777, n}, 640 + seed))
        .constant(axes({2}))
        .check();
    GpuOpTest("ReduceMax", 18)
        .input(randomFloats({1501, n}, 740 + seed))
        .constant(axes({1}))
        .check();
    GpuOpTest("ReduceLogSumExp", 18)
        .input(randomFloats({999, n}, 840 + seed, -3.0, 3.0))
        .constant(axes({1}))
        .check(looseSixteenBit());
  }
}

// ---- ArgMax / ArgMin -----------------------------------------------------------

TEST(CudaArg, RandomRowsAndColumns) {
  KILN_REQUIRE_GPU();
  for (const char* op : {"ArgMax", "ArgMin"}) {
    SCOPED_TRACE(op);
    GpuOpTest(op, 13).attr("axis", int64_t{1}).input(randomFloats({3, 50, 4}, 30)).check();
    GpuOpTest(op, 13)
        .attr("axis", int64_t{-1})
        .attr("keepdims", int64_t{0})
        .input(randomFloats({8, 300}, 31))
        .check();
    GpuOpTest(op, 13).attr("axis", int64_t{-1}).input(randomFloats({3, 2000}, 32)).check();
  }
}

TEST(CudaArg, TiesWithSelectLastIndex) {
  KILN_REQUIRE_GPU();
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (int64_t last : {0, 1}) {
      SCOPED_TRACE(std::string(op) + " select_last_index " + std::to_string(last));
      // Rows (warp and block per row) and columns, on values with many ties.
      GpuOpTest(op, 12)
          .attr("axis", int64_t{-1})
          .attr("select_last_index", last)
          .input(integerValued({16, 100}, 4, 33))
          .check(fp32Only());
      GpuOpTest(op, 12)
          .attr("axis", int64_t{-1})
          .attr("select_last_index", last)
          .input(integerValued({2, 3000}, 3, 34))
          .check(fp32Only());
      GpuOpTest(op, 12)
          .attr("axis", int64_t{0})
          .attr("keepdims", int64_t{0})
          .attr("select_last_index", last)
          .input(integerValued({40, 6, 5}, 3, 35))
          .check(fp32Only());
    }
  }
}

TEST(CudaArg, Int64Input) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ArgMax", 13)
      .attr("axis", int64_t{1})
      .input(randomTensor(DataType::kInt64, {4, 25}, 36, -5, 5))
      .check(fp32Only());
}

// ---- Softmax / LogSoftmax / Hardmax --------------------------------------------

TEST(CudaSoftmax, LastAxisRows) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Softmax", 13).input(randomFloats({4, 8, 33}, 40, -3.0, 3.0)).check();
}

TEST(CudaSoftmax, InnerAxisColumns) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Softmax", 13)
      .attr("axis", int64_t{1})
      .input(randomFloats({2, 17, 6}, 41, -3.0, 3.0))
      .check();
}

// A softmax over an inner axis with few columns or long ones runs as column tiles (a block per
// tile of <= 32 adjacent columns, an online max and sum over its rows): CoaT's softmax of K over
// its 3,137 tokens [B, heads, N, 8], partial tiles (40 columns: 32 + 8; 3 columns of a 4-wide
// tile), large values (the online rescaling), LogSoftmax; and enough short columns for the
// thread-a-column kernel ([2, 3, 70000]: 140,000 columns of 3).
TEST(CudaSoftmax, InnerAxisColumnTiles) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Softmax", 13)
      .attr("axis", int64_t{2})
      .input(randomFloats({2, 2, 3137, 8}, 56, -4.0, 4.0))
      .check();
  GpuOpTest("Softmax", 13)
      .attr("axis", int64_t{1})
      .input(randomFloats({3, 50, 40}, 57, -3.0, 3.0))
      .check();
  GpuOpTest("Softmax", 13)
      .attr("axis", int64_t{1})
      .input(randomFloats({2, 2000, 3}, 58, -3.0, 3.0))
      .check();
  GpuOpTest("Softmax", 13)
      .attr("axis", int64_t{0})
      .input(randomFloats({300, 64}, 59, 500.0, 1000.0))
      .check(fp32Only());
  GpuOpTest("LogSoftmax", 13)
      .attr("axis", int64_t{1})
      .input(randomFloats({2, 1500, 17}, 60, -3.0, 3.0))
      .check();
  GpuOpTest("Softmax", 13)
      .attr("axis", int64_t{1})
      .input(randomFloats({2, 3, 70000}, 61, -3.0, 3.0))
      .check();
  // NaN and infinities as the reference has them ([1, 300, 8] over axis 1): a NaN (column 3), a
  // +inf (column 5) and a column of -inf with one NaN (column 6) are NaN throughout; a column
  // of -inf but for one value (column 7) is that value's 1.
  Tensor special = randomFloats({1, 300, 8}, 62, -3.0, 3.0);
  float* v = special.data<float>();
  v[5 * 8 + 3] = std::numeric_limits<float>::quiet_NaN();
  v[7 * 8 + 5] = std::numeric_limits<float>::infinity();
  for (int k = 0; k < 300; ++k) {
    v[k * 8 + 6] = -std::numeric_limits<float>::infinity();
    v[k * 8 + 7] = -std::numeric_limits<float>::infinity();
  }
  v[100 * 8 + 6] = std::numeric_limits<float>::quiet_NaN();
  v[200 * 8 + 7] = 0.5f;
  GpuOpTest("Softmax", 13).attr("axis", int64_t{1}).input(special).check();
  GpuOpTest("LogSoftmax", 13).attr("axis", int64_t{1}).input(special).check();
}

TEST(CudaSoftmax, Opset11CoercesTo2d) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Softmax", 11)
      .attr("axis", int64_t{1})
      .input(randomFloats({2, 3, 4, 5}, 42, -3.0, 3.0))
      .check();
  GpuOpTest("Softmax", 11).input(randomFloats({3, 7}, 43, -3.0, 3.0)).check();  // default axis 1
}

TEST(CudaSoftmax, LongRowsBlockPath) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Softmax", 13).input(randomFloats({3, 3000}, 44, -3.0, 3.0)).check();
  GpuOpTest("Softmax", 13).input(randomFloats({2, 20000}, 45, -3.0, 3.0)).check();
}

TEST(CudaSoftmax, LargeValuesStayFinite) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Softmax", 13).input(randomFloats({4, 64}, 46, 500.0, 1000.0)).check(fp32Only());
}

TEST(CudaSoftmax, LogSoftmax) {
  KILN_REQUIRE_GPU();
  GpuOpTest("LogSoftmax", 13).input(randomFloats({5, 40}, 47, -3.0, 3.0)).check();
  GpuOpTest("LogSoftmax", 13)
      .attr("axis", int64_t{0})
      .input(randomFloats({9, 4, 3}, 48, -3.0, 3.0))
      .check();
  GpuOpTest("LogSoftmax", 13).input(randomFloats({2, 2500}, 49, -3.0, 3.0)).check();
  GpuOpTest("LogSoftmax", 11)
      .attr("axis", int64_t{1})
      .input(randomFloats({2, 3, 5}, 50, -3.0, 3.0))
      .check();
}

TEST(CudaSoftmax, Hardmax) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Hardmax", 13).input(randomFloats({6, 30}, 51)).check();
  GpuOpTest("Hardmax", 13).attr("axis", int64_t{0}).input(randomFloats({7, 5, 3}, 52)).check();
  GpuOpTest("Hardmax", 11).attr("axis", int64_t{1}).input(randomFloats({2, 3, 4}, 53)).check();
  // Ties: the first maximum wins.
  GpuOpTest("Hardmax", 13).input(integerValued({8, 2000}, 3, 54)).check(fp32Only());
  GpuOpTest("Hardmax", 13).input(integerValued({8, 40}, 3, 55)).check(fp32Only());
}

// ---- CumSum --------------------------------------------------------------------

TEST(CudaCumSum, ExclusiveReverseVariants) {
  KILN_REQUIRE_GPU();
  for (int64_t exclusive : {0, 1}) {
    for (int64_t reverse : {0, 1}) {
      SCOPED_TRACE("exclusive " + std::to_string(exclusive) + " reverse " +
                   std::to_string(reverse));
      // Columns (axis 1 of 3-D), a short last axis and a long last axis (block scan).
      GpuOpTest("CumSum", 14)
          .attr("exclusive", exclusive)
          .attr("reverse", reverse)
          .input(randomFloats({3, 40, 5}, 60, 0.1, 1.0))
          .constant(scalarInt64(1))
          .check();
      GpuOpTest("CumSum", 14)
          .attr("exclusive", exclusive)
          .attr("reverse", reverse)
          .input(randomFloats({5, 20}, 61, 0.1, 1.0))
          .constant(scalarInt64(-1))
          .check();
      GpuOpTest("CumSum", 14)
          .attr("exclusive", exclusive)
          .attr("reverse", reverse)
          .input(randomFloats({3, 700}, 62, 0.1, 1.0))
          .constant(axes({-1}))
          .check();
    }
  }
}

TEST(CudaCumSum, Int64Data) {
  KILN_REQUIRE_GPU();
  GpuOpTest("CumSum", 11)
      .attr("exclusive", int64_t{1})
      .input(randomTensor(DataType::kInt64, {2, 600}, 63, -100, 100))
      .constant(scalarInt64(1))
      .check(fp32Only());
  GpuOpTest("CumSum", 11)
      .input(randomTensor(DataType::kInt32, {6, 4, 3}, 64, -100, 100))
      .constant(scalarInt64(0))
      .check(fp32Only());
}

// ---- BatchNormalization ----------------------------------------------------------

TEST(CudaBatchNorm, Inference) {
  KILN_REQUIRE_GPU();
  GpuOpTest("BatchNormalization", 15)
      .attr("epsilon", 1e-3f)
      .input(randomFloats({2, 3, 4, 5}, 70))
      .constant(randomFloats({3}, 71, 0.5, 1.5))
      .constant(randomFloats({3}, 72))
      .constant(randomFloats({3}, 73))
      .constant(randomFloats({3}, 74, 0.5, 1.5))
      .check();
}

TEST(CudaBatchNorm, Opset7PerElementParameters) {
  KILN_REQUIRE_GPU();
  GpuOpTest("BatchNormalization", 7)
      .attr("spatial", int64_t{0})
      .input(randomFloats({2, 3, 4}, 75))
      .constant(randomFloats({3, 4}, 76, 0.5, 1.5))
      .constant(randomFloats({3, 4}, 77))
      .constant(randomFloats({3, 4}, 78))
      .constant(randomFloats({3, 4}, 79, 0.5, 1.5))
      .check();
}

TEST(CudaBatchNorm, TrainingModeFallsBackToHost) {
  KILN_REQUIRE_GPU();
  // The GPU predicate rejects training mode: this checks that the node still runs
  // (through the host fallback) with its running statistics outputs.
  GpuOpTest("BatchNormalization", 15)
      .attr("training_mode", int64_t{1})
      .input(randomFloats({4, 3, 5}, 80))
      .constant(randomFloats({3}, 81, 0.5, 1.5))
      .constant(randomFloats({3}, 82))
      .constant(randomFloats({3}, 83))
      .constant(randomFloats({3}, 84, 0.5, 1.5))
      .outputs(3)
      .allowHostFallback()
      .check();
}

// ---- InstanceNormalization / GroupNormalization ---------------------------------

TEST(CudaInstanceNorm, ShortAndLongRows) {
  KILN_REQUIRE_GPU();
  GpuOpTest("InstanceNormalization", 6)
      .input(randomFloats({2, 3, 5, 7}, 90))
      .constant(randomFloats({3}, 91, 0.5, 1.5))
      .constant(randomFloats({3}, 92))
      .check();
  GpuOpTest("InstanceNormalization", 6)
      .attr("epsilon", 1e-3f)
      .input(randomFloats({1, 2, 40, 40}, 93))
      .constant(randomFloats({2}, 94, 0.5, 1.5))
      .constant(randomFloats({2}, 95))
      .check();
}

// Rows of every launch geometry: a warp a row (511, 700 elements), a block of 256 (3,199:
// wav2vec2's frames; 6,400).
TEST(CudaInstanceNorm, RowsOfEveryGeometry) {
  KILN_REQUIRE_GPU();
  for (const Shape& shape :
       {Shape{2, 4, 3199}, Shape{1, 3, 700}, Shape{1, 2, 80, 80}, Shape{3, 2, 511}}) {
    SCOPED_TRACE(shapeToString(shape));
    GpuOpTest("InstanceNormalization", 6)
        .input(randomFloats(shape, 96, -2.0, 3.0))
        .constant(randomFloats({shape[1]}, 97, 0.5, 1.5))
        .constant(randomFloats({shape[1]}, 98))
        .check();
  }
}

// Few long rows take the split path (each chunk's moments, then an apply that combines them):
// a whole sample as one instance (PoolFormer's GroupNorm(1) exports [B, 1, C * H * W]; 16-byte
// packs), channels of 22,500 elements (no 16-bit pack multiple: the scalar path in 16 bits),
// values offset from zero (the chunks' means differ from the row's), 37 chunks in a row
// (each lane of the combining warp takes more than one), and a row of 1,500,000 elements,
// which would be 184 chunks of 8,192: 128 longer chunks (11,728 elements, the last shorter).
TEST(CudaInstanceNorm, FewLongRowsSplitIntoChunks) {
  KILN_REQUIRE_GPU();
  for (const Shape& shape : {Shape{2, 1, 50176}, Shape{1, 3, 150, 150}, Shape{3, 2, 40000},
                             Shape{1, 1, 300000}, Shape{1, 1, 1500000}}) {
    SCOPED_TRACE(shapeToString(shape));
    GpuOpTest("InstanceNormalization", 6)
        .input(randomFloats(shape, 99, 1.0, 4.0))
        .constant(randomFloats({shape[1]}, 97, 0.5, 1.5))
        .constant(randomFloats({shape[1]}, 98))
        .check();
  }
}

// Per-channel parameters changing inside a chunk of the split path (3 channels of 10,000
// elements a group).
TEST(CudaGroupNorm, FewLongRowsPerChannelParameters) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GroupNormalization", 21)
      .attr("num_groups", int64_t{2})
      .input(randomFloats({2, 6, 100, 100}, 109, -1.0, 3.0))
      .constant(randomFloats({6}, 107, 0.5, 1.5))
      .constant(randomFloats({6}, 108))
      .check();
}

TEST(CudaGroupNorm, Opset18PerGroupAndPerChannel) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GroupNormalization", 18)
      .attr("num_groups", int64_t{2})
      .input(randomFloats({2, 6, 3, 4}, 100))
      .constant(randomFloats({2}, 101, 0.5, 1.5))
      .constant(randomFloats({2}, 102))
      .check();
  GpuOpTest("GroupNormalization", 18)
      .attr("num_groups", int64_t{3})
      .input(randomFloats({2, 6, 5}, 103))
      .constant(randomFloats({6}, 104, 0.5, 1.5))
      .constant(randomFloats({6}, 105))
      .check();
}

TEST(CudaGroupNorm, Opset21PerChannelLongRows) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GroupNormalization", 21)
      .attr("num_groups", int64_t{2})
      .input(randomFloats({1, 4, 32, 32}, 106))
      .constant(randomFloats({4}, 107, 0.5, 1.5))
      .constant(randomFloats({4}, 108))
      .check();
}

// ---- LayerNormalization ----------------------------------------------------------

TEST(CudaLayerNorm, LastAxisWithStatistics) {
  KILN_REQUIRE_GPU();
  GpuOpTest("LayerNormalization", 17)
      .input(randomFloats({4, 6, 32}, 110))
      .constant(randomFloats({32}, 111, 0.5, 1.5))
      .constant(randomFloats({32}, 112))
      .outputs(3)
      .check();
}

TEST(CudaLayerNorm, MultiAxisWithoutBias) {
  KILN_REQUIRE_GPU();
  GpuOpTest("LayerNormalization", 17)
      .attr("axis", int64_t{1})
      .attr("epsilon", 1e-3f)
      .input(randomFloats({2, 3, 4, 5}, 113))
      .constant(randomFloats({3, 4, 5}, 114, 0.5, 1.5))
      .check();
}

TEST(CudaLayerNorm, BroadcastScale) {
  KILN_REQUIRE_GPU();
  GpuOpTest("LayerNormalization", 17)
      .attr("axis", int64_t{-2})
      .input(randomFloats({3, 4, 5}, 115))
      .constant(randomFloats({1, 5}, 116, 0.5, 1.5))
      .constant(randomFloats({4, 1}, 117))
      .check();
}

TEST(CudaLayerNorm, LongRowsBlockPath) {
  KILN_REQUIRE_GPU();
  GpuOpTest("LayerNormalization", 17)
      .input(randomFloats({3, 2048}, 118))
      .constant(randomFloats({2048}, 119, 0.5, 1.5))
      .constant(randomFloats({2048}, 120))
      .outputs(3)
      .check();
  GpuOpTest("LayerNormalization", 17)
      .input(randomFloats({2, 20000}, 121))
      .constant(randomFloats({20000}, 122, 0.5, 1.5))
      .check();
}

// The packed 16-bit form (layerNormPacked): 96 channels (ConvNeXt's channels-last LN: 4
// lanes of 3 packs), 200 (25 packs over 8 lanes: uneven), 768 (BERT, ViT: 32 lanes) and
// 1024; rows that do not fill the last block; with and without B. Float32 takes the
// warp-per-row form on the same inputs.
TEST(CudaLayerNorm, PackedSixteenBitRows) {
  KILN_REQUIRE_GPU();
  uint32_t seed = 140;
  for (int64_t cols : {int64_t{96}, int64_t{200}, int64_t{768}, int64_t{1024}}) {
    SCOPED_TRACE("cols " + std::to_string(cols));
    GpuOpTest("LayerNormalization", 17)
        .input(randomFloats({3, 37, cols}, seed, -2.0, 3.0))
        .constant(randomFloats({cols}, seed + 1, 0.5, 1.5))
        .constant(randomFloats({cols}, seed + 2))
        .check();
    GpuOpTest("LayerNormalization", 17)
        .attr("epsilon", 1e-6f)
        .input(randomFloats({5, cols}, seed + 3))
        .constant(randomFloats({cols}, seed + 4, 0.5, 1.5))
        .check();
    seed += 5;
  }
}

// ---- RMSNormalization ------------------------------------------------------------

TEST(CudaRmsNorm, LastAxisAndBroadcastScale) {
  KILN_REQUIRE_GPU();
  GpuOpTest("RMSNormalization", 23)
      .input(randomFloats({2, 5, 64}, 130))
      .constant(randomFloats({64}, 131, 0.5, 1.5))
      .check();
  GpuOpTest("RMSNormalization", 23)
      .attr("axis", int64_t{1})
      .input(randomFloats({2, 5, 16}, 132))
      .constant(randomFloats({5, 16}, 133, 0.5, 1.5))
      .check();
  // Scale [16] against normalized axes [5, 16]: broadcast through the full index.
  GpuOpTest("RMSNormalization", 23)
      .attr("axis", int64_t{1})
      .attr("epsilon", 1e-3f)
      .input(randomFloats({2, 5, 16}, 134))
      .constant(randomFloats({16}, 135, 0.5, 1.5))
      .check();
  GpuOpTest("RMSNormalization", 23)
      .input(randomFloats({2, 3000}, 136))
      .constant(randomFloats({3000}, 137, 0.5, 1.5))
      .check();
}

// ---- LpNormalization / MeanVarianceNormalization / LRN ---------------------------

TEST(CudaLpNorm, RowsColumnsAndLongRows) {
  KILN_REQUIRE_GPU();
  GpuOpTest("LpNormalization", 1).input(randomFloats({4, 20}, 140)).check();
  GpuOpTest("LpNormalization", 1)
      .attr("axis", int64_t{1})
      .attr("p", int64_t{1})
      .input(randomFloats({3, 7, 5}, 141))
      .check();
  GpuOpTest("LpNormalization", 1).input(randomFloats({2, 1500}, 142)).check();
}

TEST(CudaMeanVarianceNorm, AxesVariants) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MeanVarianceNormalization", 13).input(randomFloats({2, 3, 4, 5}, 150)).check();
  GpuOpTest("MeanVarianceNormalization", 13)
      .attr("axes", std::vector<int64_t>{2, 3})
      .input(randomFloats({2, 3, 4, 5}, 151))
      .check();
  GpuOpTest("MeanVarianceNormalization", 13)
      .attr("axes", std::vector<int64_t>{-1})
      .input(randomFloats({3, 2000}, 152))
      .check();
  GpuOpTest("MeanVarianceNormalization", 1)
      .attr("across_channels", int64_t{1})
      .input(randomFloats({2, 3, 4, 4}, 153))
      .check();
  GpuOpTest("MeanVarianceNormalization", 1)
      .attr("normalize_variance", int64_t{0})
      .input(randomFloats({2, 3, 4, 4}, 154))
      .check();
}

TEST(CudaLrn, WindowSizes) {
  KILN_REQUIRE_GPU();
  GpuOpTest("LRN", 13).attr("size", int64_t{3}).input(randomFloats({2, 5, 4, 4}, 160)).check();
  GpuOpTest("LRN", 13)
      .attr("size", int64_t{4})
      .attr("alpha", 1e-2f)
      .attr("beta", 0.5f)
      .attr("bias", 2.0f)
      .input(randomFloats({1, 6, 3, 5}, 161))
      .check();
}

}  // namespace
}  // namespace kiln::test
