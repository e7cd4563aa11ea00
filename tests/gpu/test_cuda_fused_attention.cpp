// ai.kiln FusedAttention on the CUDA engine against the CPU reference: the BERT
// attention block is built in code (tests/engine/passes/attention_graph.h), fused by
// the pipeline, run on the GPU into an output buffer poisoned with NaN before every
// run, and compared with the UNFUSED graph on the CPU fed the same (precision-rounded)
// inputs. Shapes cover the fast path (D = 64, 16-byte loads), every head-size padding
// (32, 64, 128, 256) with and without 16-byte loads, sequences that are not multiples of
// the key tiles, cross attention, the BHSD layout, each mask broadcast, -inf masks and
// a fully masked row (NaN on both sides; 0 for the SDPA export's guarded softmax; a
// uniform row for a mask of the type's lowest value), V's head size differing from Q's
// (LeViT), a CUDA build that keeps an attention the kernel cannot run unfused, and the
// STRIDED views of fold_attention_views (timm's packed QKV, nn.MultiheadAttention's
// sequence-first split and head merge; offsets into one tensor, with and without 16-byte
// loads).
//
// Tolerances: fp32 3e-5 (SIMT float dot products of <= 128 terms and exp2f against the
// reference's float GEMMs; |Y| <= 2). fp16 4e-3: inputs are rounded first, so only the
// kernel's rounding of P to half for the second product (2^-11 relative) and of Y
// (2^-11 relative of |Y| <= 2) remain. bf16 3e-2: the same with 2^-8.
#include <cuda_runtime_api.h>

#include <array>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/passes/attention_graph.h"
#include "engine/passes/packed_attention_graph.h"
#include "gpu/gpu_op_test.h"
#include "kiln/builder.h"
#include "kiln/cuda_build_backend.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"

namespace kiln::test {
namespace {

struct Tolerance {
  cuda::Precision precision;
  double tolerance;
};

const std::vector<Tolerance> kAllPrecisions = {{cuda::Precision::kFloat32, 3e-5},
                                               {cuda::Precision::kFloat16, 4e-3},
                                               {cuda::Precision::kBFloat16, 3e-2}};

using Feeds = std::map<std::string, Tensor>;

// Compares the CUDA run of `fused` with the CPU run of `unfused` at each precision
// (inputs rounded to it first); the FusedAttention layer runs on the GPU with Kiln's
// kernel, or (expectGpu false) on the host for its head size.
void compareWithUnfused(const Network& unfused, const Network& fused, const Feeds& base,
                        const std::vector<Tolerance>& tolerances, bool expectGpu,
                        const char* kernel = "kiln flash attention") {
  for (const Tolerance& t : tolerances) {
    SCOPED_TRACE(std::string("precision ") + cuda::precisionName(t.precision));
    const Feeds feeds = roundTo(base, t.precision);
    std::vector<NamedTensor> expected;
    Status ran = ReferenceBackend(unfused).run(feeds, &expected);
    ASSERT_TRUE(ran.isOk()) << ran.toString();
    std::vector<cuda::LayerInfo> layers;
    auto actual = runCudaPoisoned(fused, feeds, t.precision, "y", &layers);
    ASSERT_TRUE(actual.isOk()) << actual.status().toString();
    bool seen = false;
    for (const cuda::LayerInfo& layer : layers) {
      if (layer.opType != "FusedAttention") continue;
      seen = true;
      if (!expectGpu) {
        EXPECT_EQ(layer.placement, cuda::LayerPlacement::kHostFallback) << layer.name;
        EXPECT_NE(layer.note.find("head size"), std::string::npos) << layer.note;
        continue;
      }
      EXPECT_EQ(layer.placement, cuda::LayerPlacement::kGpu) << layer.name << ": " << layer.note;
      EXPECT_NE(layer.implementation.find(kernel), std::string::npos) << layer.implementation;
    }
    EXPECT_TRUE(seen);
    expectTensorNear(actual.value(), expected[0].tensor, t.tolerance, t.tolerance);
  }
}

// `original` through the level-1 pipeline; the number of FusedAttention nodes in
// qkv_layout `layout` ("" any). Each is pinned to Kiln's kernel (path kiln): these
// shapes test that kernel, which cuDNN's graph might otherwise outrun
// (test_cuda_attention_cudnn.cpp tests the race).
Network fusedCopy(const Network& original, const std::string& layout, int* count) {
  Network fused = original;
  std::vector<PassApplication> applied;
  const Status s = runPasses(fused, 1, {}, &applied);
  EXPECT_TRUE(s.isOk()) << s.toString();
  *count = 0;
  for (Node& n : fused.graph.nodes) {
    if (n.opType != "FusedAttention") continue;
    *count += layout.empty() || n.attrString("qkv_layout", "") == layout;
    n.attributes["path"].kind = Attribute::Kind::kString;
    n.attributes["path"].s = "kiln";
  }
  return fused;
}

// Fuses c's graph, checks it holds one FusedAttention, and compares the CUDA run of the
// fused graph with the CPU run of the unfused one at each precision.
void checkCase(const AttentionCase& c, const std::vector<Tolerance>& tolerances = kAllPrecisions,
               void (*edit)(Feeds&) = nullptr, bool expectGpu = true,
               const char* kernel = "kiln flash attention") {
  const Network unfused = attentionNetwork(c);
  int attention = 0;
  const Network fused = fusedCopy(unfused, "", &attention);
  ASSERT_EQ(attention, 1) << "the pass did not fuse the block";
  Feeds base = attentionFeeds(c, 11);
  if (edit) edit(base);
  compareWithUnfused(unfused, fused, base, tolerances, expectGpu, kernel);
}

// The packed-QKV block: the pipeline must read it through STRIDED views.
void checkPackedCase(const PackedAttentionCase& c, const char* kernel = "kiln flash attention") {
  const Network unfused = packedAttentionNetwork(c);
  int strided = 0;
  const Network fused = fusedCopy(unfused, "STRIDED", &strided);
  ASSERT_EQ(strided, 1) << "the views did not fold";
  compareWithUnfused(unfused, fused, packedAttentionFeeds(c, 5), kAllPrecisions, true, kernel);
}

AttentionCase bertLike(int64_t seq, int64_t headDim) {
  AttentionCase c;
  c.batch = 2;
  c.seqQ = c.seqK = seq;
  c.heads = 3;
  c.headDim = headDim;
  c.mask = {2, 1, 1, seq};
  return c;
}

TEST(CudaFusedAttention, BertShapesOnTheFastPath) {
  KILN_REQUIRE_GPU();
  checkCase(bertLike(128, 64));  // two full key tiles, 16-byte loads
}

TEST(CudaFusedAttention, SequencesAcrossTheTiles) {
  KILN_REQUIRE_GPU();
  for (int64_t seq : {1, 5, 63, 65, 77, 200}) {
    SCOPED_TRACE("seq " + std::to_string(seq));
    checkCase(bertLike(seq, 64));
  }
}

// Both sequences and head sizes <= 32: a warp per (batch, head), two when the queries fit 16
// lanes. TNT's pixel attention (16 pixels, heads of 6, a padding mask), cross attention with a
// per-head mask and V's head size of its own, the 32 x 32 edge without a mask, one query row, and
// the SDPA export's fully masked row (0).
TEST(CudaFusedAttention, ShortSequencesAWarpPerHead) {
  KILN_REQUIRE_GPU();
  const char* kShort = "kiln short-sequence attention";
  AttentionCase tnt = bertLike(16, 6);
  checkCase(tnt, kAllPrecisions, nullptr, true, kShort);
  AttentionCase cross = bertLike(9, 24);
  cross.seqK = 31;
  cross.mask = {2, 3, 9, 31};
  cross.valueDim = 12;
  checkCase(cross, kAllPrecisions, nullptr, true, kShort);
  AttentionCase edge = bertLike(32, 32);
  edge.mask = {};
  edge.divide = false;
  checkCase(edge, kAllPrecisions, nullptr, true, kShort);
  checkCase(bertLike(1, 17), kAllPrecisions, nullptr, true, kShort);
  // Two problems a warp on a 32 x 16 tile, and 9 problems: the last warp's second half idle.
  AttentionCase paired = bertLike(12, 16);
  paired.batch = 3;
  paired.seqK = 24;
  paired.mask = {3, 1, 1, 24};
  checkCase(paired, kAllPrecisions, nullptr, true,
            "kiln short-sequence attention, two (batch, head) a warp, 12 x 24 scores in "
            "registers, K / V padded to 32 x 16");
  // The SDPA export's guarded softmax: query row 3 of batch 1 sees no key, 0 as unfused.
  AttentionCase sdpa = bertLike(20, 8);
  sdpa.sdpaExport = true;
  sdpa.mask = {2, 1, 20, 20};
  checkCase(
      sdpa, kAllPrecisions,
      [](Feeds& feeds) {
        Tensor& keep = feeds["mask_bool"];
        for (int64_t j = 0; j < 20; ++j) keep.data<uint8_t>()[20 * 20 + 3 * 20 + j] = 0;
      },
      true, kShort);
}

TEST(CudaFusedAttention, EveryHeadSizePadding) {
  KILN_REQUIRE_GPU();
  // 16-byte loads at 32, 40, 96, 128; element loads at 20 and 57 (D % 8 != 0).
  for (int64_t d : {32, 40, 96, 128, 20, 57}) {
    SCOPED_TRACE("head size " + std::to_string(d));
    checkCase(bertLike(70, d));
  }
}

// Head sizes over 128 (Gemma's 256): D and Dv both padded to 256, Q's fragments read from
// shared memory at every tile; 16-byte loads at 160 and 256, element loads at 250; then
// Dv alone over 128 and D alone over 128 (both still padded to 256), the last on a
// partial key tile.
TEST(CudaFusedAttention, WideHeadSizesUpTo256) {
  KILN_REQUIRE_GPU();
  for (int64_t d : {160, 256, 250}) {
    SCOPED_TRACE("head size " + std::to_string(d));
    checkCase(bertLike(70, d));
  }
  for (auto [d, dv, n] :
       std::vector<std::array<int64_t, 3>>{{64, 256, 77}, {200, 96, 40}, {256, 256, 130}}) {
    SCOPED_TRACE("D " + std::to_string(d) + ", Dv " + std::to_string(dv) + ", N " +
                 std::to_string(n));
    AttentionCase c = bertLike(n, d);
    c.valueDim = dv;
    checkCase(c);
  }
}

TEST(CudaFusedAttention, CrossAttentionAndNoMask) {
  KILN_REQUIRE_GPU();
  AttentionCase c = bertLike(9, 64);
  c.seqK = 150;  // three key tiles, the last one partial
  c.mask = {};
  c.divide = false;
  checkCase(c);
}

// Each mask broadcast at an odd length (the kernel reads the mask one element at a time)
// and at 136 (rows of a multiple of 8 keys: whole tiles read each thread's 16 keys in two
// 16-byte loads, the last tile of 8 keys one at a time).
TEST(CudaFusedAttention, MaskBroadcasts) {
  KILN_REQUIRE_GPU();
  for (int64_t n : {77, 136}) {
    for (const Shape& mask :
         {Shape{2, 1, n, n}, Shape{2, 3, n, n}, Shape{n, n}, Shape{1, 1, 1, n}}) {
      SCOPED_TRACE(shapeToString(mask));
      AttentionCase c = bertLike(n, 64);
      c.mask = mask;
      checkCase(c);
    }
  }
}

TEST(CudaFusedAttention, BhsdLayoutWithoutHeadTransposes) {
  KILN_REQUIRE_GPU();
  AttentionCase c = bertLike(77, 64);
  c.headSplit = false;
  c.mask = {2, 3, 77, 77};
  checkCase(c);
}

// `fill` on every key >= 40 of batch 0 (the whole rest of the first key tile and the second)
// and on all of query row 3 of batch 1, at 70 keys (the mask read one element at a time) and at
// 128 (16-byte vectors); the other rows prove the output was written.
void checkHiddenKeysAndRow(float fill) {
  for (int64_t n : {70, 128}) {
    SCOPED_TRACE("seq " + std::to_string(n));
    AttentionCase c = bertLike(n, 64);
    c.mask = {2, 1, n, n};
    static int64_t seq = 0;  // the edit below is a plain function pointer
    static float value = 0.f;
    seq = n;
    value = fill;
    checkCase(c, kAllPrecisions, [](Feeds& feeds) {
      Tensor& m = feeds["mask"];
      for (int64_t i = 0; i < seq; ++i)
        for (int64_t j = 40; j < seq; ++j) m.data<float>()[i * seq + j] = value;
      for (int64_t j = 0; j < seq; ++j) m.data<float>()[seq * seq + 3 * seq + j] = value;
    });
  }
}

// -inf: the fully hidden row's output is NaN in the unfused graph and must be here too.
TEST(CudaFusedAttention, InfiniteMaskAndAFullyMaskedRow) {
  KILN_REQUIRE_GPU();
  checkHiddenKeysAndRow(-std::numeric_limits<float>::infinity());
}

// transformers' masks and masked_fill (after masked_fill_as_additive_mask) fill with the
// type's lowest value, not -inf: on a row it hides entirely the unfused graph's s + lowest
// rounds to lowest on every key, a uniform row. bfloat16's lowest (-0x1.fep127, exact in
// float32 and bfloat16; float16 rounds it to -inf, NaN on both sides as above) times log2(e)
// overflowed float to -inf in the kernel, and that row was NaN.
TEST(CudaFusedAttention, LowestFloatMaskHidesAWholeRowUniformly) {
  KILN_REQUIRE_GPU();
  checkHiddenKeysAndRow(-0x1.fep127f);
}

TEST(CudaFusedAttention, ValueHeadSizeOfItsOwn) {
  KILN_REQUIRE_GPU();
  // LeViT-128's attention (D = 16, Dv = 32) and its subsampling attention (Dv = 64) with
  // an attention bias [H, N, N] on 7 x 7 and 14 x 14 tokens; then Dv below D, and a pair
  // on element loads (D % 8 != 0).
  for (auto [d, dv, n] : std::vector<std::array<int64_t, 3>>{
           {16, 32, 49}, {16, 64, 196}, {64, 32, 77}, {40, 128, 70}, {20, 57, 33}}) {
    SCOPED_TRACE("D " + std::to_string(d) + ", Dv " + std::to_string(dv) + ", N " +
                 std::to_string(n));
    AttentionCase c = bertLike(n, d);
    c.valueDim = dv;
    c.divide = false;
    c.mask = {3, n, n};
    checkCase(c);
  }
}

TEST(CudaFusedAttention, SdpaExportWithAFullyMaskedRow) {
  KILN_REQUIRE_GPU();
  // transformers' default (SDPA) attention as exported: both scales, a boolean mask,
  // the NaN-guarded softmax. Query row 3 of batch 1 sees no key: 0 there, as unfused.
  AttentionCase c = bertLike(70, 64);
  c.sdpaExport = true;
  c.mask = {2, 1, 70, 70};
  checkCase(c, kAllPrecisions, [](Feeds& feeds) {
    Tensor& keep = feeds["mask_bool"];
    for (int64_t j = 0; j < 70; ++j) keep.data<uint8_t>()[70 * 70 + 3 * 70 + j] = 0;
  });
}

TEST(CudaFusedAttention, TheCudaBuildKeepsWhatTheKernelCannotRunUnfused) {
  KILN_REQUIRE_GPU();
  // D = 288 is past the kernel's 256: the CUDA build never makes the layer (the reason
  // is in the record's warnings) and every layer of the plan runs on the GPU.
  AttentionCase c = bertLike(20, 288);
  auto network = std::make_shared<const Network>(attentionNetwork(c));
  BuilderConfig config;
  config.tf32 = false;
  config.fp16 = true;
  auto backend = cuda::createCudaBuildBackend(0, config);
  ASSERT_TRUE(backend.isOk()) << backend.status().toString();
  auto plan = buildPlan(network, config, **backend);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  for (const Node& n : plan->network->graph.nodes) EXPECT_NE(n.opType, "FusedAttention");
  bool warned = false;
  for (const std::string& w : plan->record.warnings)
    warned = warned || w.find("target refuses FusedAttention: head size 288") != std::string::npos;
  EXPECT_TRUE(warned);
  const Feeds feeds = roundTo(attentionFeeds(c, 4), cuda::Precision::kFloat16);
  std::vector<NamedTensor> expected;
  ASSERT_TRUE(ReferenceBackend(*network).run(feeds, &expected).isOk());
  std::vector<cuda::LayerInfo> layers;
  auto actual = runCudaPoisoned(*plan->network, feeds, cuda::Precision::kFloat16, "y", &layers);
  ASSERT_TRUE(actual.isOk()) << actual.status().toString();
  EXPECT_FALSE(layers.empty());
  for (const cuda::LayerInfo& layer : layers)  // kernels, and Reshape views (kAlias)
    EXPECT_NE(layer.placement, cuda::LayerPlacement::kHostFallback)
        << layer.name << ": " << layer.note;
  expectTensorNear(actual.value(), expected[0].tensor, 2e-2, 2e-2);
}

TEST(CudaFusedAttention, UnsupportedHeadSizeRunsOnTheHost) {
  KILN_REQUIRE_GPU();
  // D = 288 is past the kernel's 256: the layer falls back to the host reference with
  // the reason as its note, and the results still match.
  checkCase(bertLike(20, 288), {{cuda::Precision::kFloat32, 1e-5}}, nullptr, false);
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// Swin's shifted windows: the mask read modulo the windows (mask_batch_period), with the
// relative position bias folded in; 7x7 windows of 49 tokens, head size 32.
TEST(CudaFusedAttention, ShiftedWindowMaskReadPerWindow) {
  KILN_REQUIRE_GPU();
  // 7 x 7 windows on the flash kernel; 4 x 4 windows (16 tokens, heads of 32) on the
  // short-sequence kernel, which reads the mask of window b mod 16 too.
  for (int64_t seq : {49, 16}) {
    SCOPED_TRACE("window of " + std::to_string(seq));
    WindowAttentionCase c;
    c.images = 3;
    c.windows = 16;
    c.heads = 3;
    c.seq = seq;
    c.dim = 32;
    const Network unfused = windowAttentionNetwork(c);
    int attention = 0;
    const Network fused = fusedCopy(unfused, "", &attention);
    ASSERT_EQ(attention, 1) << "the pass did not fuse the block";
    bool periodic = false;
    for (const Node& n : fused.graph.nodes) periodic |= n.attrInt("mask_batch_period", 0) == 16;
    EXPECT_TRUE(periodic);
    compareWithUnfused(unfused, fused, windowAttentionFeeds(c, 8), kAllPrecisions, true,
                       seq == 16 ? "kiln short-sequence attention" : "kiln flash attention");
  }
}

TEST(CudaFusedAttention, StridedViewsOfAPackedQkv) {
  KILN_REQUIRE_GPU();
  for (bool sequenceFirst : {false, true}) {
    for (int64_t headDim : {64, 40, 20}) {  // 16-byte loads at 64 and 40; element loads at 20
      SCOPED_TRACE((sequenceFirst ? "sequence first, D = " : "batch first, D = ") +
                   std::to_string(headDim));
      PackedAttentionCase c;
      c.batch = 3;
      c.seq = 77;  // a partial key tile
      c.heads = 4;
      c.headDim = headDim;
      c.sequenceFirst = sequenceFirst;
      checkPackedCase(c);
    }
  }
}

// The same STRIDED views (offsets into the packed QKV, odd strides) on the short-sequence
// kernel: 20 tokens, heads of 20 and 8.
TEST(CudaFusedAttention, StridedViewsOfAPackedQkvOnShortSequences) {
  KILN_REQUIRE_GPU();
  for (bool sequenceFirst : {false, true}) {
    for (int64_t headDim : {20, 8}) {
      SCOPED_TRACE((sequenceFirst ? "sequence first, D = " : "batch first, D = ") +
                   std::to_string(headDim));
      PackedAttentionCase c;
      c.batch = 3;
      c.seq = 20;
      c.heads = 4;
      c.headDim = headDim;
      c.sequenceFirst = sequenceFirst;
      checkPackedCase(c, "kiln short-sequence attention");
    }
  }
}

// nn.MultiheadAttention(batch_first=True) whole: fold_sequence_first_transposes drops the
// copies to and from sequence-first order, so the GPU reads Q, K, V batch-first from the
// in-projection and writes BSHD for the out-projection's rows.
TEST(CudaFusedAttention, BatchFirstMultiheadAttentionWithoutItsTransposes) {
  KILN_REQUIRE_GPU();
  for (int64_t headDim : {64, 32}) {
    SCOPED_TRACE("D = " + std::to_string(headDim));
    PackedAttentionCase c;
    c.batch = 3;
    c.seq = 77;
    c.heads = 4;
    c.headDim = headDim;
    c.sequenceFirst = true;
    c.batchFirstProjections = true;
    const Network unfused = packedAttentionNetwork(c);
    int strided = 0;
    const Network fused = fusedCopy(unfused, "STRIDED", &strided);
    ASSERT_EQ(strided, 1) << "the views did not fold";
    for (const Node& n : fused.graph.nodes) {
      EXPECT_NE(n.opType, "Transpose") << n.name;
      if (n.opType == "FusedAttention") EXPECT_EQ(n.attrString("output_layout", ""), "BSHD");
    }
    compareWithUnfused(unfused, fused, packedAttentionFeeds(c, 5), kAllPrecisions, true);
  }
}

const std::vector<Tolerance> k16BitPrecisions = {{cuda::Precision::kFloat16, 4e-3},
                                                 {cuda::Precision::kBFloat16, 3e-2}};

bool deviceIsHopper() {
  int device = 0, major = 0, minor = 0;
  return cudaGetDevice(&device) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
         cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess &&
         major == 9 && minor == 0;
}

// The warpgroup kernel (fused_attention_wgmma.cu) on 16-bit heads of 33..64: BERT's masked
// shape across whole and partial key tiles and query blocks (1, 63, 65, 200 tokens), a head of
// 40 (zero-filled to 64), a fully masked row (NaN as unfused), and ViT's packed Q/K/V read
// through strides at 197 tokens, batch first and sequence first.
void checkWarpgroupKernel() {
  const char* wgmma = "kiln flash attention, wgmma";
  for (int64_t seq : {1, 63, 65, 200}) {
    SCOPED_TRACE("seq " + std::to_string(seq));
    checkCase(bertLike(seq, 64), k16BitPrecisions, nullptr, true, wgmma);
  }
  checkCase(bertLike(77, 40), k16BitPrecisions, nullptr, true, wgmma);
  checkCase(
      bertLike(70, 64), k16BitPrecisions,
      [](Feeds& f) {  // batch 1 hides every key: its rows are NaN
        Tensor& m = f.at("mask");
        for (int64_t j = 0; j < 70; ++j)
          m.data<float>()[70 + j] = -std::numeric_limits<float>::infinity();
      },
      true, wgmma);
  for (bool sequenceFirst : {false, true}) {
    SCOPED_TRACE(sequenceFirst ? "sequence first" : "batch first");
    PackedAttentionCase c;
    c.batch = 2;
    c.seq = 197;
    c.heads = 3;
    c.headDim = 64;
    c.sequenceFirst = sequenceFirst;
    const Network unfused = packedAttentionNetwork(c);
    int strided = 0;
    const Network fused = fusedCopy(unfused, "STRIDED", &strided);
    ASSERT_EQ(strided, 1) << "the views did not fold";
    compareWithUnfused(unfused, fused, packedAttentionFeeds(c, 9), k16BitPrecisions, true, wgmma);
  }
}

// KILN_ATTENTION_KERNEL=wgmma: the warpgroup kernel for masked heads too.
TEST(CudaFusedAttention, HopperRunsTheWarpgroupKernel) {
  KILN_REQUIRE_GPU();
  if (!deviceIsHopper()) GTEST_SKIP() << "the warpgroup kernel runs on compute capability 9.0";
  ASSERT_EQ(setenv("KILN_ATTENTION_KERNEL", "wgmma", 1), 0);
  checkWarpgroupKernel();
  unsetenv("KILN_ATTENTION_KERNEL");
}

// Without KILN_ATTENTION_KERNEL: on Hopper the warpgroup kernel runs unmasked heads of 33..64
// with at least 64 queries and the mma.sync kernel masked ones (each the faster there);
// KILN_ATTENTION_KERNEL=mma keeps the mma.sync kernel for unmasked heads too.
TEST(CudaFusedAttention, KernelChosenByTheMask) {
  KILN_REQUIRE_GPU();
  unsetenv("KILN_ATTENTION_KERNEL");
  for (int64_t seq : {77, 200}) {
    SCOPED_TRACE("seq " + std::to_string(seq));
    checkCase(bertLike(seq, 64), k16BitPrecisions, nullptr, true, "kiln flash attention, mma.sync");
  }
  PackedAttentionCase c;
  c.batch = 2;
  c.seq = 150;
  c.heads = 3;
  c.headDim = 64;
  const Network unfused = packedAttentionNetwork(c);
  int strided = 0;
  const Network fused = fusedCopy(unfused, "STRIDED", &strided);
  ASSERT_EQ(strided, 1) << "the views did not fold";
  compareWithUnfused(
      unfused, fused, packedAttentionFeeds(c, 3), k16BitPrecisions, true,
      deviceIsHopper() ? "kiln flash attention, wgmma" : "kiln flash attention, mma.sync");
  ASSERT_EQ(setenv("KILN_ATTENTION_KERNEL", "mma", 1), 0);
  compareWithUnfused(unfused, fused, packedAttentionFeeds(c, 3), k16BitPrecisions, true,
                     "kiln flash attention, mma.sync");
  unsetenv("KILN_ATTENTION_KERNEL");
}

}  // namespace
}  // namespace kiln::test
