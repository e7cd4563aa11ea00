// Tactics as data (issue 23): a tactic whose kernel raced several complete choices
// inside offers them (BuildBackend::lastTimingChoices); the builder times each one with
// the layer held to it (timeChoice), keeps the fastest of all, records every choice as a
// candidate with the winner's in LayerRecord::choice, and a timing cache brings the
// choices and their times back without timing. A backend that answers like the CUDA one
// (over the CPU backend's tactics) stands in for the GPU.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/builder/builder_fixture.h"
#include "kiln/build_backend.h"
#include "kiln/cuda_plan_options.h"
#include "kiln/plan.h"
#include "kiln/timing_cache.h"

namespace kiln::test {
namespace {

// MatMul and FusedMatMul (what the passes make of MatMul + Add) layers.
bool isMatMul(const std::string& opType) {
  return opType.find("MatMul") != std::string::npos;
}

// MatMul layers offer four choices inside their first tactic: algo:0 1.5 ms, algo:1 0.7 ms,
// algo:2 2.5 ms, algo:3 which the layer cannot take. Every other timing is 2 ms.
class ChoosingBackend final : public BuildBackend {
 public:
  // `uniform`: one precision per engine, as the CUDA backend (the builder then reconciles
  // the layers' winners after timing).
  explicit ChoosingBackend(bool uniform = false) : m_uniform(uniform) {}
  PlanIdentity identity() const override { return m_cpu->identity(); }
  bool uniformPrecision() const override { return m_uniform; }
  std::vector<TacticDescriptor> tactics(const Node& node) const override {
    return m_cpu->tactics(node);
  }
  Result<double> timeTactic(const Node& node, const std::string& tactic, DataType,
                            const LayerInputs&, int) override {
    ++tacticTimings;
    const bool choosing = isMatMul(node.opType) && tactic == m_cpu->tactics(node)[0].name;
    m_choice = choosing ? "algo:2" : "";  // the kernel's own pick: not the fastest
    m_choices = choosing ? std::vector<std::string>{"algo:0", "algo:1", "algo:2", "algo:3"}
                         : std::vector<std::string>{};
    m_detail = choosing ? "raced inside" : "";
    return 2.0;
  }
  std::string lastTimingDetail() const override { return m_detail; }
  std::string lastTimingChoice() const override { return m_choice; }
  std::vector<std::string> lastTimingChoices() const override { return m_choices; }
  Result<double> timeChoice(const Node& node, const std::string&, DataType, const LayerInputs&, int,
                            const std::string& choice) override {
    ++choiceTimings;
    m_detail = "held to " + choice + " on " + node.opType;
    const std::map<std::string, double> times = {{"algo:0", 1.5}, {"algo:1", 0.7}, {"algo:2", 2.5}};
    const auto it = times.find(choice);
    if (it == times.end()) return unsupported("the layer did not take the choice " + choice);
    return it->second;
  }

  int tacticTimings = 0;
  int choiceTimings = 0;

 private:
  bool m_uniform;
  std::unique_ptr<BuildBackend> m_cpu = cpuBuildBackend();
  std::string m_choice, m_detail;
  std::vector<std::string> m_choices;
};

BuilderConfig bertConfig(TimingCache* cache = nullptr) {
  BuilderConfig config;
  config.profiles = {bertProfile({2, 16}, {2, 16}, {2, 16})};
  config.optimizationLevel = 2;
  config.timingCache = cache;
  return config;
}

std::vector<const LayerRecord*> matMulLayers(const Plan& plan) {
  std::vector<const LayerRecord*> out;
  for (const LayerRecord& layer : plan.record.layers)
    if (isMatMul(layer.opType)) out.push_back(&layer);
  return out;
}

// The winner's choice and every rival, timed by the builder; what a plan's engine replays.
void expectChoicesRecorded(const Plan& plan) {
  const std::vector<const LayerRecord*> layers = matMulLayers(plan);
  ASSERT_FALSE(layers.empty());
  const std::map<std::string, std::string> replayed = cuda::layerChoicesOfRecord(plan.record);
  for (const LayerRecord* layer : layers) {
    SCOPED_TRACE(layer->name);
    EXPECT_EQ(layer->choice, "algo:1");
    EXPECT_DOUBLE_EQ(layer->milliseconds, 0.7);
    std::map<std::string, const TacticCandidate*> byChoice;
    for (const TacticCandidate& c : layer->candidates)
      if (c.tactic == layer->tactic) byChoice[c.choice] = &c;
    ASSERT_EQ(byChoice.size(), 4u) << "one candidate per choice, the tactic's own row replaced";
    EXPECT_DOUBLE_EQ(byChoice["algo:0"]->milliseconds, 1.5);
    EXPECT_DOUBLE_EQ(byChoice["algo:2"]->milliseconds, 2.5);
    EXPECT_NE(byChoice["algo:3"]->rejected.find("did not take the choice algo:3"),
              std::string::npos)
        << byChoice["algo:3"]->rejected;
    const TacticCandidate* winner = winningCandidate(*layer);
    ASSERT_NE(winner, nullptr);
    EXPECT_EQ(winner->choice, "algo:1");
    EXPECT_EQ(replayed.at(layer->name), "algo:1");
  }
}

TEST(TacticChoices, TheBuilderTimesEachOfferedChoiceAndKeepsTheFastest) {
  ChoosingBackend backend;
  auto plan = buildPlan(tinyBertNetwork(), bertConfig(), backend);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  expectChoicesRecorded(plan.value());
  // Each choice of each layer timed once (the tiny model's GEMMs all differ in shape).
  EXPECT_EQ(backend.choiceTimings, 4 * static_cast<int>(matMulLayers(plan.value()).size()));

  // The plan file keeps the winner's choice.
  auto bytes = serializePlan(plan.value());
  ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
  auto loaded = deserializePlan(bytes.value(), "choices.kiln");
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  expectChoicesRecorded(loaded.value());
}

TEST(TacticChoices, AnEngineWidePrecisionKeepsTheFastestChoice) {
  ChoosingBackend backend(/*uniform=*/true);
  BuilderConfig config = bertConfig();
  config.fp16 = true;
  auto plan = buildPlan(tinyBertNetwork(), config, backend);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  expectChoicesRecorded(plan.value());
}

TEST(TacticChoices, AWarmTimingCacheBringsTheChoicesBackUntimed) {
  TimingCache cache;
  ChoosingBackend cold;
  auto first = buildPlan(tinyBertNetwork(), bertConfig(&cache), cold);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  // Through the file, as `kiln build --timing-cache` keeps it.
  const std::string path = tempPath(".json");
  ASSERT_TRUE(cache.save(path).isOk());
  auto reloaded = TimingCache::load(path);
  ASSERT_TRUE(reloaded.isOk()) << reloaded.status().toString();
  int listed = 0;
  for (const auto& [key, entry] : reloaded->entries()) listed += entry.choices.size() == 4;
  EXPECT_GT(listed, 0);
  ChoosingBackend warm;
  auto second = buildPlan(tinyBertNetwork(), bertConfig(&reloaded.value()), warm);
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  EXPECT_EQ(warm.tacticTimings, 0);
  EXPECT_EQ(warm.choiceTimings, 0);
  EXPECT_EQ(second->record.candidatesTimed, 0);
  expectChoicesRecorded(second.value());
}

TEST(TacticChoices, ATimingCacheWithHostileChoicesIsRefused) {
  const std::string head =
      "{\"format\": \"kiln-timing-cache\", \"version\": 1, \"entries\": {\"k\": {\"ms\": 1, "
      "\"choices\": ";
  for (const std::string& choices :
       {std::string("\"algo:1\""), std::string("[1]"), std::string("[\"\"]"),
        std::string("[\"algo\\u0007\"]"), "[\"" + std::string(2000, 'a') + "\"]"}) {
    SCOPED_TRACE(choices);
    const std::string path = tempPath(".json");
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    const std::string text = head + choices + "}}}";
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    auto loaded = TimingCache::load(path);
    ASSERT_FALSE(loaded.isOk());
    EXPECT_NE(loaded.status().message().find("'choices'"), std::string::npos)
        << loaded.status().message();
  }
}

TEST(TacticChoices, LevelZeroTakesTheKernelsOwnPick) {
  ChoosingBackend backend;
  BuilderConfig config = bertConfig();
  config.optimizationLevel = 0;
  auto plan = buildPlan(tinyBertNetwork(), config, backend);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_EQ(backend.choiceTimings, 0);
  for (const LayerRecord* layer : matMulLayers(plan.value())) EXPECT_EQ(layer->choice, "algo:2");
}

}  // namespace
}  // namespace kiln::test
