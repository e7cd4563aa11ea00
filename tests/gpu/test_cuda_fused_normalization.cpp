// The ai.kiln row kernels of the softmax and residual fusions on the CUDA engine
// against the CPU reference: warp rows with 16-byte packs (BERT's 128 and 768: 4 float32
// or 8 16-bit elements), 8-byte packs of 16-bit types (rows of 4k, not 8k), warp rows
// element by element (odd lengths, a broadcast last dim), block rows (> 1024),
// broadcast masks and biases; then the fused tiny BERT layer end to end.
//
// Tolerances: fp32 1e-5 for the softmax (probabilities <= 1, float exp on both
// sides); 5e-5 for AddLayerNorm (mean and variance in float over up to 2048
// elements, the reference in double). fp16/bf16: the inputs are rounded first,
// the kernels compute in float, so only the output rounding remains: 4e-3 and 3e-2.
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/ops/fused_normalization_impl.h"
#include "gpu/gpu_op_test.h"
#include "kiln/onnx_import.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"

namespace kiln::test {
namespace {

// An additive padding mask: -1e4 (finite in fp16) on about a quarter of the keys.
Tensor paddingMask(const Shape& shape, uint32_t seed) {
  Tensor m = randomFloats(shape, seed);
  for (int64_t i = 0; i < m.numel(); ++i)
    m.data<float>()[i] = m.data<float>()[i] < -0.5f ? -1e4f : 0.f;
  return m;
}

std::vector<PrecisionTolerance> softmaxTolerances() {
  return {{cuda::Precision::kFloat32, 1e-5, 1e-5},
          {cuda::Precision::kFloat16, 4e-3, 4e-3},
          {cuda::Precision::kBFloat16, 3e-2, 3e-2}};
}

std::vector<PrecisionTolerance> normTolerances() {
  return {{cuda::Precision::kFloat32, 5e-5, 5e-5},
          {cuda::Precision::kFloat16, 4e-3, 4e-3},
          {cuda::Precision::kBFloat16, 3e-2, 3e-2}};
}

GpuOpTest softmaxOp(float scale) {
  GpuOpTest op("ScaledMaskedSoftmax", 1, kKilnDomain);
  op.attr("scale", scale);
  return op;
}

TEST(CudaScaledMaskedSoftmax, BertScoresWithPaddingMask) {
  KILN_REQUIRE_GPU();
  // [batch, heads, seq, seq] scores, [batch, 1, 1, seq] mask: one 16-byte pack per lane
  // (float32: 4 elements; 16-bit types: 8, half the lanes).
  softmaxOp(0.125f)
      .input(randomFloats({2, 3, 128, 128}, 1, -20.0, 20.0))
      .input(paddingMask({2, 1, 1, 128}, 2))
      .check(softmaxTolerances());
}

TEST(CudaScaledMaskedSoftmax, RowLengthsAcrossThePaths) {
  KILN_REQUIRE_GPU();
  // 7: element by element; 100: packs of 4 in every type (not a multiple of 8); 1000:
  // 250 packs of 4 float32 (8 per lane) or 125 of 8 16-bit elements; 2500: a block per row.
  for (int64_t n : {7, 96, 100, 1000, 2500}) {
    SCOPED_TRACE(n);
    softmaxOp(0.3f)
        .input(randomFloats({3, 5, n}, 3, -6.0, 6.0))
        .input(paddingMask({3, 1, n}, 4))
        .check(softmaxTolerances());
  }
}

// mask_replaces (fuse_masked_fill_softmax's masked_fill): a nonzero mask value is the score;
// X at those positions is never read (inf and NaN there leave the row finite). Rows of 40 (a
// warp, element packs) and 2500 (a block), the mask broadcast over heads, one row all masked.
TEST(CudaScaledMaskedSoftmax, ReplacingMaskIgnoresTheMaskedScores) {
  KILN_REQUIRE_GPU();
  for (int64_t n : {40, 2500}) {
    SCOPED_TRACE(n);
    Tensor x = randomFloats({2, 3, 4, n}, 10, -6.0, 6.0);
    Tensor mask = paddingMask({2, 1, 4, n}, 11);
    for (int64_t k = 0; k < n; ++k) mask.data<float>()[k] = -1e4f;  // row 0 all masked
    for (int64_t i = n; i < mask.numel() / 2; ++i) {                // batch 0, rows 1-3
      if (mask.data<float>()[i] == 0.f) continue;
      x.data<float>()[i] = (i % 2) ? std::numeric_limits<float>::infinity()
                                   : std::numeric_limits<float>::quiet_NaN();
    }
    softmaxOp(0.5f)
        .attr("mask_replaces", int64_t{1})
        .input(x)
        .input(mask)
        .check(softmaxTolerances());
  }
}

TEST(CudaScaledMaskedSoftmax, BroadcastsAndNoMask) {
  KILN_REQUIRE_GPU();
  // A mask with a broadcast last dim (one value per row: stride 0).
  softmaxOp(1.f)
      .input(randomFloats({2, 4, 64}, 5, -4.0, 4.0))
      .input(randomFloats({2, 4, 1}, 6))
      .check(softmaxTolerances());
  // X smaller than the mask: Y takes the mask's shape.
  softmaxOp(0.5f)
      .input(randomFloats({4, 32}, 7, -4.0, 4.0))
      .input(paddingMask({2, 4, 32}, 8))
      .check(softmaxTolerances());
  softmaxOp(2.f).input(randomFloats({6, 129}, 9, -3.0, 3.0)).check(softmaxTolerances());
}

GpuOpTest addNormOp() {
  GpuOpTest op("AddLayerNorm", 1, kKilnDomain);
  op.attr("epsilon", 1e-5f);
  return op;
}

TEST(CudaAddLayerNorm, BertResidualWithAndWithoutTheSum) {
  KILN_REQUIRE_GPU();
  for (int outputs : {1, 2}) {
    SCOPED_TRACE(outputs);
    addNormOp()
        .input(randomFloats({4, 7, 768}, 10, -3.0, 3.0))
        .input(randomFloats({4, 7, 768}, 11, -3.0, 3.0))
        .constant(randomFloats({768}, 12, 0.5, 1.5))
        .constant(randomFloats({768}, 13))
        .outputs(outputs)
        .check(normTolerances());
  }
}

TEST(CudaAddLayerNorm, RowLengthsAndBroadcasts) {
  KILN_REQUIRE_GPU();
  // 33: element by element; 100: packs of 4 in every type (not a multiple of 8); 2048: a
  // block per row (sum written too).
  for (int64_t n : {33, 100, 2048}) {
    SCOPED_TRACE(n);
    addNormOp()
        .input(randomFloats({5, n}, 14, -2.0, 2.0))
        .input(randomFloats({5, n}, 15, -2.0, 2.0))
        .constant(randomFloats({n}, 16, 0.5, 1.5))
        .constant(randomFloats({n}, 17))
        .outputs(2)
        .check(normTolerances());
  }
  // A bias along the last dim, no beta.
  addNormOp()
      .input(randomFloats({3, 9, 256}, 18, -2.0, 2.0))
      .constant(randomFloats({256}, 19))
      .constant(randomFloats({256}, 20, 0.5, 1.5))
      .check(normTolerances());
  // Position embeddings [1, seq, hidden] over the batch.
  addNormOp()
      .input(randomFloats({3, 9, 256}, 21, -2.0, 2.0))
      .input(randomFloats({1, 9, 256}, 22, -2.0, 2.0))
      .constant(randomFloats({256}, 23, 0.5, 1.5))
      .constant(randomFloats({256}, 24))
      .outputs(2)
      .check(normTolerances());
}

// rms = 1 (RMSNormalization of the sum: T5, LLaMA): the warp rows (768, 8-element packs in
// 16 bits; 100, 4-element packs; 33, element by element) and the block rows (2048), with
// and without the sum.
TEST(CudaAddLayerNorm, RmsFormAcrossThePaths) {
  KILN_REQUIRE_GPU();
  for (int64_t n : {768, 100, 33, 2048}) {
    for (int outputs : {1, 2}) {
      SCOPED_TRACE(std::to_string(n) + " elements, " + std::to_string(outputs) + " outputs");
      addNormOp()
          .attr("rms", int64_t{1})
          .input(randomFloats({3, 7, n}, 30, -3.0, 3.0))
          .input(randomFloats({3, 7, n}, 31, -3.0, 3.0))
          .constant(randomFloats({n}, 32, 0.5, 1.5))
          .outputs(outputs)
          .check(normTolerances());
    }
  }
}

// Rows of at most 16 packs share a warp (addNormLanesPerRow): TNT's 24 channels (3 packs of
// 8 in 16 bits, 6 of 4 in float32), 8 (one lane a row in 16 bits), 12 (packs of 4), 5 and 16
// (element by element); 37 rows leave the last warp part empty. With the sum, a bias along
// the last dim, and the rms form.
TEST(CudaAddLayerNorm, ShortRowsSeveralAWarp) {
  KILN_REQUIRE_GPU();
  EXPECT_EQ(cuda::fused_norm::addNormLanesPerRow(24, 8), 4);
  EXPECT_EQ(cuda::fused_norm::addNormLanesPerRow(24, 4), 8);
  EXPECT_EQ(cuda::fused_norm::addNormLanesPerRow(8, 8), 1);
  EXPECT_EQ(cuda::fused_norm::addNormLanesPerRow(128, 8), 16);
  EXPECT_EQ(cuda::fused_norm::addNormLanesPerRow(33, 1), 32);
  for (int64_t n : {24, 8, 12, 5, 16, 128}) {
    for (int64_t rms : {0, 1}) {
      SCOPED_TRACE(std::to_string(n) + " elements, rms " + std::to_string(rms));
      addNormOp()
          .attr("rms", rms)
          .input(randomFloats({37, n}, 40, -2.0, 2.0))
          .input(randomFloats({37, n}, 41, -2.0, 2.0))
          .constant(randomFloats({n}, 42, 0.5, 1.5))
          .constant(randomFloats({n}, 43))
          .outputs(2)
          .check(normTolerances());
    }
    addNormOp()
        .input(randomFloats({37, n}, 44, -2.0, 2.0))
        .constant(randomFloats({n}, 45))
        .constant(randomFloats({n}, 46, 0.5, 1.5))
        .check(normTolerances());
  }
}

// residual_after = 1 (the post-norm residual, SwinV2's x + norm(f(x))): Y = norm(A) + B on every
// path: rows several a warp (96: SwinV2's stage 1, 12 packs of 8 in 16 bits; 24), a warp a row
// (384 and 768 in packs of 8, 100 in packs of 4, 33 element by element), a block a row (2048);
// a residual broadcast along the rows (a bias [n]); the rms form.
TEST(CudaAddLayerNorm, ResidualAfterTheNormAcrossThePaths) {
  KILN_REQUIRE_GPU();
  for (int64_t n : {96, 24, 384, 768, 100, 33, 2048}) {
    for (int64_t rms : {0, 1}) {
      SCOPED_TRACE(std::to_string(n) + " elements, rms " + std::to_string(rms));
      addNormOp()
          .attr("residual_after", int64_t{1})
          .attr("rms", rms)
          .input(randomFloats({37, n}, 50, -2.0, 2.0))
          .input(randomFloats({37, n}, 51, -2.0, 2.0))
          .constant(randomFloats({n}, 52, 0.5, 1.5))
          .constant(randomFloats({n}, 53))
          .check(normTolerances());
    }
    addNormOp()
        .attr("residual_after", int64_t{1})
        .input(randomFloats({3, 11, n}, 54, -2.0, 2.0))
        .constant(randomFloats({n}, 55))
        .constant(randomFloats({n}, 56, 0.5, 1.5))
        .check(normTolerances());
  }
}

TEST(CudaAddLayerNorm, WrongGammaIsAnError) {
  KILN_REQUIRE_GPU();
  auto out = addNormOp()
                 .input(randomFloats({2, 8}, 25))
                 .input(randomFloats({2, 8}, 26))
                 .constant(randomFloats({4}, 27))
                 .runCuda(cuda::Precision::kFloat32);
  ASSERT_FALSE(out.isOk());
  EXPECT_NE(out.status().message().find("gamma"), std::string::npos) << out.status().message();
}

// The tiny BERT layer after the pipeline (FusedMatMul, FusedAttention, which took the
// ScaledMaskedSoftmax in, AddLayerNorm) on the CUDA engine, against the unfused graph on
// the CPU.
TEST(CudaFusedNormalization, FusedTinyBertMatchesTheUnfusedReference) {
  KILN_REQUIRE_GPU();
  const char* dir = std::getenv("KILN_TEST_DATA_DIR");
  auto imported =
      importOnnxFile(std::string(dir ? dir : KILN_TEST_DATA_DIR) + "/builder/tiny_bert.onnx");
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  auto fused = std::make_shared<Network>(imported.value());
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(*fused, 1, {}, &applied).isOk());
  const Tensor ids = randomInputTensor(DataType::kInt64, {4, 37}, 5);
  std::vector<NamedTensor> expected;
  ASSERT_TRUE(ReferenceBackend(imported.value()).run({{"input_ids", ids}}, &expected).isOk());
  cuda::EngineOptions options;
  options.allowTf32 = false;
  auto engine = cuda::Engine::create(fused, options);
  ASSERT_TRUE(engine.isOk()) << engine.status().toString();
  auto context = (*engine)->createContext();
  ASSERT_TRUE(context.isOk()) << context.status().toString();
  ASSERT_TRUE((*context)->setInputShape("input_ids", ids.shape()).isOk());
  ASSERT_TRUE((*context)->setInput("input_ids", ids).isOk());
  Status ran = (*context)->execute();
  ASSERT_TRUE(ran.isOk()) << ran.toString();
  int onGpu = 0;
  for (const cuda::LayerInfo& layer : (*context)->layers()) {
    if (layer.opType != "FusedAttention" && layer.opType != "AddLayerNorm") continue;
    EXPECT_EQ(layer.placement, cuda::LayerPlacement::kGpu) << layer.name << ": " << layer.note;
    ++onGpu;
  }
  EXPECT_EQ(onGpu, 3);
  auto out = (*context)->getOutput("hidden");
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  expectTensorNear(out.value(), expected[0].tensor, 1e-4, 1e-3);
}

}  // namespace
}  // namespace kiln::test
