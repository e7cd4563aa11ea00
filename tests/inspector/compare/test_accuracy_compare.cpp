// kiln compare's accuracy comparison: a deliberately perturbed weight is found (the
// first divergent tensor names its node), fused-away tensors are named with the
// layer that absorbed them, and exposing intermediates leaves the engine's outputs
// bit for bit as they were.
#include <gtest/gtest.h>

#include <cstring>

#include "compare/accuracy_compare.h"
#include "inspector/compare/compare_fixture.h"

namespace kiln::compare {
namespace {

using test::buildCpu;
using test::perturbedSmallCnn;
using test::randomInputs;
using test::smallCnn;

std::vector<std::map<std::string, Tensor>> inputSets(const Network& network, int count) {
  std::vector<std::map<std::string, Tensor>> sets;
  for (int i = 0; i < count; ++i) sets.push_back(randomInputs(network, 10 + i));
  return sets;
}

const ComparedTensor* findTensor(const AccuracyReport& report, const std::string& name) {
  for (const ComparedTensor& t : report.intermediates)
    if (t.stats.name == name) return &t;
  return nullptr;
}

TEST(AccuracyCompare, PerturbedWeightIsFoundAtItsNode) {
  auto perturbed = referenceRunner(perturbedSmallCnn(0.5f), "perturbed.onnx");
  auto original = referenceRunner(smallCnn(), "small_cnn.onnx");
  CompareOptions options;
  options.perTensor = true;
  auto report = compareAccuracy(*perturbed, *original, inputSets(*smallCnn(), 2), options);
  ASSERT_TRUE(report.isOk()) << report.status().toString();
  EXPECT_FALSE(report->pass);
  ASSERT_EQ(report->outputs.size(), 1u);
  EXPECT_EQ(report->outputs[0].name, "logits");
  EXPECT_EQ(report->outputs[0].runs, 2);
  EXPECT_GT(report->outputs[0].maxAbs, 1e-3);
  ASSERT_GE(report->firstDivergent, 0);
  const ComparedTensor& first = report->intermediates[report->firstDivergent];
  EXPECT_EQ(first.stats.name, "conv2");
  EXPECT_EQ(first.layerA, "conv2");
  EXPECT_EQ(first.sourceNodes, std::vector<std::string>{"conv2"});
  // Upstream of the perturbation the two sides agree exactly.
  for (const char* name : {"conv1", "conv1_relu"}) {
    const ComparedTensor* t = findTensor(*report, name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_TRUE(t->stats.pass);
    EXPECT_EQ(t->stats.maxAbs, 0.0) << name;
    EXPECT_GT(t->stats.finitePairs, 0);
  }
  EXPECT_TRUE(report->fusedAway.empty());  // two ONNX models expose the same tensors
  const nlohmann::json j = accuracyReportJson(*report, false);
  EXPECT_EQ(j["first_divergence"]["tensor"], "conv2");
  EXPECT_EQ(j["pass"], false);
}

TEST(AccuracyCompare, PlanOfPerturbedModelAgainstReferenceNamesTheFusedLayer) {
  auto plan = buildCpu(perturbedSmallCnn(0.5f), BuilderConfig{});
  ASSERT_TRUE(plan);
  auto engine = cpuPlanRunner(plan, "perturbed.kiln");
  ASSERT_TRUE(engine.isOk()) << engine.status().toString();
  auto original = referenceRunner(smallCnn(), "small_cnn.onnx");
  CompareOptions options;
  options.perTensor = true;
  auto report = compareAccuracy(**engine, *original, inputSets(*smallCnn(), 1), options);
  ASSERT_TRUE(report.isOk()) << report.status().toString();
  EXPECT_FALSE(report->pass);
  ASSERT_GE(report->firstDivergent, 0);
  const ComparedTensor& first = report->intermediates[report->firstDivergent];
  const auto& nodes = first.sourceNodes;
  EXPECT_NE(std::find(nodes.begin(), nodes.end(), "conv2"), nodes.end())
      << "first divergence at " << first.stats.name << " in " << first.layerA;
  EXPECT_EQ(std::find(nodes.begin(), nodes.end(), "conv1"), nodes.end());
  // The Conv outputs the plan fused with their Relu exist only in the reference.
  bool conv1FusedAway = false;
  for (const FusedAwayTensor& f : report->fusedAway) {
    if (f.tensor != "conv1") continue;
    conv1FusedAway = true;
    EXPECT_EQ(f.presentIn, "B");
    EXPECT_NE(f.fusedInto.find("conv1"), std::string::npos) << f.fusedInto;
    EXPECT_NE(f.fusedInto.find("conv1_relu"), std::string::npos) << f.fusedInto;
  }
  EXPECT_TRUE(conv1FusedAway);
}

TEST(AccuracyCompare, UnperturbedPlanPassesAndTensorsMatchTheReference) {
  auto plan = buildCpu(smallCnn(), BuilderConfig{});
  auto engine = cpuPlanRunner(plan, "small_cnn.kiln");
  ASSERT_TRUE(engine.isOk());
  auto original = referenceRunner(smallCnn(), "small_cnn.onnx");
  CompareOptions options;
  options.perTensor = true;
  auto report = compareAccuracy(**engine, *original, inputSets(*smallCnn(), 2), options);
  ASSERT_TRUE(report.isOk()) << report.status().toString();
  EXPECT_TRUE(report->pass);
  EXPECT_EQ(report->firstDivergent, -1);
  EXPECT_FALSE(report->intermediates.empty());
  EXPECT_LT(report->outputs[0].maxAbs, 1e-4);
  EXPECT_GT(report->outputs[0].cosine, 0.99999);
}

TEST(AccuracyCompare, ExposingIntermediatesDoesNotChangeTheOutputs) {
  BuilderConfig config;
  config.fp16 = true;
  config.precisionConstraints = ConstraintMode::kObey;
  config.layerPrecisions = {{"*", DataType::kFloat16}};
  auto plan = buildCpu(smallCnn(), config);
  auto engine = cpuPlanRunner(plan, "fp16.kiln");
  ASSERT_TRUE(engine.isOk());
  const auto inputs = randomInputs(*smallCnn(), 3);
  std::vector<std::string> everything;
  for (const ExposedTensor& t : (*engine)->intermediates()) everything.push_back(t.name);
  ASSERT_GT(everything.size(), 3u);
  std::vector<NamedTensor> plain, marked;
  ASSERT_TRUE((*engine)->run(inputs, {}, &plain).isOk());
  ASSERT_TRUE((*engine)->run(inputs, everything, &marked).isOk());
  ASSERT_EQ(marked.size(), 1 + everything.size());
  const Tensor &a = plain[0].tensor, &b = marked[0].tensor;
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(std::memcmp(a.rawData(), b.rawData(), a.byteSize()), 0);
  // ... and the fp16 layers really round: the outputs differ from the fp32 reference.
  std::vector<NamedTensor> reference;
  ASSERT_TRUE(referenceRunner(smallCnn(), "ref")->run(inputs, {}, &reference).isOk());
  const ErrorStats s = computeErrorStats("logits", a, reference[0].tensor, {0, 0});
  EXPECT_GT(s.maxAbs, 0.0);
  EXPECT_LT(s.maxAbs, 0.05);
}

TEST(AccuracyCompare, DifferentOutputsAreAnErrorNamingTheOutput) {
  auto renamed = std::make_shared<Network>(*smallCnn());
  renamed->graph.outputs[0].name = "flat";
  auto a = referenceRunner(renamed, "renamed.onnx");
  auto b = referenceRunner(smallCnn(), "small_cnn.onnx");
  auto report = compareAccuracy(*a, *b, inputSets(*smallCnn(), 1), {});
  ASSERT_FALSE(report.isOk());
  EXPECT_NE(report.status().message().find("output 'flat' of A is not an output of B"),
            std::string::npos)
      << report.status().message();
}

}  // namespace
}  // namespace kiln::compare
