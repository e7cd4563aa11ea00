// Cross-backend tests for the data_movement family: CUDA engine vs CPU reference.
// Data movement is exact, so float tests compare with zero tolerance at every precision
// (the inputs are rounded to the precision first); only the Scatter add/mul reductions,
// which round at every step in 16-bit storage, use the default tolerances.
// This file: Transpose, Concat, Split, Slice, Pad, ai.kiln StridedCopy and Roll
// (test_cuda_gather_scatter.cpp: the gathers and scatters; test_cuda_planned_copies.cpp: the
// copies the context plan turns into views or narrowing Transposes).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gpu/data_movement_test.h"
#include "kiln/reference_backend.h"

namespace kiln::test {
namespace {

using namespace data_movement;

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

// Rows of a strided innermost dim through the row-run copy: 14-element rows of a rank-5
// unfold-like permute (TNT's), 33-element rows over more rows than one block stages (a
// partial last block), 300-element rows (fp16: 32 rows a block, two passes; fp32: too
// long to stage, another kernel), and contiguous rows of an odd length.
TEST(CudaTranspose, RowRunsOfAStridedInnerDim) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{0, 2, 4, 1, 3})
      .input(floats({3, 14, 4, 14, 5}, 48))
      .check(kExact);
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{0, 3, 2, 1})
      .input(floats({6, 33, 5, 14}, 49))
      .check(kExact);
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{0, 2, 3, 1})
      .input(floats({2, 300, 3, 7}, 50))
      .check(kExact);
  // Contiguous rows of 81 (VOLO's attention weights [B, 196, 6, 81] -> [B, 6, 196, 81]):
  // odd rows no wider word moves.
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{0, 2, 1, 3})
      .input(floats({3, 50, 6, 81}, 51))
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

// The innermost output dim strided in the input, another dim contiguous there: the tiled
// strided transpose (VOLO's unfold permutes: rank 6 with the 12 channels innermost and the
// 14 patch columns contiguous; rank 4 with 40 positions innermost), partial tiles on both
// sides, and one- and eight-byte elements.
TEST(CudaTranspose, TiledTransposeInsideOtherDims) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{0, 3, 5, 2, 4, 1})
      .input(floats({2, 12, 3, 14, 3, 14}, 13))
      .check(kExact);
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{0, 1, 4, 3, 2})
      .input(floats({2, 3, 40, 9, 20}, 14))
      .check(kExact);
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{2, 0, 1})
      .input(randomTensor(DataType::kUInt8, {9, 33, 10}, 15, 0, 255))
      .check(fp32Only(0, 0));
  GpuOpTest("Transpose", 13)
      .attr("perm", std::vector<int64_t>{2, 0, 1})
      .input(int64s({9, 33, 10}, 16))
      .check(fp32Only(0, 0));
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

// FocalNet's channels-last Split: rows of 35 channels into 16 + 16 + 3 (fp16: 70-byte rows,
// 2-byte words, a pitched row copy per part); and the same rows concatenated back from parts
// of odd widths.
TEST(CudaSplit, NarrowPartsOfChannelsLastRows) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Split", 13)
      .attr("axis", int64_t{-1})
      .input(floats({2, 3, 5, 35}, 35))
      .constant(ints({16, 16, 3}))
      .outputs(3)
      .check(kExact);
  GpuOpTest("Concat", 13)
      .attr("axis", int64_t{3})
      .input(floats({2, 3, 5, 16}, 36))
      .input(floats({2, 3, 5, 3}, 37))
      .input(floats({2, 3, 5, 16}, 38))
      .check(kExact);
}

// Many rows of odd widths through the shared-memory row tiles: 2,000 rows of 35 channels (fp32
// 140-byte rows, tiles of 232 rows; fp16 70-byte rows, tiles of 464) into 16 + 16 + 3, the last
// tile partial, and back from parts in another order.
TEST(CudaSplit, RowTilesAcrossManyRows) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Split", 13)
      .attr("axis", int64_t{-1})
      .input(floats({40, 50, 35}, 39))
      .constant(ints({16, 16, 3}))
      .outputs(3)
      .check(kExact);
  GpuOpTest("Concat", 13)
      .attr("axis", int64_t{2})
      .input(floats({40, 50, 3}, 40))
      .input(floats({40, 50, 16}, 41))
      .input(floats({40, 50, 16}, 42))
      .check(kExact);
}

// EdgeNeXt's positional-encoding Concat: parts one element wide beside wider ones, over
// enough rows for several tiles (parts under a warp's width move a thread per element).
TEST(CudaSplit, OneElementPartsAThreadEach) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Concat", 13)
      .attr("axis", int64_t{2})
      .input(floats({30, 97, 1}, 43))
      .input(floats({30, 97, 1}, 44))
      .input(floats({30, 97, 40}, 45))
      .input(floats({30, 97, 7}, 46))
      .check(kExact);
  GpuOpTest("Split", 13)
      .attr("axis", int64_t{-1})
      .input(floats({30, 97, 49}, 47))
      .constant(ints({1, 40, 1, 7}))
      .outputs(4)
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

// Dims neither padded nor cropped fold away before the kernel (adjacent ones merge, trailing
// ones widen the element to a word of up to 8 bytes, the value repeated across it): CoaT's zero
// row before the tokens [B, heads, N, 8]; a whole last dim after a reflected one; a last dim
// cropped at its end (not whole: no widening); an odd last dim; every dim whole but one in the
// middle.
TEST(CudaPad, WholeDimsFoldIntoWiderWords) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Pad", 13)
      .input(floats({2, 3, 15, 8}, 60))
      .constant(ints({0, 0, 1, 0, 0, 0, 0, 0}))
      .constant(floatTensor({}, {0.5f}))
      .check(kExact);
  GpuOpTest("Pad", 13)
      .attr("mode", std::string("reflect"))
      .input(floats({2, 5, 4}, 61))
      .constant(ints({0, 2, 0, 0, 1, 0}))
      .check(kExact);
  GpuOpTest("Pad", 13).input(floats({4, 6}, 62)).constant(ints({1, 0, 0, -2})).check(kExact);
  GpuOpTest("Pad", 13).input(floats({3, 7}, 63)).constant(ints({2, 0, 1, 0})).check(kExact);
  GpuOpTest("Pad", 13)
      .input(floats({2, 3, 4, 6}, 64))
      .constant(ints({0, 0, 2, 0, 0, 0, 3, 0}))
      .constant(floatTensor({}, {-2.0f}))
      .check(kExact);
}

// Output rows staged a block at a time (padRowsKernel): VOLO's zero pad of 28 x 28 maps to
// 30 x 30 over thousands of rows (several blocks, a partial last one), a reflect pad of
// short rows whose border rows reflect too, and a cropped, padded last dim.
TEST(CudaPad, RowsAcrossManyBlocks) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Pad", 13)
      .input(floats({4, 24, 28, 28}, 65))
      .constant(ints({0, 0, 1, 1, 0, 0, 1, 1}))
      .check(kExact);
  GpuOpTest("Pad", 13)
      .attr("mode", std::string("reflect"))
      .input(floats({3, 100, 9}, 66))
      .constant(ints({0, 2, 3, 0, 1, 2}))
      .check(kExact);
  GpuOpTest("Pad", 13)
      .input(floats({300, 12}, 67))
      .constant(ints({1, -3, 0, 5}))
      .constant(floatTensor({}, {0.25f}))
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

// ---------------------------------------------------------------- StridedCopy

// ai.kiln StridedCopy (fold_split_views' head split) at fp32 and fp16 into an output poisoned
// with NaN before the run, against the CPU reference on the same (rounded) data: exact, and on
// the GPU (no host fallback).
void checkStridedCopy(const Tensor& x, const std::vector<int64_t>& shape,
                      const std::vector<int64_t>& strides, int64_t offset) {
  GpuOpTest test("StridedCopy", 1, "ai.kiln");
  test.attr("shape", shape).attr("strides", strides).attr("offset", offset).input(x);
  const Network net = test.network();
  for (Precision precision : {Precision::kFloat32, Precision::kFloat16}) {
    SCOPED_TRACE(cuda::precisionName(precision));
    const std::map<std::string, Tensor> feeds = roundTo(test.feeds(), precision);
    std::vector<NamedTensor> expected;
    const Status reference = ReferenceBackend(net).run(feeds, &expected);
    ASSERT_TRUE(reference.isOk()) << reference.toString();
    ASSERT_EQ(expected.size(), 1u);
    std::vector<cuda::LayerInfo> layers;
    auto actual = runCudaPoisoned(net, feeds, precision, "out0", &layers);
    ASSERT_TRUE(actual.isOk()) << actual.status().toString();
    for (const cuda::LayerInfo& layer : layers)
      EXPECT_NE(layer.placement, cuda::LayerPlacement::kHostFallback) << layer.name << layer.note;
    expectTensorNear(actual.value(), expected[0].tensor, 0, 0);
  }
}

// The K heads of a merged Q/K/V product [B, S, 3 H D] as [B, H, S, D]: rows of D contiguous
// elements, widened to words.
TEST(CudaStridedCopy, HeadSplitOfAMergedProjectionRank4) {
  KILN_REQUIRE_GPU();
  const int64_t b = 2, s = 37, h = 4, d = 16, width = 3 * h * d;
  checkStridedCopy(floats({b, s, width}, 60), {b, h, s, d}, {s * width, d, width, 1}, h * d);
}

// DeBERTa's shape at a small size with a head size of 3: an odd offset and rows narrower than
// any word, one element at a time.
TEST(CudaStridedCopy, OddHeadSizeAndOffset) {
  KILN_REQUIRE_GPU();
  const int64_t b = 2, s = 5, h = 2, d = 3, width = 3 * h * d;
  checkStridedCopy(floats({b, s, width}, 61), {b, h, s, d}, {s * width, d, width, 1}, 2 * h * d);
}

// Rank 5 with a broadcast (stride 0) dim and no contiguous run: the strided kernel at rank 5.
TEST(CudaStridedCopy, Rank5WithABroadcastDim) {
  KILN_REQUIRE_GPU();
  // Reaches 1 + 210 + 3 + 4 * 42 + 2 * 7 = 396 of 630 elements.
  checkStridedCopy(floats({3, 5, 7, 6}, 62), {2, 3, 4, 5, 3}, {210, 0, 1, 42, 7}, 1);
}

// A packed block read transposed: the batched 2-D transpose path.
TEST(CudaStridedCopy, PackedBlockReadTransposed) {
  KILN_REQUIRE_GPU();
  checkStridedCopy(floats({4, 40, 36}, 63), {2, 36, 40}, {40 * 36, 1, 36}, 40 * 36);
}

// A contiguous run as the graph's output: planned as a view, the bytes copied into the output
// buffer (no kernel).
TEST(CudaStridedCopy, ContiguousRunAsTheGraphOutput) {
  KILN_REQUIRE_GPU();
  checkStridedCopy(floats({4, 8, 64}, 64), {2, 8, 64}, {512, 64, 1}, 1024);
}

// ---------------------------------------------------------------- Roll

// ai.kiln Roll (fold_slices_into_roll's torch.roll), exact at fp32 and fp16 against the CPU
// reference, into a poisoned output.
void checkRoll(const Tensor& x, const std::vector<int64_t>& shifts) {
  GpuOpTest("Roll", 1, "ai.kiln").attr("shifts", shifts).input(x).check(kExact);
}

// Swin's cyclic shift of [B, H, W, C] over H and W: rows of C channels in 16-byte words.
TEST(CudaRoll, SwinShiftOverHeightAndWidth) {
  KILN_REQUIRE_GPU();
  checkRoll(floats({2, 14, 14, 96}, 70), {0, 3, 3, 0});
  checkRoll(floats({2, 14, 14, 96}, 71), {0, 11, 11, 0});  // the shift back
}

// The innermost axis rolled (a word an element), rows of 3 elements (2- and 4-byte words),
// shifts out of range and negative (taken mod the dim), every axis at once, and int64.
TEST(CudaRoll, InnerAxisOddRowsAndShiftsModTheDim) {
  KILN_REQUIRE_GPU();
  checkRoll(floats({3, 5, 7}, 72), {0, 0, 4});
  checkRoll(floats({2, 6, 5, 3}, 73), {1, 0, 2, 0});
  checkRoll(floats({4, 5, 6}, 74), {-1, 7, 0});
  checkRoll(floats({4, 5, 6}, 75), {3, 2, 5});
  GpuOpTest("Roll", 1, "ai.kiln")
      .attr("shifts", std::vector<int64_t>{2, -3})
      .input(int64s({5, 9}, 76))
      .check(kExact);
}

}  // namespace
}  // namespace kiln::test
