// The builder on the CPU backend: plans that run like the model, timing cache,
// tactic replay, precision constraints, optimization levels, cancel.
#include <map>
#include <algorithm>
#include <atomic>

#include "engine/builder/builder_fixture.h"
#include "kiln/timing_cache.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

BuilderConfig classifierConfig() {
  BuilderConfig config;
  config.profiles = {classifierProfile(1, 2, 4)};
  config.optimizationLevel = 1;
  return config;
}

TEST(Builder, PlanRunsLikeTheModel) {
  Plan plan = buildOnCpu(classifierNetwork(), classifierConfig());
  ASSERT_EQ(plan.layers.size(), plan.network->graph.nodes.size());
  // Paddle keeps BatchNormalization after every Conv; the head is MatMul + bias.
  EXPECT_GT(plan.record.passes.size(), 20u);
  auto expected = runNetwork(*classifierNetwork(), "x", {3, 3, 48, 192}, 5);
  auto actual = runNetwork(*plan.network, "x", {3, 3, 48, 192}, 5, &plan);
  ASSERT_EQ(actual.size(), 1u);
  expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-4);
}

TEST(Builder, RecordsEveryCandidateAndPicksTheFastestTimed) {
  Plan plan = buildOnCpu(classifierNetwork(), classifierConfig());
  int convolutions = 0;
  for (const LayerRecord& layer : plan.record.layers) {
    ASSERT_FALSE(layer.candidates.empty()) << layer.name;
    ASSERT_GE(layer.milliseconds, 0) << layer.name;
    for (const TacticCandidate& c : layer.candidates) {
      if (c.rejected.empty() && c.milliseconds >= 0) EXPECT_GE(c.milliseconds, layer.milliseconds);
    }
    if (layer.opType != "Conv") continue;
    ++convolutions;
    EXPECT_EQ(layer.candidates.size(), 3u) << layer.name;  // BLAS, loop GEMM, direct
    EXPECT_EQ(layer.layerType, "Convolution");
    if (layer.fusion.empty()) {  // the squeeze-excitation convolutions have no BN
      EXPECT_EQ(layer.sourceNodes, std::vector<std::string>{layer.name});
    } else {
      EXPECT_EQ(layer.fusion, "fold_batch_norm");
      ASSERT_EQ(layer.sourceNodes.size(), 2u) << layer.name;
      EXPECT_EQ(layer.name, layer.sourceNodes[0] + " + " + layer.sourceNodes[1]);
    }
  }
  EXPECT_GT(convolutions, 10);
  EXPECT_GT(plan.record.activationBytes, 0);
  EXPECT_LT(plan.record.activationBytes, plan.record.activationBytesWithoutReuse);
}

TEST(Builder, WarmTimingCacheHitsEveryLookup) {
  TimingCache cache;
  BuilderConfig config = classifierConfig();
  config.timingCache = &cache;
  Plan cold = buildOnCpu(classifierNetwork(), config);
  EXPECT_GT(cold.record.candidatesTimed, 0);
  const std::string path = tempPath(".cache.json");
  ASSERT_TRUE(cache.save(path).isOk());
  auto loaded = TimingCache::load(path);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  EXPECT_EQ(loaded->size(), cache.size());
  config.timingCache = &loaded.value();
  Plan warm = buildOnCpu(classifierNetwork(), config);
  EXPECT_FALSE(warm.record.referenceRun);  // a warm cache needs no timing inputs
  EXPECT_EQ(warm.record.candidatesTimed, 0);
  EXPECT_GT(warm.record.timingCache.lookups, 0);
  EXPECT_EQ(warm.record.timingCache.hits, warm.record.timingCache.lookups);
  EXPECT_DOUBLE_EQ(warm.record.timingCache.hitRate(), 1.0);
  for (size_t i = 0; i < warm.layers.size(); ++i)
    EXPECT_EQ(warm.layers[i].tactic, cold.layers[i].tactic);
}

TEST(Builder, TimingCacheMergeKeepsExistingEntries) {
  TimingCache a, b;
  a.insert("k1", {1.0, "", "L1"});
  b.insert("k1", {9.0, "", "L1"});
  b.insert("k2", {2.0, "", "L2"});
  EXPECT_EQ(a.merge(b), 1);
  EXPECT_DOUBLE_EQ(a.lookup("k1")->milliseconds, 1.0);
  EXPECT_DOUBLE_EQ(a.lookup("k2")->milliseconds, 2.0);
}

// A timed candidate's choice inside its tactic is cached with its time, and a cache file
// keeps it (one without the key, as written before it existed, reads "").
TEST(Builder, TimingCacheKeepsTheChoiceInsideATactic) {
  TimingCache cache;
  cache.insert("k1", {1.5, "", "L1", "gpu: cublasLt", "cublaslt_gelu_tanh"});
  cache.insert("k2", {2.5, "", "L2"});
  const std::string path = tempPath(".json");
  ASSERT_TRUE(cache.save(path).isOk());
  auto loaded = TimingCache::load(path);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  ASSERT_TRUE(loaded->lookup("k1").has_value());
  EXPECT_EQ(loaded->lookup("k1")->choice, "cublaslt_gelu_tanh");
  EXPECT_EQ(loaded->lookup("k1")->detail, "gpu: cublasLt");
  EXPECT_EQ(loaded->lookup("k2")->choice, "");
  // A choice no backend writes (a control character) is refused with the entry named:
  // it would reach a plan, whose engine acts on it.
  TimingCache hostile;
  hostile.insert("k3", {1.0, "", "L3", "", "cudnn\x1b[2J"});
  ASSERT_TRUE(hostile.save(path).isOk());
  auto refused = TimingCache::load(path);
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().message(),
            path + ": entry 'k3': 'choice' is not printable text of at most 1024 bytes");
}

TEST(Builder, LoadTacticsReproducesEveryLayer) {
  BuilderConfig config = classifierConfig();
  config.fp16 = true;
  config.bf16 = true;
  Plan first = buildOnCpu(classifierNetwork(), config);
  const std::string path = tempPath(".tactics.json");
  ASSERT_TRUE(TacticReplay::fromRecord(first.record).save(path).isOk());
  auto replay = TacticReplay::load(path);
  ASSERT_TRUE(replay.isOk()) << replay.status().toString();
  config.replay = &replay.value();
  config.seed = 99;  // different timing inputs: without replay, choices could differ
  Plan second = buildOnCpu(classifierNetwork(), config);
  EXPECT_TRUE(second.record.unreplayedLayers.empty());
  ASSERT_EQ(second.layers.size(), first.layers.size());
  for (size_t i = 0; i < first.layers.size(); ++i) {
    EXPECT_EQ(second.layers[i].tactic, first.layers[i].tactic) << first.record.layers[i].name;
    EXPECT_EQ(second.layers[i].precision, first.layers[i].precision) << first.record.layers[i].name;
    EXPECT_EQ(second.record.layers[i].precisionReason, "replayed from the tactics file");
  }
}

// Issue 26 item 2: the layers of an FP16 model compute in float16. The record says so
// (it said FP32, "runs in its own types"), the runtime entries run them as typed
// (float32: no rounding), and a tactics file made from the record replays every layer.
TEST(Builder, Fp16ModelLayersAreRecordedAsFp16) {
  auto network = std::make_shared<Network>();
  network->irVersion = 8;
  network->opsets[""] = 17;
  Graph& g = network->graph;
  g.name = "fp16_model";
  g.inputs.push_back(ValueInfo{"x", DataType::kFloat16, true, {DimExpr(2), DimExpr(8)}});
  const char* ops[] = {"Relu", "Sigmoid"};
  std::string previous = "x";
  for (int i = 0; i < 2; ++i) {
    Node node;
    node.opType = ops[i];
    node.opset = 17;
    node.index = i;
    node.name = std::string(ops[i]) + "_" + std::to_string(i);
    node.inputs = {previous};
    previous = i == 1 ? "y" : "t" + std::to_string(i);
    node.outputs = {previous};
    g.nodes.push_back(node);
  }
  g.outputs.push_back(ValueInfo{"y", DataType::kFloat16, true, {DimExpr(2), DimExpr(8)}});
  Plan plan = buildOnCpu(network, BuilderConfig{});
  ASSERT_FALSE(plan.record.layers.empty());  // one pointwise chain, or two layers
  for (const LayerRecord& l : plan.record.layers) {
    EXPECT_EQ(l.precision, DataType::kFloat16) << l.name;
    EXPECT_NE(l.precisionReason.find("model's own types"), std::string::npos) << l.precisionReason;
  }
  for (const LayerImplementation& l : plan.layers) EXPECT_EQ(l.precision, DataType::kFloat32);
  TacticReplay replay = TacticReplay::fromRecord(plan.record);
  BuilderConfig again;
  again.replay = &replay;
  Plan replayed = buildOnCpu(network, again);
  EXPECT_TRUE(replayed.record.unreplayedLayers.empty());
  for (const LayerRecord& l : replayed.record.layers) EXPECT_EQ(l.precision, DataType::kFloat16);
}

TEST(Builder, UnreplayableEntriesAreNamed) {
  TacticReplay replay;
  replay.layers["no_such_layer"] = {"cpu.reference", DataType::kFloat32};
  replay.layers["Conv@3"] = {"cpu.conv.winograd", DataType::kFloat32};
  BuilderConfig config = classifierConfig();
  config.replay = &replay;
  Plan plan = buildOnCpu(classifierNetwork(), config);
  EXPECT_EQ(plan.record.unreplayedLayers, (std::vector<std::string>{"Conv@3", "no_such_layer"}));
}

TEST(Builder, ObeyedImpossibleConstraintFailsNamingTheLayer) {
  BuilderConfig config = classifierConfig();
  config.precisionConstraints = ConstraintMode::kObey;
  config.layerPrecisions = parseLayerPrecisionSpec("Cast@0:fp16").value();
  auto backend = cpuBuildBackend();
  auto plan = buildPlan(classifierNetwork(), config, *backend);
  ASSERT_FALSE(plan.isOk());
  EXPECT_NE(plan.status().message().find("layer 'Cast@0'"), std::string::npos)
      << plan.status().message();
  EXPECT_NE(plan.status().message().find("obeyed"), std::string::npos);
}

TEST(Builder, PreferredImpossibleConstraintWarnsAndFallsBack) {
  BuilderConfig config = classifierConfig();
  config.precisionConstraints = ConstraintMode::kPrefer;
  config.layerPrecisions = parseLayerPrecisionSpec("Cast@0:fp16").value();
  Plan plan = buildOnCpu(classifierNetwork(), config);
  ASSERT_EQ(plan.record.warnings.size(), 1u);
  EXPECT_NE(plan.record.warnings[0].find("Cast@0"), std::string::npos);
}

TEST(Builder, ObeyedFp16RulePinsEveryFloatLayer) {
  BuilderConfig config = classifierConfig();
  config.precisionConstraints = ConstraintMode::kObey;
  config.layerPrecisions = parseLayerPrecisionSpec("*:fp16,Conv@3:fp32").value();
  Plan plan = buildOnCpu(classifierNetwork(), config);
  int fp16 = 0;
  bool sawPinned = false;
  for (const LayerRecord& layer : plan.record.layers) {
    // The rule names an ONNX node; it holds for the layer that node was fused into.
    const bool pinned = std::find(layer.sourceNodes.begin(), layer.sourceNodes.end(), "Conv@3") !=
                        layer.sourceNodes.end();
    if (pinned)
      EXPECT_EQ(layer.precision, DataType::kFloat32) << layer.name;
    else if (layer.opType == "Conv")
      EXPECT_EQ(layer.precision, DataType::kFloat16) << layer.name;
    sawPinned = sawPinned || pinned;
    fp16 += layer.precision == DataType::kFloat16;
  }
  EXPECT_TRUE(sawPinned);
  EXPECT_TRUE(plan.record.warnings.empty());  // the rule matched its fused layer
  EXPECT_GT(fp16, 100);
  // Float16 storage changes the values, within what float16 can hold.
  auto expected = runNetwork(*classifierNetwork(), "x", {2, 3, 48, 192}, 3);
  auto actual = runNetwork(*plan.network, "x", {2, 3, 48, 192}, 3, &plan);
  expectTensorNear(actual[0].tensor, expected[0].tensor, 2e-2, 5e-2);
}

TEST(Builder, LevelZeroTakesTheHeuristicsFirstPick) {
  BuilderConfig config = classifierConfig();
  config.optimizationLevel = 0;
  Plan plan = buildOnCpu(classifierNetwork(), config);
  for (const LayerRecord& layer : plan.record.layers) {
    EXPECT_EQ(layer.tactic, layer.candidates[0].tactic) << layer.name;
  }
  // One timing per layer, but a layer identical to one timed before takes that time.
  int timedHere = 0, sameAsEarlier = 0;
  for (const LayerRecord& layer : plan.record.layers) {
    const bool shared = layer.candidates[0].detail.find("(same signature)") != std::string::npos;
    (shared ? sameAsEarlier : timedHere) += 1;
  }
  EXPECT_EQ(plan.record.candidatesTimed, timedHere);
  EXPECT_GT(sameAsEarlier, 0);
}

TEST(Builder, IdenticalLayersAreTimedOnceAndShareTheTime) {
  Plan plan = buildOnCpu(classifierNetwork(), classifierConfig());
  std::map<std::string, const LayerRecord*> byName;
  for (const LayerRecord& layer : plan.record.layers) byName[layer.name] = &layer;
  int shared = 0;
  for (const LayerRecord& layer : plan.record.layers) {
    for (const TacticCandidate& c : layer.candidates) {
      const size_t at = c.detail.find("timed on layer '");
      if (at == std::string::npos) continue;
      ++shared;
      EXPECT_FALSE(c.fromCache) << layer.name;  // no timing cache file in this build
      const size_t from = at + std::string("timed on layer '").size();
      const std::string first = c.detail.substr(from, c.detail.find('\'', from) - from);
      ASSERT_TRUE(byName.count(first)) << layer.name << " names " << first;
      ASSERT_NE(first, layer.name);
      // The first layer's candidate of the same tactic and precision has the same time.
      bool found = false;
      for (const TacticCandidate& earlier : byName[first]->candidates)
        if (earlier.tactic == c.tactic && earlier.precision == c.precision) {
          found = true;
          EXPECT_EQ(earlier.milliseconds, c.milliseconds) << layer.name;
          EXPECT_EQ(earlier.rejected, c.rejected) << layer.name;
        }
      EXPECT_TRUE(found) << layer.name;
    }
  }
  EXPECT_GT(shared, 0);
  int candidates = 0;
  for (const LayerRecord& layer : plan.record.layers) candidates += int(layer.candidates.size());
  EXPECT_LT(plan.record.candidatesTimed, candidates);
}

TEST(Builder, DisabledSourcesAreRejectedWithAReason) {
  BuilderConfig config = classifierConfig();
  config.tacticSources = kAllTacticSources & ~kTacticBlas;
  Plan plan = buildOnCpu(classifierNetwork(), config);
  for (const LayerRecord& layer : plan.record.layers) {
    EXPECT_NE(layer.tacticSource, "blas") << layer.name;
    if (layer.opType == "Conv")
      EXPECT_EQ(layer.candidates[0].rejected, "tactic source 'blas' is disabled");
  }
}

TEST(Builder, CancelStopsTheBuild) {
  std::atomic<bool> cancel{true};
  BuilderConfig config = classifierConfig();
  config.callbacks.cancel = &cancel;
  auto backend = cpuBuildBackend();
  auto plan = buildPlan(classifierNetwork(), config, *backend);
  ASSERT_FALSE(plan.isOk());
  EXPECT_EQ(plan.status().code(), StatusCode::kCancelled);
}

TEST(Builder, Int8WithoutRangesAndFp8AreRefused) {
  BuilderConfig config = classifierConfig();
  config.int8 = true;  // no calibration cache, no Q/DQ nodes (tests/engine/quant/ builds INT8)
  auto backend = cpuBuildBackend();
  auto plan = buildPlan(classifierNetwork(), config, *backend);
  ASSERT_FALSE(plan.isOk());
  EXPECT_NE(plan.status().message().find("needs a calibration cache"), std::string::npos);
  config.int8 = false;
  config.fp8 = true;  // explicit FP8 only: the model has no float8e4m3fn Q/DQ nodes
  plan = buildPlan(classifierNetwork(), config, *backend);
  ASSERT_FALSE(plan.isOk());
  EXPECT_EQ(plan.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(plan.status().message().find("float8e4m3fn"), std::string::npos);
}

TEST(Builder, PrecisionSpecParsing) {
  auto rules = parseLayerPrecisionSpec("*:fp16, a:b:fp32 ,c:bf16");
  ASSERT_TRUE(rules.isOk());
  ASSERT_EQ(rules->size(), 3u);
  EXPECT_EQ((*rules)[1].pattern, "a:b");
  EXPECT_EQ(findLayerRule(*rules, "a:b")->precision, DataType::kFloat32);
  EXPECT_EQ(findLayerRule(*rules, "zzz")->precision, DataType::kFloat16);
  EXPECT_FALSE(parseLayerPrecisionSpec("conv:fp12").isOk());
  EXPECT_FALSE(parseLayerPrecisionSpec("fp16").isOk());
  EXPECT_EQ(parseTacticSources("-cudnn,+blas", kTacticBlas).value(), kTacticBlas);
  EXPECT_FALSE(parseTacticSources("cudnnx").isOk());
}

TEST(Builder, TrtexecCommandLineMatchesTheConfig) {
  BuilderConfig config = classifierConfig();
  config.fp16 = true;
  config.tf32 = false;
  config.precisionConstraints = ConstraintMode::kObey;
  config.layerPrecisions = parseLayerPrecisionSpec("*:fp16,Conv@3:fp32").value();
  const std::string cmd = trtexecCommandLine(config, "m.onnx", "m.plan");
  for (const char* part : {"--onnx=m.onnx", "--fp16", "--noTF32", "--precisionConstraints=obey",
                           "--layerPrecisions=*:fp16,Conv@3:fp32", "--minShapes=x:1x3x48x192",
                           "--optShapes=x:2x3x48x192", "--maxShapes=x:4x3x48x192",
                           "--builderOptimizationLevel=1", "--saveEngine=m.plan"}) {
    EXPECT_NE(cmd.find(part), std::string::npos) << part << " in " << cmd;
  }
}

}  // namespace
}  // namespace kiln::test
