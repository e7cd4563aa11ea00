// ai.kiln FusedAttention's two candidates on the CUDA engine, each forced by the node
// attribute `path` ("kiln", "cudnn"), and the race between them ("auto"), against the
// UNFUSED graph on the CPU fed the same precision-rounded inputs; every output buffer is
// poisoned with NaN before each run (twice: the race writes the output while timing).
// Shapes: ViT-like packed QKV read through STRIDED views (B2 H3 S197 D64), BERT-like
// with the additive padding mask [B, 1, 1, S] and transformers 5's [B, 1, S, S], a long
// sequence (S 1024), each in float16 and bfloat16; -inf mask entries; the eager export's
// mask without the NaN guard (rows whose every key is -inf: NaN on both candidates); a
// float32 layer and a per-window mask, which cuDNN's graph cannot take (the race names why).
//
// Tolerances as test_cuda_fused_attention.cpp: fp16 4e-3, bf16 3e-2 (inputs rounded
// first; both candidates round P to the storage type for the second product and round Y).
#include <cuda_runtime_api.h>

#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "backends/cuda/ops/cudnn_plan_cache.h"
#include "engine/passes/attention_graph.h"
#include "engine/passes/packed_attention_graph.h"
#include "gpu/gpu_op_test.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"

namespace kiln::test {
namespace {

using Feeds = std::map<std::string, Tensor>;

struct Tolerance {
  cuda::Precision precision;
  double tolerance;
};

const std::vector<Tolerance> kHalfPrecisions = {{cuda::Precision::kFloat16, 4e-3},
                                                {cuda::Precision::kBFloat16, 3e-2}};

// `unfused` through the level-1 pipeline with every FusedAttention's `path` set.
Network fusedWithPath(const Network& unfused, const std::string& path) {
  Network fused = unfused;
  std::vector<PassApplication> applied;
  const Status s = runPasses(fused, 1, {}, &applied);
  EXPECT_TRUE(s.isOk()) << s.toString();
  int attention = 0;
  for (Node& n : fused.graph.nodes) {
    if (n.opType != "FusedAttention") continue;
    ++attention;
    n.attributes["path"].kind = Attribute::Kind::kString;
    n.attributes["path"].s = path;
  }
  EXPECT_EQ(attention, 1) << "the pass did not fuse the block";
  return fused;
}

// The FusedAttention layer's implementation text after a run (and EXPECTs it ran on the GPU).
std::string attentionImplementation(const std::vector<cuda::LayerInfo>& layers) {
  for (const cuda::LayerInfo& layer : layers) {
    if (layer.opType != "FusedAttention") continue;
    EXPECT_EQ(layer.placement, cuda::LayerPlacement::kGpu) << layer.name << ": " << layer.note;
    return layer.implementation;
  }
  ADD_FAILURE() << "no FusedAttention layer";
  return "";
}

// Runs `unfused` fused with `path` on the GPU at each precision against the CPU run of
// `unfused`; each run's implementation text must contain `expected`.
void checkPath(const Network& unfused, const Feeds& base, const std::string& path,
               const std::string& expected,
               const std::vector<Tolerance>& tolerances = kHalfPrecisions) {
  const Network fused = fusedWithPath(unfused, path);
  for (const Tolerance& t : tolerances) {
    SCOPED_TRACE("path " + path + ", precision " + cuda::precisionName(t.precision));
    const Feeds feeds = roundTo(base, t.precision);
    std::vector<NamedTensor> expectedOut;
    const Status ran = ReferenceBackend(unfused).run(feeds, &expectedOut);
    ASSERT_TRUE(ran.isOk()) << ran.toString();
    std::vector<cuda::LayerInfo> layers;
    auto actual = runCudaPoisoned(fused, feeds, t.precision, "y", &layers, /*runAgain=*/true);
    ASSERT_TRUE(actual.isOk()) << actual.status().toString();
    const std::string implementation = attentionImplementation(layers);
    EXPECT_NE(implementation.find(expected), std::string::npos) << implementation;
    std::cout << "  [" << cuda::precisionName(t.precision) << ", path " << path << "] "
              << implementation << "\n";
    expectTensorNear(actual.value(), expectedOut[0].tensor, t.tolerance, t.tolerance);
  }
}

// Both candidates forced, then the race.
void checkBothCandidates(const Network& unfused, const Feeds& base) {
  checkPath(unfused, base, "kiln", "kiln flash attention");
  checkPath(unfused, base, "cudnn", "cudnn fused attention");
  // An engine of its own: the race times both instead of taking the paths' records.
  checkPath(unfused, base, "auto", "timed {kiln=");
}

// BERT's attention block; with `sdpaExport` as transformers' default (SDPA) attention
// exports it: a boolean mask made additive (-inf where masked), the guarded softmax
// (nan_to_zero = 1); without, the eager export's finite additive mask (no guard: a row
// whose every key is -inf is NaN).
AttentionCase bertLike(int64_t seq, const Shape& mask, bool sdpaExport = true) {
  AttentionCase c;
  c.batch = 2;
  c.seqQ = c.seqK = seq;
  c.heads = 3;
  c.headDim = 64;
  c.mask = mask;
  c.sdpaExport = sdpaExport;
  return c;
}

// Tactics as data (issue 23): the race's outcome is the layer's choice ("kiln", or "cudnn
// engine=..." with cuDNN's engine configuration); an engine given it, as one made from a
// plan is, runs it with no record in the process and without timing, and matches the
// reference; both outcomes given in turn run.
TEST(CudaAttentionCudnn, PlannedChoiceRunsWithoutTiming) {
  KILN_REQUIRE_GPU();
  const AttentionCase c = bertLike(128, {2, 1, 1, 128});
  const Network unfused = attentionNetwork(c);
  const Network fused = fusedWithPath(unfused, "auto");
  const Feeds feeds = roundTo(attentionFeeds(c, 13), cuda::Precision::kFloat16);
  std::vector<NamedTensor> expected;
  ASSERT_TRUE(ReferenceBackend(unfused).run(feeds, &expected).isOk());
  auto code = std::make_shared<cuda::CompiledCode>();
  std::vector<cuda::LayerInfo> layers;
  auto first =
      runCudaPoisoned(fused, feeds, cuda::Precision::kFloat16, "y", &layers, true, {}, code);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  cuda::LayerInfo raced;
  for (const cuda::LayerInfo& layer : layers)
    if (layer.opType == "FusedAttention") raced = layer;
  std::cout << "  " << raced.implementation << "\n    choice '" << raced.choice << "'\n";
  ASSERT_NE(raced.implementation.find("timed {kiln="), std::string::npos) << raced.implementation;
  ASSERT_FALSE(raced.choice.empty());
  // cuDNN's engine as the race found it, from the record the engine's code keeps.
  const std::string cudnn = recordedCudnnChoice(*code, raced.name);
  ASSERT_FALSE(cudnn.empty());
  for (const std::string& choice : {std::string("kiln"), cudnn}) {
    SCOPED_TRACE(choice);  // an engine with code of its own: no record
    auto out = runCudaPoisoned(fused, feeds, cuda::Precision::kFloat16, "y", &layers, false,
                               {{raced.name, choice}});
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    const std::string text = attentionImplementation(layers);
    EXPECT_NE(text.find("(the plan's choice: " + choice + ")"), std::string::npos) << text;
    EXPECT_EQ(text.find("timed"), std::string::npos) << text;
    expectTensorNear(out.value(), expected[0].tensor, 2e-2, 2e-2);
  }
  auto refused = runCudaPoisoned(fused, feeds, cuda::Precision::kFloat16, "y", &layers, false,
                                 {{raced.name, "mma:128x128"}});
  ASSERT_TRUE(refused.isOk()) << refused.status().toString();
  const std::string text = attentionImplementation(layers);
  EXPECT_NE(text.find("; the plan's choice 'mma:128x128' does not apply here: "), std::string::npos)
      << text;
  EXPECT_NE(text.find("timed {kiln="), std::string::npos) << text;
}

TEST(CudaAttentionCudnn, VitPackedQkvThroughStridedViews) {
  KILN_REQUIRE_GPU();
  PackedAttentionCase c;
  c.batch = 2;
  c.seq = 197;
  c.heads = 3;
  c.headDim = 64;
  checkBothCandidates(packedAttentionNetwork(c), packedAttentionFeeds(c, 5));
}

TEST(CudaAttentionCudnn, BertPaddingMaskPerKey) {
  KILN_REQUIRE_GPU();
  const AttentionCase c = bertLike(128, {2, 1, 1, 128});
  checkBothCandidates(attentionNetwork(c), attentionFeeds(c, 11));
}

TEST(CudaAttentionCudnn, BertMaskPerQueryAndKey) {
  KILN_REQUIRE_GPU();
  const AttentionCase c = bertLike(128, {2, 1, 128, 128});
  checkBothCandidates(attentionNetwork(c), attentionFeeds(c, 12));
}

TEST(CudaAttentionCudnn, LongSequenceWithoutMask) {
  KILN_REQUIRE_GPU();
  AttentionCase c = bertLike(1024, {}, false);
  c.batch = 1;
  c.heads = 2;
  checkBothCandidates(attentionNetwork(c), attentionFeeds(c, 13));
}

TEST(CudaAttentionCudnn, MaskedKeysAcrossWholeTiles) {
  KILN_REQUIRE_GPU();
  // Every key >= 40 of batch 0 masked (whole key tiles of the engines), each row keeping
  // finite keys: rows must come out as the softmax over their unmasked keys.
  const AttentionCase c = bertLike(128, {2, 1, 128, 128});
  Feeds feeds = attentionFeeds(c, 14);
  Tensor& keep = feeds["mask_bool"];
  for (int64_t i = 0; i < 128; ++i)
    for (int64_t j = 0; j < 128; ++j) keep.data<uint8_t>()[i * 128 + j] = j < 40;
  checkPath(attentionNetwork(c), feeds, "cudnn", "cudnn fused attention");
}

TEST(CudaAttentionCudnn, FullyMaskedRowGivesZero) {
  KILN_REQUIRE_GPU();
  // Query row 3 of batch 1 sees no key: 0 in the guarded unfused graph (nan_to_zero = 1),
  // and cuDNN's graph must write 0 there too (without nan_to_zero, unfused, that row is
  // NaN: runCudnnAttention then writes it, EagerMaskFullyMaskedRowsAreNaNOnBothPaths).
  const AttentionCase c = bertLike(128, {2, 1, 128, 128});
  Feeds feeds = attentionFeeds(c, 15);
  Tensor& keep = feeds["mask_bool"];
  for (int64_t j = 0; j < 128; ++j) keep.data<uint8_t>()[128 * 128 + 3 * 128 + j] = 0;
  checkPath(attentionNetwork(c), feeds, "cudnn", "cudnn fused attention");
}

// The eager export's additive mask (no NaN guard, nan_to_zero = 0): cuDNN is a candidate
// too, its rows whose every key is masked set to NaN afterwards, as the unfused Softmax
// gives them.
TEST(CudaAttentionCudnn, EagerMaskRacesBothCandidates) {
  KILN_REQUIRE_GPU();
  const AttentionCase c = bertLike(128, {2, 1, 1, 128}, false);
  checkBothCandidates(attentionNetwork(c), attentionFeeds(c, 18));
}

TEST(CudaAttentionCudnn, EagerMaskFullyMaskedRowsAreNaNOnBothPaths) {
  KILN_REQUIRE_GPU();
  const float minusInf = -std::numeric_limits<float>::infinity();
  // Query row 3 of batch 1 sees no key ([B, 1, S, S] mask): NaN in that row of every head.
  const AttentionCase perQuery = bertLike(128, {2, 1, 128, 128}, false);
  Feeds feeds = attentionFeeds(perQuery, 19);
  Tensor mask = castTensor(feeds["mask"], DataType::kFloat32);
  for (int64_t j = 0; j < 128; ++j) mask.data<float>()[128 * 128 + 3 * 128 + j] = minusInf;
  feeds["mask"] = mask;
  for (const char* path : {"kiln", "cudnn"})
    checkPath(
        attentionNetwork(perQuery), feeds, path,
        path == std::string("kiln") ? "kiln flash attention" : "set to NaN, the unfused Softmax");
  // Every key of batch 1 masked ([B, 1, 1, S] padding mask): all of batch 1 is NaN.
  const AttentionCase perKey = bertLike(128, {2, 1, 1, 128}, false);
  feeds = attentionFeeds(perKey, 20);
  mask = castTensor(feeds["mask"], DataType::kFloat32);
  for (int64_t j = 0; j < 128; ++j) mask.data<float>()[128 + j] = minusInf;
  feeds["mask"] = mask;
  checkPath(attentionNetwork(perKey), feeds, "cudnn", "set to NaN, the unfused Softmax");
}

TEST(CudaAttentionCudnn, Float32LayerKeepsKilnAndSaysWhy) {
  KILN_REQUIRE_GPU();
  const AttentionCase c = bertLike(77, {2, 1, 1, 77});
  checkPath(attentionNetwork(c), attentionFeeds(c, 16), "auto",
            "cudnn attention: not a candidate (cuDNN's fused attention takes float16",
            {{cuda::Precision::kFloat32, 3e-5}});
}

TEST(CudaAttentionCudnn, CudnnPathOnALayerItCannotRunFallsBack) {
  KILN_REQUIRE_GPU();
  // Head size 20 is not a multiple of 8: path cudnn is unsupported, the layer runs on
  // the host with the reason as its note, and the result still matches.
  AttentionCase c = bertLike(33, {2, 1, 1, 33});
  c.headDim = 20;  // (the SDPA export's mask: only the head size stands in the way)
  const Network unfused = attentionNetwork(c);
  const Network fused = fusedWithPath(unfused, "cudnn");
  const Feeds feeds = roundTo(attentionFeeds(c, 17), cuda::Precision::kFloat16);
  std::vector<NamedTensor> expected;
  ASSERT_TRUE(ReferenceBackend(unfused).run(feeds, &expected).isOk());
  std::vector<cuda::LayerInfo> layers;
  auto actual = runCudaPoisoned(fused, feeds, cuda::Precision::kFloat16, "y", &layers);
  ASSERT_TRUE(actual.isOk()) << actual.status().toString();
  bool seen = false;
  for (const cuda::LayerInfo& layer : layers) {
    if (layer.opType != "FusedAttention") continue;
    seen = true;
    EXPECT_EQ(layer.placement, cuda::LayerPlacement::kHostFallback) << layer.name;
    EXPECT_NE(layer.note.find("head size 20"), std::string::npos) << layer.note;
  }
  EXPECT_TRUE(seen);
  expectTensorNear(actual.value(), expected[0].tensor, 4e-3, 4e-3);
}

// The race at the benchmark's scale, printing each candidate's time (no reference: the
// CPU would take minutes). Run with --gtest_also_run_disabled_tests on the device.
TEST(CudaAttentionCudnn, DISABLED_RaceAtModelScale) {
  KILN_REQUIRE_GPU();
  PackedAttentionCase vit;  // ViT-B/16 at batch 64
  vit.batch = 64;
  vit.seq = 197;
  vit.heads = 12;
  vit.headDim = 64;
  PackedAttentionCase deit = vit;  // DeiT-S at batch 128: 6 heads of 64
  deit.batch = 128;
  deit.heads = 6;
  AttentionCase longSeq = bertLike(1024, {}, false);
  longSeq.batch = 8;
  longSeq.heads = 12;
  AttentionCase bert = bertLike(128, {128, 1, 1, 128});  // BERT-base at batch 128
  bert.batch = 128;
  bert.heads = 12;
  AttentionCase bertSquare = bert;  // transformers 5's SDPA export: [B, 1, S, S]
  bertSquare.mask = {128, 1, 128, 128};
  AttentionCase t5 = bertLike(128, {1, 12, 128, 128}, false);  // a per-head position bias
  t5.batch = 128;
  t5.heads = 12;
  const std::vector<std::pair<std::string, std::pair<Network, Feeds>>> cases = {
      {"ViT-B/16 B64", {packedAttentionNetwork(vit), packedAttentionFeeds(vit, 1)}},
      {"DeiT-S B128", {packedAttentionNetwork(deit), packedAttentionFeeds(deit, 6)}},
      {"B8 H12 S1024", {attentionNetwork(longSeq), attentionFeeds(longSeq, 2)}},
      {"BERT-base B128 S128 SDPA mask", {attentionNetwork(bert), attentionFeeds(bert, 3)}},
      {"BERT-base B128 S128 SDPA mask [B, 1, S, S]",
       {attentionNetwork(bertSquare), attentionFeeds(bertSquare, 4)}},
      {"T5-base B128 S128 bias [1, 12, S, S]", {attentionNetwork(t5), attentionFeeds(t5, 5)}}};
  for (const auto& [name, network] : cases) {
    for (cuda::Precision precision : {cuda::Precision::kFloat16, cuda::Precision::kBFloat16}) {
      std::vector<cuda::LayerInfo> layers;  // each engine races: code of its own
      auto y = runCudaPoisoned(fusedWithPath(network.first, "auto"),
                               roundTo(network.second, precision), precision, "y", &layers);
      ASSERT_TRUE(y.isOk()) << y.status().toString();
      std::cout << name << " " << cuda::precisionName(precision) << ": "
                << attentionImplementation(layers) << "\n";
    }
  }
}

}  // namespace
}  // namespace kiln::test
