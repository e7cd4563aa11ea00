// EngineReport of a Kiln plan (tiny BERT built on the CPU backend) and the plan
// profiler: one report layer per plan layer with its ONNX nodes, profiles whose
// names match the report, and cancellation.
#include <gtest/gtest.h>

#include "engine/builder/builder_fixture.h"
#include "engine_inspector.h"
#include "engine_report.h"
#include "kiln/cuda_plan_options.h"
#include "kiln/cuda_runtime.h"
#include "plan_profiler.h"

namespace kiln::inspector {
namespace {

const Plan& bertPlan(ProfilingVerbosity verbosity = ProfilingVerbosity::kDetailed) {
  static std::map<ProfilingVerbosity, Plan> plans;
  auto found = plans.find(verbosity);
  if (found != plans.end()) return found->second;
  BuilderConfig config;
  config.profiles = {test::bertProfile({1, 4}, {2, 16}, {4, 32})};
  config.profilingVerbosity = verbosity;
  return plans[verbosity] = test::buildOnCpu(test::tinyBertNetwork(), config);
}

TEST(PlanReport, OneLayerPerPlanLayerWithItsOnnxNodes) {
  const Plan& plan = bertPlan();
  ASSERT_FALSE(plan.layers.empty());
  EngineReport r = reportFromPlan(plan, "bert.kiln");
  EXPECT_EQ(r.origin, "kiln plan");
  EXPECT_EQ(r.backend, "cpu");
  ASSERT_EQ(r.layers.size(), plan.layers.size());
  bool fused = false;
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const ReportLayer& l = r.layers[i];
    EXPECT_EQ(l.name, plan.network->graph.nodes[i].displayName());
    EXPECT_FALSE(l.sourceNodes.empty()) << l.name;
    EXPECT_EQ(l.tactic, plan.layers[i].tactic);
    EXPECT_EQ(l.precision, "FP32");
    EXPECT_EQ(l.tacticValue, tacticValueHex(tacticValueOf(l.tactic)));
    EXPECT_FALSE(l.candidates.empty()) << l.name;
    fused = fused || l.sourceNodes.size() > 1;
  }
  EXPECT_TRUE(fused) << "the optimizer fuses some of tiny BERT's nodes";
  const ReportLayer& last = r.layers.back();
  ASSERT_EQ(last.outputs.size(), 1u);
  EXPECT_EQ(last.outputs[0].dimensions, (std::vector<int64_t>{2, 16, 32}));
  EXPECT_EQ(last.outputs[0].formatDatatype, "Row major linear FP32");
  EXPECT_EQ(last.outputBytes, 2 * 16 * 32 * 4);
  EXPECT_EQ(r.activationBytes, plan.record.activationBytes);
  EXPECT_GT(r.weightBytes, 0);
  EXPECT_EQ(r.bindings.front(), "input_ids");
  EXPECT_NE(r.summary.find("plan: " + std::to_string(plan.layers.size()) + " layers"),
            std::string::npos);
}

// A layer's choice inside its tactic (a CUDA kernel's cuDNN engine or cuBLASLt algorithm,
// which the plan's engine runs untimed) is data wherever the plan is shown: the report,
// the engine-inspector JSON and the report JSON (and back), `kiln inspect --candidates`.
TEST(PlanReport, ALayersChoiceTravelsToEveryView) {
  Plan plan = bertPlan();
  ASSERT_FALSE(plan.record.layers.empty());
  LayerRecord& layer = plan.record.layers.front();
  ASSERT_FALSE(layer.candidates.empty());
  const std::string choice = "fused_graph engine=10 knobs=2:5,13:1";
  layer.candidates.front().choice = choice;
  const EngineReport r = reportFromPlan(plan, "bert.kiln");
  EXPECT_EQ(r.layers.front().candidates.front().choice, choice);
  const nlohmann::json inspectorJson = engineInspectorJson(plan);
  EXPECT_NE(inspectorJson.dump().find("\"Choice\":\"" + choice + "\""), std::string::npos);
  auto back = reportFromTrtexecJson(reportJson(r), "back");
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->layers.front().candidates.front().choice, choice);
  auto fromInspector = reportFromTrtexecJson(inspectorJson, "inspector");
  ASSERT_TRUE(fromInspector.isOk()) << fromInspector.status().toString();
  EXPECT_EQ(fromInspector->layers.front().candidates.front().choice, choice);
  EXPECT_NE(formatLayerTable(plan, true).find("        choice: " + choice + "\n"),
            std::string::npos);
  EXPECT_EQ(formatLayerTable(bertPlan(), true).find("choice:"), std::string::npos);
}

TEST(PlanReport, NamesOnlyPlanStillNamesNodesAndTactics) {
  const Plan& plan = bertPlan(ProfilingVerbosity::kLayerNamesOnly);
  EngineReport r = reportFromPlan(plan, "bert.kiln");
  ASSERT_EQ(r.layers.size(), plan.layers.size());
  for (size_t i = 0; i < r.layers.size(); ++i) {
    EXPECT_FALSE(r.layers[i].sourceNodes.empty());
    EXPECT_EQ(r.layers[i].tactic, plan.layers[i].tactic);
    EXPECT_TRUE(r.layers[i].candidates.empty());
  }
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings[0].find("layer_names_only"), std::string::npos) << r.warnings[0];
}

TEST(PlanProfiler, InputsAreAtTheFirstProfilesOptShapes) {
  auto inputs = planInputs(bertPlan(), 5);
  ASSERT_TRUE(inputs.isOk()) << inputs.status().toString();
  ASSERT_EQ(inputs->size(), 1u);
  EXPECT_EQ(inputs->at("input_ids").shape(), (Shape{2, 16}));
}

TEST(PlanProfiler, ProfileCountsIterationsAndTimesEveryLayer) {
  const Plan& plan = bertPlan();
  std::vector<int> seen;
  auto profile = profilePlan(plan, 3, 7, nullptr, [&](int done, int total) {
    EXPECT_EQ(total, 3);
    seen.push_back(done);
  });
  ASSERT_TRUE(profile.isOk()) << profile.status().toString();
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
  const nlohmann::json& p = profile.value();
  EXPECT_EQ(p[0]["count"], 3);
  ASSERT_EQ(p.size(), plan.layers.size() + 1);
  double percent = 0;
  for (size_t i = 1; i < p.size(); ++i) {
    EXPECT_EQ(p[i]["name"], plan.network->graph.nodes[i - 1].displayName());
    EXPECT_GT(p[i]["timeMs"].get<double>(), 0) << p[i]["name"];
    EXPECT_GT(p[i]["medianMs"].get<double>(), 0) << p[i]["name"];
    EXPECT_NEAR(p[i]["averageMs"].get<double>() * 3, p[i]["timeMs"].get<double>(), 1e-9);
    percent += p[i]["percentage"].get<double>();
  }
  EXPECT_NEAR(percent, 100.0, 1e-9);

  // The profile's names are the report's: every layer gets its time.
  EngineReport r = reportFromPlan(plan, "bert.kiln");
  ASSERT_TRUE(applyProfile(p, &r).isOk());
  EXPECT_EQ(r.profileIterations, 3);
  for (size_t i = 0; i < r.layers.size(); ++i)
    EXPECT_EQ(r.layers[i].milliseconds, p[i + 1]["medianMs"].get<double>());
}

// Tactics as data (issue 23): the profiler says what ran for each layer, and for a CPU
// plan that is the tactic its BuildRecord chose, layer by layer.
TEST(PlanProfiler, EachLayerRunsTheTacticItsBuildRecordChose) {
  const Plan& plan = bertPlan();
  auto profile = profilePlan(plan, 1, 3, nullptr, {});
  ASSERT_TRUE(profile.isOk()) << profile.status().toString();
  const nlohmann::json& p = profile.value();
  ASSERT_EQ(p.size(), plan.record.layers.size() + 1);
  for (size_t i = 1; i < p.size(); ++i) {
    const LayerRecord& built = plan.record.layers[i - 1];
    ASSERT_TRUE(p[i].contains("implementation")) << p[i].dump();
    EXPECT_EQ(p[i]["implementation"], built.tactic) << built.name;
    EXPECT_FALSE(built.tactic.empty()) << built.name;
  }
}

// The choices a CUDA plan's runtime takes back: per layer, its winning candidate's (the
// layer's tactic, not rejected, at the layer's precision where one is).
TEST(PlanProfiler, LayerChoicesComeFromEachLayersWinningCandidate) {
  BuildRecord record;
  auto candidate = [](const std::string& tactic, DataType precision, const std::string& choice,
                      const std::string& rejected = "") {
    TacticCandidate c;
    c.tactic = tactic;
    c.precision = precision;
    c.choice = choice;
    c.rejected = rejected;
    return c;
  };
  LayerRecord gemm;
  gemm.name = "fc1";
  gemm.tactic = "cuda.runtime";
  gemm.precision = DataType::kFloat16;
  gemm.candidates = {candidate("cuda.runtime", DataType::kFloat32, "cublaslt"),
                     candidate("cuda.runtime", DataType::kFloat16, "cublaslt_gelu_tanh")};
  LayerRecord rejected;
  rejected.name = "fc2";
  rejected.tactic = "cuda.runtime";
  rejected.precision = DataType::kFloat16;
  rejected.candidates = {candidate("cuda.other", DataType::kFloat16, "x"),
                         candidate("cuda.runtime", DataType::kFloat16, "y", "unsupported: no")};
  LayerRecord typed;  // strongly typed: records its inputs' type, timed in float32
  typed.name = "fc3";
  typed.tactic = "cuda.runtime";
  typed.precision = DataType::kFloat16;
  typed.candidates = {candidate("cuda.runtime", DataType::kFloat32, "cudnn_graph:cudnn engine 7")};
  LayerRecord none;
  none.name = "relu";
  none.tactic = "cuda.runtime";
  none.candidates = {candidate("cuda.runtime", DataType::kFloat32, "")};
  record.layers = {gemm, rejected, typed, none};
  const std::map<std::string, std::string> choices = cuda::layerChoicesOfRecord(record);
  EXPECT_EQ(choices, (std::map<std::string, std::string>{{"fc1", "cublaslt_gelu_tanh"},
                                                         {"fc3", "cudnn_graph:cudnn engine 7"}}));
  Plan plan;
  plan.record = record;
  EXPECT_EQ(cuda::engineOptionsForPlan(plan).layerChoices, choices);
}

TEST(PlanProfiler, CancelStopsTheRun) {
  std::atomic<bool> cancel{true};
  auto profile = profilePlan(bertPlan(), 50, 1, &cancel, {});
  ASSERT_FALSE(profile.isOk());
  EXPECT_EQ(profile.status().code(), StatusCode::kCancelled);
  auto zero = profilePlan(bertPlan(), 0, 1, nullptr, {});
  ASSERT_FALSE(zero.isOk());
  EXPECT_NE(zero.status().message().find("iterations must be >= 1"), std::string::npos);
}

TEST(PlanProfiler, CudaPlanNeedsADeviceOrFallsBackToCpuOnRequest) {
  Plan plan = bertPlan();
  plan.identity.backend = "cuda";  // the same network as a CUDA plan
  auto profile = profilePlan(plan, 2, 1, nullptr, {});
  if (cuda::probeCudaDevice().available) {
    ASSERT_TRUE(profile.isOk()) << profile.status().toString();
    EXPECT_EQ(profile.value()[0]["count"], 2);
  } else {
    ASSERT_FALSE(profile.isOk());
    EXPECT_NE(profile.status().message().find("no usable CUDA device"), std::string::npos)
        << profile.status().message();
  }
  auto onCpu = profilePlanOnCpu(plan, 2, 1, nullptr, {});
  ASSERT_TRUE(onCpu.isOk()) << onCpu.status().toString();
  EXPECT_EQ(onCpu.value()[0]["count"], 2);
  EXPECT_EQ(onCpu.value().size(), plan.layers.size() + 1);
}

}  // namespace
}  // namespace kiln::inspector
