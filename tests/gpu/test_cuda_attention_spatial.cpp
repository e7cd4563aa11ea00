// Cross-backend tests for the attention_spatial ops: CUDA engine vs CPU reference.
// Attention (plain, packed 3-D, causal, additive / bool / short masks, GQA, past KV with
// present outputs, softcap, qk_matmul_output, nonpad_kv_seqlen, windows),
// RotaryEmbedding, GridSample (every mode x padding x align_corners), RoiAlign,
// AffineGrid, Col2Im, MaxUnpool, CenterCropPad and TensorScatter.
#include <string>
#include <vector>

#include "gpu/gpu_op_test.h"

namespace kiln::test {
namespace {

using Ints = std::vector<int64_t>;

// Attention keeps scores in the storage type between the QK^T GEMM and the softmax (the
// CPU reference keeps them in float), so 16-bit results carry one extra rounding of the
// scores (relative 2^-11 / 2^-8 of a score, amplified by exp) on top of the P and Y
// roundings: looser 16-bit tolerances than the defaults.
std::vector<PrecisionTolerance> attentionTolerances() {
  return {{cuda::Precision::kFloat32, 2e-5, 2e-5},
          {cuda::Precision::kFloat16, 1e-2, 1e-2},
          {cuda::Precision::kBFloat16, 6e-2, 6e-2}};
}

// ------------------------------------------------------------------ Attention

TEST(CudaAttention, Plain4d) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Attention", 23)
      .input(randomFloats({2, 4, 5, 8}, 1))
      .input(randomFloats({2, 4, 7, 8}, 2))
      .input(randomFloats({2, 4, 7, 8}, 3))
      .check(attentionTolerances());
}

TEST(CudaAttention, Packed3dGroupedQueryWithDifferentValueHeadSize) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Attention", 23)
      .attr("q_num_heads", int64_t{4})
      .attr("kv_num_heads", int64_t{2})
      .input(randomFloats({2, 5, 4 * 8}, 4))
      .input(randomFloats({2, 7, 2 * 8}, 5))
      .input(randomFloats({2, 7, 2 * 6}, 6))
      .check(attentionTolerances());
}

TEST(CudaAttention, Causal) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Attention", 23)
      .attr("is_causal", int64_t{1})
      .input(randomFloats({2, 3, 6, 8}, 7))
      .input(randomFloats({2, 3, 6, 8}, 8))
      .input(randomFloats({2, 3, 6, 8}, 9))
      .check(attentionTolerances());
}

TEST(CudaAttention, AdditiveMask2d) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Attention", 23)
      .input(randomFloats({2, 2, 5, 8}, 10))
      .input(randomFloats({2, 2, 9, 8}, 11))
      .input(randomFloats({2, 2, 9, 8}, 12))
      .input(randomFloats({5, 9}, 13, -3.0, 0.0))
      .check(attentionTolerances());
}

TEST(CudaAttention, BoolMask4dBroadcastOverHeadsWithFullyMaskedRows) {
  KILN_REQUIRE_GPU();
  // About half the keys are masked; with 4 keys some query rows mask all of them and
  // must come out as zeros.
  GpuOpTest("Attention", 23)
      .input(randomFloats({2, 3, 6, 8}, 14))
      .input(randomFloats({2, 3, 4, 8}, 15))
      .input(randomFloats({2, 3, 4, 8}, 16))
      .input(randomTensor(DataType::kBool, {2, 1, 6, 4}, 17, 0.0, 1.0))
      .check(attentionTolerances());
}

TEST(CudaAttention, ShortMaskPadsWithNegativeInfinity) {
  KILN_REQUIRE_GPU();
  // A 1-D mask covering 5 of 7 keys: the last two keys are masked out.
  GpuOpTest("Attention", 23)
      .input(randomFloats({1, 2, 3, 8}, 18))
      .input(randomFloats({1, 2, 7, 8}, 19))
      .input(randomFloats({1, 2, 7, 8}, 20))
      .input(randomFloats({5}, 21, -1.0, 0.0))
      .check(attentionTolerances());
}

TEST(CudaAttention, GroupedQuery8To2Heads) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Attention", 23)
      .input(randomFloats({2, 8, 5, 16}, 22))
      .input(randomFloats({2, 2, 11, 16}, 23))
      .input(randomFloats({2, 2, 11, 16}, 24))
      .check(attentionTolerances());
}

TEST(CudaAttention, GroupedQueryCausalWithBoolMask) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Attention", 23)
      .attr("is_causal", int64_t{1})
      .input(randomFloats({1, 8, 6, 8}, 25))
      .input(randomFloats({1, 2, 6, 8}, 26))
      .input(randomFloats({1, 2, 6, 8}, 27))
      .input(randomTensor(DataType::kBool, {6, 6}, 28, -0.5, 1.0))
      .check(attentionTolerances());
}

TEST(CudaAttention, PastKeyValueWithPresentOutputs) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Attention", 23)
      .attr("is_causal", int64_t{1})
      .input(randomFloats({2, 4, 3, 8}, 29))
      .input(randomFloats({2, 2, 3, 8}, 30))
      .input(randomFloats({2, 2, 3, 8}, 31))
      .missingInput()
      .input(randomFloats({2, 2, 5, 8}, 32))
      .input(randomFloats({2, 2, 5, 8}, 33))
      .outputs(3)
      .check(attentionTolerances());
}

TEST(CudaAttention, PackedPastKeyValueWithoutPresentOutputs) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Attention", 23)
      .attr("q_num_heads", int64_t{2})
      .attr("kv_num_heads", int64_t{2})
      .input(randomFloats({1, 2, 2 * 8}, 34))
      .input(randomFloats({1, 2, 2 * 8}, 35))
      .input(randomFloats({1, 2, 2 * 8}, 36))
      .input(randomFloats({2, 6}, 37, -2.0, 0.0))
      .input(randomFloats({1, 2, 4, 8}, 38))
      .input(randomFloats({1, 2, 4, 8}, 39))
      .check(attentionTolerances());
}

TEST(CudaAttention, ScaleSoftcapAndQkOutputAfterSoftcap) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Attention", 23)
      .attr("scale", 0.8f)
      .attr("softcap", 2.0f)
      .attr("qk_matmul_output_mode", int64_t{1})
      .input(randomFloats({1, 2, 4, 8}, 40))
      .input(randomFloats({1, 2, 6, 8}, 41))
      .input(randomFloats({1, 2, 6, 8}, 42))
      .input(randomFloats({4, 6}, 43, -1.0, 0.0))
      .outputs(4)
      .check(attentionTolerances());
}

TEST(CudaAttention, QkOutputModes) {
  KILN_REQUIRE_GPU();
  for (int64_t mode : {0, 2, 3}) {
    SCOPED_TRACE("qk_matmul_output_mode " + std::to_string(mode));
    GpuOpTest("Attention", 23)
        .attr("is_causal", int64_t{1})
        .attr("qk_matmul_output_mode", mode)
        .input(randomFloats({1, 2, 4, 8}, 44))
        .input(randomFloats({1, 2, 4, 8}, 45))
        .input(randomFloats({1, 2, 4, 8}, 46))
        .input(randomFloats({4, 4}, 47, -1.0, 0.0))
        .outputs(4)
        .check(attentionTolerances());
  }
}

TEST(CudaAttention, NonpadKvSeqlen) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Attention", 24)
      .attr("is_causal", int64_t{1})
      .input(randomFloats({2, 2, 3, 8}, 48))
      .input(randomFloats({2, 2, 7, 8}, 49))
      .input(randomFloats({2, 2, 7, 8}, 50))
      .missingInput()
      .missingInput()
      .missingInput()
      .input(int64Tensor({2}, {5, 7}))
      .check(attentionTolerances());
}

TEST(CudaAttention, SlidingWindow) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Attention", 25)
      .attr("left_window_size", int64_t{2})
      .attr("right_window_size", int64_t{1})
      .input(randomFloats({1, 2, 6, 8}, 51))
      .input(randomFloats({1, 2, 6, 8}, 52))
      .input(randomFloats({1, 2, 6, 8}, 53))
      .check(attentionTolerances());
}

TEST(CudaAttention, LongKeyRow) {
  KILN_REQUIRE_GPU();
  // More keys than one softmax block's threads: strided row loops and block reductions.
  GpuOpTest("Attention", 23)
      .input(randomFloats({1, 2, 3, 16}, 54))
      .input(randomFloats({1, 2, 700, 16}, 55))
      .input(randomFloats({1, 2, 700, 16}, 56))
      .check(attentionTolerances());
}

// ------------------------------------------------------------------ RotaryEmbedding

TEST(CudaRotaryEmbedding, FourDimWithPositionIds) {
  KILN_REQUIRE_GPU();
  GpuOpTest("RotaryEmbedding", 23)
      .input(randomFloats({2, 3, 4, 8}, 60))
      .input(randomFloats({10, 4}, 61))
      .input(randomFloats({10, 4}, 62))
      .input(int64Tensor({2, 4}, {0, 1, 2, 3, 9, 4, 7, 5}))
      .check();
}

TEST(CudaRotaryEmbedding, InterleavedPartialWithBroadcastPositionIds) {
  KILN_REQUIRE_GPU();
  GpuOpTest("RotaryEmbedding", 23)
      .attr("interleaved", int64_t{1})
      .attr("rotary_embedding_dim", int64_t{6})
      .input(randomFloats({2, 2, 3, 10}, 63))
      .input(randomFloats({8, 3}, 64))
      .input(randomFloats({8, 3}, 65))
      .input(int64Tensor({1, 3}, {2, 0, 7}))
      .check();
}

TEST(CudaRotaryEmbedding, Packed3dWithoutPositionIds) {
  KILN_REQUIRE_GPU();
  GpuOpTest("RotaryEmbedding", 23)
      .attr("num_heads", int64_t{3})
      .input(randomFloats({2, 5, 3 * 8}, 66))
      .input(randomFloats({2, 5, 4}, 67))
      .input(randomFloats({2, 5, 4}, 68))
      .check();
}

TEST(CudaRotaryEmbedding, Packed3dInterleavedPartialBatchOneCache) {
  KILN_REQUIRE_GPU();
  GpuOpTest("RotaryEmbedding", 23)
      .attr("num_heads", int64_t{2})
      .attr("interleaved", int64_t{1})
      .attr("rotary_embedding_dim", int64_t{4})
      .input(randomFloats({3, 4, 2 * 8}, 69))
      .input(randomFloats({1, 4, 2}, 70))
      .input(randomFloats({1, 4, 2}, 71))
      .check();
}

// ------------------------------------------------------------------ GridSample

TEST(CudaGridSample, EveryModePaddingAndAlignCorners2d) {
  KILN_REQUIRE_GPU();
  const char* modes[] = {"bilinear", "nearest", "bicubic"};
  const char* paddings[] = {"zeros", "border", "reflection"};
  uint32_t seed = 100;
  for (const char* mode : modes) {
    for (const char* padding : paddings) {
      for (int64_t align : {0, 1}) {
        SCOPED_TRACE(std::string(mode) + " " + padding + " align_corners " + std::to_string(align));
        // Grid values past [-1, 1] exercise the padding modes.
        GpuOpTest("GridSample", 16)
            .attr("mode", std::string(mode))
            .attr("padding_mode", std::string(padding))
            .attr("align_corners", align)
            .input(randomFloats({2, 3, 5, 6}, seed++))
            .input(randomFloats({2, 4, 7, 2}, seed++, -1.3, 1.3))
            .check();
      }
    }
  }
}

TEST(CudaGridSample, Volumetric5dEveryMode) {
  KILN_REQUIRE_GPU();
  const char* modes[] = {"linear", "nearest", "cubic"};
  const char* paddings[] = {"zeros", "border", "reflection"};
  uint32_t seed = 200;
  for (const char* mode : modes) {
    for (const char* padding : paddings) {
      SCOPED_TRACE(std::string(mode) + " " + padding);
      GpuOpTest("GridSample", 20)
          .attr("mode", std::string(mode))
          .attr("padding_mode", std::string(padding))
          .attr("align_corners", int64_t{seed % 2})
          .input(randomFloats({1, 2, 4, 5, 3}, seed++))
          .input(randomFloats({1, 3, 2, 4, 3}, seed++, -1.2, 1.2))
          .check();
    }
  }
}

TEST(CudaGridSample, OneSpatialDim) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GridSample", 20)
      .attr("mode", std::string("cubic"))
      .attr("padding_mode", std::string("reflection"))
      .input(randomFloats({2, 3, 9}, 220))
      .input(randomFloats({2, 5, 1}, 221, -1.5, 1.5))
      .check();
}

// ------------------------------------------------------------------ RoiAlign

Tensor testRois() {
  // [x1, y1, x2, y2] in input pixels (spatial_scale 0.5 below halves them); one roi
  // hangs over the border, one is tiny.
  return floatTensor({4, 4}, {0.f, 0.f, 10.f, 8.f,     //
                              3.f, 2.5f, 15.f, 19.f,   //
                              12.f, 10.f, 30.f, 26.f,  //
                              6.f, 6.f, 6.5f, 7.f});
}

TEST(CudaRoiAlign, AvgAdaptiveHalfPixel) {
  KILN_REQUIRE_GPU();
  GpuOpTest("RoiAlign", 16)
      .attr("mode", std::string("avg"))
      .attr("output_height", int64_t{3})
      .attr("output_width", int64_t{4})
      .attr("spatial_scale", 0.5f)
      .input(randomFloats({2, 3, 10, 12}, 300))
      .input(testRois())
      .input(int64Tensor({4}, {0, 1, 1, 0}))
      .check();
}

TEST(CudaRoiAlign, MaxFixedRatioOutputHalfPixel) {
  KILN_REQUIRE_GPU();
  GpuOpTest("RoiAlign", 16)
      .attr("mode", std::string("max"))
      .attr("coordinate_transformation_mode", std::string("output_half_pixel"))
      .attr("output_height", int64_t{2})
      .attr("output_width", int64_t{3})
      .attr("sampling_ratio", int64_t{2})
      .attr("spatial_scale", 0.5f)
      .input(randomFloats({2, 3, 10, 12}, 301))
      .input(testRois())
      .input(int64Tensor({4}, {1, 0, 1, 0}))
      .check();
}

TEST(CudaRoiAlign, MaxAdaptiveOpset10) {
  KILN_REQUIRE_GPU();
  GpuOpTest("RoiAlign", 10)
      .attr("mode", std::string("max"))
      .attr("output_height", int64_t{2})
      .attr("output_width", int64_t{2})
      .attr("spatial_scale", 0.5f)
      .input(randomFloats({2, 2, 10, 12}, 302))
      .input(testRois())
      .input(int64Tensor({4}, {0, 0, 1, 1}))
      .check();
}

// ------------------------------------------------------------------ AffineGrid

TEST(CudaAffineGrid, TwoD) {
  KILN_REQUIRE_GPU();
  GpuOpTest("AffineGrid", 20)
      .input(randomFloats({2, 2, 3}, 400))
      .constant(int64Tensor({4}, {2, 3, 5, 6}))
      .check();
}

TEST(CudaAffineGrid, ThreeDAlignCorners) {
  KILN_REQUIRE_GPU();
  GpuOpTest("AffineGrid", 20)
      .attr("align_corners", int64_t{1})
      .input(randomFloats({2, 3, 4}, 401))
      .constant(int64Tensor({5}, {2, 1, 3, 4, 5}))
      .check();
}

// ------------------------------------------------------------------ Col2Im

TEST(CudaCol2Im, StridesPadsDilations) {
  KILN_REQUIRE_GPU();
  // H: span 2, padded 6, stride 2 -> 3 blocks; W: span 5, padded 7, stride 1 -> 3 blocks.
  GpuOpTest("Col2Im", 18)
      .attr("strides", Ints{2, 1})
      .attr("pads", Ints{1, 0, 0, 1})
      .attr("dilations", Ints{1, 2})
      .input(randomFloats({2, 2 * 6, 9}, 500))
      .constant(int64Tensor({2}, {5, 6}))
      .constant(int64Tensor({2}, {2, 3}))
      .check();
}

TEST(CudaCol2Im, OverlappingBlocks) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Col2Im", 18)
      .input(randomFloats({1, 3 * 4, 12}, 501))
      .constant(int64Tensor({2}, {4, 5}))
      .constant(int64Tensor({2}, {2, 2}))
      .check();
}

// The 2-D kernel's three forms: VOLO's fold (outlook attention: 3 x 3 blocks at stride 2
// with pads of 1, 4 x 4 blocks over an 8 x 8 image), the same blocks at stride 1 over 7 x 7
// (every pixel the sum of up to 9 entries), and a 2 x 2-strided fold of 4 x 4 blocks; a
// dilated one is StridesPadsDilations above.
TEST(CudaCol2Im, OutlookFoldAndStridedBlocks) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Col2Im", 18)
      .attr("strides", Ints{2, 2})
      .attr("pads", Ints{1, 1, 1, 1})
      .input(randomFloats({3, 5 * 9, 16}, 504))
      .constant(int64Tensor({2}, {8, 8}))
      .constant(int64Tensor({2}, {3, 3}))
      .check();
  GpuOpTest("Col2Im", 18)
      .attr("pads", Ints{1, 1, 1, 1})
      .input(randomFloats({3, 5 * 9, 49}, 502))
      .constant(int64Tensor({2}, {7, 7}))
      .constant(int64Tensor({2}, {3, 3}))
      .check();
  GpuOpTest("Col2Im", 18)
      .attr("strides", Ints{2, 2})
      .input(randomFloats({2, 3 * 16, 9}, 503))
      .constant(int64Tensor({2}, {8, 8}))
      .constant(int64Tensor({2}, {4, 4}))
      .check();
}

// 16-bit folds by planes in shared memory: more blocks than a block has threads (20 x 20
// blocks over a 40 x 40 image), and a plane too large to stage (120 x 120: the gather kernel).
TEST(CudaCol2Im, PlanesLargerThanABlock) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Col2Im", 18)
      .attr("strides", Ints{2, 2})
      .attr("pads", Ints{1, 1, 1, 1})
      .input(randomFloats({2, 2 * 9, 400}, 505))
      .constant(int64Tensor({2}, {40, 40}))
      .constant(int64Tensor({2}, {3, 3}))
      .check();
  GpuOpTest("Col2Im", 18)
      .attr("strides", Ints{4, 4})
      .input(randomFloats({1, 16, 900}, 506))
      .constant(int64Tensor({2}, {120, 120}))
      .constant(int64Tensor({2}, {4, 4}))
      .check();
}

// ------------------------------------------------------------------ MaxUnpool

// Indices MaxPool(kernel 2, stride 2) could return for a (1, 2, 6, 6) input: one
// position per window, flat over the whole tensor.
Tensor unpoolIndices() {
  std::vector<int64_t> idx;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t w = 0; w < 3; ++w) {
        const int64_t dh = (h + c) % 2, dw = (w * 3 + c) % 2;
        idx.push_back((c * 6 + 2 * h + dh) * 6 + 2 * w + dw);
      }
  return int64Tensor({1, 2, 3, 3}, idx);
}

TEST(CudaMaxUnpool, InferredShape) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MaxUnpool", 11)
      .attr("kernel_shape", Ints{2, 2})
      .attr("strides", Ints{2, 2})
      .input(randomFloats({1, 2, 3, 3}, 600))
      .input(unpoolIndices())
      .check();
}

TEST(CudaMaxUnpool, LargerOutputShape) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MaxUnpool", 11)
      .attr("kernel_shape", Ints{2, 2})
      .attr("strides", Ints{2, 2})
      .input(randomFloats({1, 2, 3, 3}, 601))
      .input(unpoolIndices())
      .constant(int64Tensor({4}, {1, 2, 7, 8}))
      .check();
}

// ------------------------------------------------------------------ CenterCropPad

TEST(CudaCenterCropPad, CropAndPadOddDifferences) {
  KILN_REQUIRE_GPU();
  GpuOpTest("CenterCropPad", 18)
      .input(randomFloats({3, 5, 4}, 700))
      .constant(int64Tensor({3}, {6, 2, 7}))
      .check();
}

TEST(CudaCenterCropPad, AxesSubsetInt32) {
  KILN_REQUIRE_GPU();
  GpuOpTest("CenterCropPad", 18)
      .attr("axes", Ints{-1, 0})
      .input(randomTensor(DataType::kInt32, {4, 3, 7}, 701, -50, 50))
      .constant(int64Tensor({2}, {4, 1}))
      .check(fp32Only());
}

// ------------------------------------------------------------------ TensorScatter

TEST(CudaTensorScatter, LinearWithWriteIndices) {
  KILN_REQUIRE_GPU();
  GpuOpTest("TensorScatter", 24)
      .input(randomFloats({2, 3, 8, 4}, 800))
      .input(randomFloats({2, 3, 3, 4}, 801))
      .input(int64Tensor({2}, {1, 5}))
      .check();
}

TEST(CudaTensorScatter, CircularWrapsAroundAxis1) {
  KILN_REQUIRE_GPU();
  GpuOpTest("TensorScatter", 24)
      .attr("axis", int64_t{1})
      .attr("mode", std::string("circular"))
      .input(randomFloats({2, 6, 5}, 802))
      .input(randomFloats({2, 4, 5}, 803))
      .input(int64Tensor({2}, {4, 1}))
      .check();
}

TEST(CudaTensorScatter, NoWriteIndices) {
  KILN_REQUIRE_GPU();
  GpuOpTest("TensorScatter", 24)
      .input(randomFloats({1, 2, 5, 3}, 804))
      .input(randomFloats({1, 2, 2, 3}, 805))
      .check();
}

}  // namespace
}  // namespace kiln::test
