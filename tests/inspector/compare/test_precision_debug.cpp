// Precision debugging on a network built here where one node (wide_proj) overflows
// in fp16: the bisection names exactly that node in fewer than 2*log2(layers)+2
// builds, and the constraints it writes (saved, loaded, applied) make the next
// build pass where the all-fp16 build fails. Also the constraints file's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "compare/plan_judge.h"
#include "compare/precision_debug.h"
#include "inspector/compare/compare_fixture.h"
#include "kiln/constraints_file.h"

namespace kiln::compare {
namespace {

std::vector<std::map<std::string, Tensor>> twoInputSets(const Network& network) {
  return {test::randomInputs(network, 21), test::randomInputs(network, 22)};
}

std::string tempFile(const std::string& name) {
  return ::testing::TempDir() + "/kiln_precision_debug_" + name;
}

TEST(PrecisionDebug, NamesTheOverflowingNodeAndItsConstraintsFixTheBuild) {
  auto network = test::fp16OverflowNetwork();
  const auto inputs = twoInputSets(*network);
  PrecisionDebugOptions options;
  int stepsSeen = 0;
  options.onStep = [&](const PrecisionDebugStep& step) { EXPECT_EQ(step.build, ++stepsSeen); };
  auto result = debugPrecision(network, inputs, options);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  EXPECT_FALSE(result->reducedPasses);
  // 12 nodes, 8 layers: fc1 + relu1, fc2 + tanh2 and fc4 + sigmoid4 are FusedMatMuls
  // (a MatMul and its activation, zero bias), rescale + tanh3 one PointwiseChain.
  EXPECT_EQ(result->candidates.size(), 8u);
  ASSERT_EQ(result->keep.size(), 1u);
  EXPECT_EQ(result->keep[0].name, "wide_proj");
  EXPECT_EQ(result->onnxNodes, std::vector<std::string>{"wide_proj"});
  const double layers = static_cast<double>(result->candidates.size());
  EXPECT_LT(result->builds, 2 * std::log2(layers) + 2);
  EXPECT_EQ(stepsSeen, result->builds);
  ASSERT_FALSE(result->steps.empty());
  EXPECT_FALSE(result->steps.front().pass);  // all fp16: the overflow
  EXPECT_TRUE(std::isinf(result->steps.front().maxAbs));
  EXPECT_TRUE(result->steps.back().pass);
  ASSERT_EQ(result->outputs.size(), 1u);
  EXPECT_TRUE(result->outputs[0].pass);

  // The constraints: "*:fp16" then "wide_proj:fp32", obeyed; through a file.
  ASSERT_EQ(result->constraints.layerPrecisions.size(), 2u);
  EXPECT_EQ(layerPrecisionSpecToString(result->constraints.layerPrecisions),
            "*:fp16,wide_proj:fp32");
  const std::string path = tempFile("constraints.json");
  ASSERT_TRUE(savePrecisionConstraints(result->constraints, path).isOk());
  auto loaded = loadPrecisionConstraints(path);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  EXPECT_EQ(loaded->mode, ConstraintMode::kObey);

  auto judge = PlanJudge::create(network, inputs, options.tolerance);
  ASSERT_TRUE(judge.isOk());
  BuilderConfig fixed;
  applyPrecisionConstraints(*loaded, &fixed);
  EXPECT_TRUE(fixed.fp16);
  std::shared_ptr<const Plan> plan;
  auto verdict = judge->buildAndJudge(fixed, &plan);
  ASSERT_TRUE(verdict.isOk()) << verdict.status().toString();
  EXPECT_TRUE(verdict->pass);
  int fp16Layers = 0;
  for (const LayerRecord& l : plan->record.layers) {
    fp16Layers += l.precision == DataType::kFloat16;
    if (l.name == "wide_proj") EXPECT_EQ(l.precision, DataType::kFloat32);
  }
  EXPECT_EQ(fp16Layers, 7);

  BuilderConfig allFp16;
  allFp16.fp16 = true;
  allFp16.precisionConstraints = ConstraintMode::kObey;
  allFp16.layerPrecisions = {{"*", DataType::kFloat16}};
  auto failing = judge->buildAndJudge(allFp16);
  ASSERT_TRUE(failing.isOk());
  EXPECT_FALSE(failing->pass);
}

TEST(PrecisionDebug, BenignNetworkNeedsNothingKept) {
  PrecisionDebugOptions options;
  auto result =
      debugPrecision(test::smallCnn(), {test::randomInputs(*test::smallCnn(), 5)}, options);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  EXPECT_TRUE(result->reducedPasses);
  EXPECT_TRUE(result->keep.empty());
  EXPECT_EQ(result->builds, 1);
}

TEST(PrecisionDebug, OutputsThatFailEvenInFp32AreAnError) {
  PrecisionDebugOptions options;
  options.makeRunner = test::shiftedOutputsWhen([](const Plan&) { return true; });
  auto network = test::fp16OverflowNetwork();
  int builds = 0;
  options.onStep = [&](const PrecisionDebugStep&) { ++builds; };
  auto result = debugPrecision(network, {test::randomInputs(*network, 5)}, options);
  ASSERT_FALSE(result.isOk());
  EXPECT_NE(result.status().message().find("even with every layer in fp32"), std::string::npos)
      << result.status().message();
  EXPECT_LE(builds, 2 + 4 + 2);  // all fp16, the bisection of 12, the kept one, all fp32
}

TEST(ConstraintsFile, BadFilesAreErrorsNamingTheFileAndRule) {
  const std::string path = tempFile("bad.json");
  auto write = [&](const std::string& text) { std::ofstream(path) << text; };
  write("{\"format\": \"kiln-tactics\"}");
  auto r = loadPrecisionConstraints(path);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("not a Kiln constraints file"), std::string::npos);
  write(R"({"format": "kiln-constraints", "version": 1,
            "layer_precisions": [{"layer": "a", "precision": "fp16"}, {"layer": "b"}]})");
  r = loadPrecisionConstraints(path);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("layer_precisions[1]"), std::string::npos)
      << r.status().message();
  write(R"({"format": "kiln-constraints", "version": 1, "precision_constraints": "always"})");
  EXPECT_FALSE(loadPrecisionConstraints(path).isOk());
  EXPECT_EQ(loadPrecisionConstraints(path + ".missing").status().code(), StatusCode::kNotFound);
}

TEST(ConstraintsFile, RulesGoBeforeTheConfigsOwn) {
  PrecisionConstraints file;
  file.mode = ConstraintMode::kPrefer;
  file.layerPrecisions = {{"*", DataType::kBFloat16}, {"n1", DataType::kFloat32}};
  BuilderConfig config;
  config.layerPrecisions = {{"n1", DataType::kFloat16}};
  applyPrecisionConstraints(file, &config);
  EXPECT_EQ(config.precisionConstraints, ConstraintMode::kPrefer);
  EXPECT_TRUE(config.bf16);
  EXPECT_FALSE(config.fp16);
  ASSERT_EQ(config.layerPrecisions.size(), 3u);
  EXPECT_EQ(findLayerRule(config.layerPrecisions, "n1")->precision, DataType::kFloat16);
}

}  // namespace
}  // namespace kiln::compare
