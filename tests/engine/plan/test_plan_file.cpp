// Plan files: save -> load -> run gives the model's outputs; every kind of damage
// is refused with a one-line error naming the file; identities are compared.
#include <fstream>

#include "engine/builder/builder_fixture.h"
#include "engine_inspector.h"
#include "kiln/plan.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

Plan builtClassifier(ProfilingVerbosity verbosity = ProfilingVerbosity::kDetailed) {
  BuilderConfig config;
  config.profiles = {classifierProfile(1, 2, 4)};
  config.optimizationLevel = 1;
  config.profilingVerbosity = verbosity;
  return buildOnCpu(classifierNetwork(), config);
}

std::string savedBytes(const Plan& plan) {
  auto bytes = serializePlan(plan);
  EXPECT_TRUE(bytes.isOk()) << bytes.status().toString();
  return bytes.isOk() ? bytes.value() : std::string();
}

void expectRefused(const std::string& bytes, const std::string& fragment) {
  auto plan = deserializePlan(bytes, "damaged.kiln");
  ASSERT_FALSE(plan.isOk()) << "accepted a plan that should fail with: " << fragment;
  const std::string& message = plan.status().message();
  EXPECT_EQ(message.rfind("damaged.kiln: ", 0), 0u) << message;
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(PlanFile, SaveLoadRunGivesTheModelsOutputs) {
  Plan plan = builtClassifier();
  const std::string path = tempPath(".kiln");
  ASSERT_TRUE(savePlan(plan, path).isOk());
  EXPECT_TRUE(looksLikePlanFile(path));
  auto loaded = loadPlanFile(path);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  EXPECT_EQ(loaded->layers.size(), plan.layers.size());
  EXPECT_EQ(loaded->record.layers.size(), plan.record.layers.size());
  EXPECT_EQ(loaded->profiles[0].inputs.at("x").max, (Shape{4, 3, 48, 192}));
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    EXPECT_EQ(loaded->layers[i].tactic, plan.layers[i].tactic);
    EXPECT_EQ(loaded->record.layers[i].candidates.size(), plan.record.layers[i].candidates.size());
  }
  EXPECT_TRUE(checkPlanCompatible(loaded->identity, cpuPlanIdentity()).isOk());
  auto expected = runNetwork(*classifierNetwork(), "x", {4, 3, 48, 192}, 11);
  auto actual = runNetwork(*loaded->network, "x", {4, 3, 48, 192}, 11, &loaded.value());
  expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-4);
}

// A candidate's choice inside its tactic (what a CUDA runtime replays) survives the file;
// a record without one (every CPU candidate, plans written before the field) reads "".
TEST(PlanFile, CandidateChoicesSurviveTheFile) {
  Plan plan = builtClassifier();
  ASSERT_FALSE(plan.record.layers.empty());
  ASSERT_FALSE(plan.record.layers[0].candidates.empty());
  plan.record.layers[0].candidates[0].choice = "cublaslt_gelu_tanh";
  auto loaded = deserializePlan(savedBytes(plan), "choices.kiln");
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  EXPECT_EQ(loaded->record.layers[0].candidates[0].choice, "cublaslt_gelu_tanh");
  for (size_t i = 1; i < loaded->record.layers.size(); ++i)
    for (const TacticCandidate& c : loaded->record.layers[i].candidates)
      EXPECT_EQ(c.choice, "") << loaded->record.layers[i].name;
}

// Unnamed nodes are known as OpType_index by their place in the source model; a loaded
// plan's layers keep those names (passes removed nodes before them, so a re-import
// numbering them anew would rename them, and profiles would not match the record).
TEST(PlanFile, UnnamedNodesKeepTheirRecordNames) {
  Plan plan = builtClassifier();
  auto network = std::make_shared<Network>(*plan.network);
  for (size_t i = 0; i < network->graph.nodes.size(); ++i) {
    network->graph.nodes[i].name.clear();
    network->graph.nodes[i].index = static_cast<int>(i) + 7;  // as if 7 nodes went before
  }
  plan.network = network;
  auto loaded = deserializePlan(savedBytes(plan), "unnamed.kiln");
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  ASSERT_EQ(loaded->network->graph.nodes.size(), network->graph.nodes.size());
  for (size_t i = 0; i < network->graph.nodes.size(); ++i)
    EXPECT_EQ(loaded->network->graph.nodes[i].displayName(), network->graph.nodes[i].displayName());
}

TEST(PlanFile, WeightsLieAlignedInTheirSection) {
  const std::string bytes = savedBytes(builtClassifier());
  uint64_t weightsOffset = 0, weightsSize = 0;
  std::memcpy(&weightsOffset, bytes.data() + 48, 8);
  std::memcpy(&weightsSize, bytes.data() + 56, 8);
  EXPECT_EQ(weightsOffset % kPlanWeightAlignment, 0u);
  EXPECT_GT(weightsSize, 400000u);  // the classifier's Constant-node weights
}

TEST(PlanFile, TruncatedPlansAreRefused) {
  const std::string bytes = savedBytes(builtClassifier());
  expectRefused(bytes.substr(0, 40), "truncated");
  expectRefused(bytes.substr(0, bytes.size() / 2), "truncated");
  expectRefused(bytes.substr(0, bytes.size() - 1), "");
}

TEST(PlanFile, FlippedBytesAreRefused) {
  const std::string bytes = savedBytes(builtClassifier());
  for (size_t at : {size_t{kPlanHeaderBytes} + 3, bytes.size() / 3, bytes.size() - 2}) {
    std::string damaged = bytes;
    damaged[at] ^= 0x5A;
    expectRefused(damaged, "checksum");
  }
}

TEST(PlanFile, OtherFormatVersionsAreRefused) {
  std::string damaged = savedBytes(builtClassifier());
  const uint32_t future = kPlanFormatVersion + 1;
  std::memcpy(&damaged[8], &future, 4);
  expectRefused(damaged, "format version " + std::to_string(future) + " is not supported");
}

TEST(PlanFile, ForeignFilesAndBadOffsetsAreRefused) {
  expectRefused("", "no KILNPLAN magic");
  std::ifstream onnx(std::string(KILN_TEST_DATA_DIR) + "/add.onnx", std::ios::binary);
  expectRefused(std::string(std::istreambuf_iterator<char>(onnx), {}), "no KILNPLAN magic");
  std::string damaged = savedBytes(builtClassifier());
  const uint64_t huge = uint64_t{1} << 62;
  std::memcpy(&damaged[32], &huge, 8);  // the model section's offset
  expectRefused(damaged, "outside the file");
}

TEST(PlanFile, PlansFromAnotherDeviceOrVersionAreRefused) {
  PlanIdentity h100 = {"cuda", "NVIDIA H100 80GB HBM3", 9, 0, {{"cudnn", "91400"}}, "0.1.0"};
  PlanIdentity l4 = h100;
  l4.deviceName = "NVIDIA L4";
  l4.computeMinor = 9;
  Status s = checkPlanCompatible(h100, l4);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("NVIDIA H100 80GB HBM3 (sm_90)"), std::string::npos) << s.message();
  PlanIdentity newerCudnn = h100;
  newerCudnn.libraries["cudnn"] = "91500";
  s = checkPlanCompatible(h100, newerCudnn);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("cudnn 91400"), std::string::npos) << s.message();
  EXPECT_FALSE(checkPlanCompatible(cpuPlanIdentity(), h100).isOk());
  PlanIdentity oldKiln = cpuPlanIdentity();
  oldKiln.kilnVersion = "0.0.1";
  EXPECT_FALSE(checkPlanCompatible(oldKiln, cpuPlanIdentity()).isOk());
}

TEST(PlanFile, VerbosityNoneKeepsWhatTheRuntimeNeedsOnly) {
  Plan plan = builtClassifier(ProfilingVerbosity::kNone);
  EXPECT_TRUE(plan.record.layers.empty());
  auto loaded = deserializePlan(savedBytes(plan), "none.kiln");
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  EXPECT_EQ(loaded->layers.size(), loaded->network->graph.nodes.size());
  nlohmann::json inspector = inspector::engineInspectorJson(loaded.value());
  EXPECT_TRUE(inspector["Layers"].empty());
  EXPECT_EQ(inspector["Bindings"], nlohmann::json::array({"x", "save_infer_model/scale_0.tmp_1"}));
}

TEST(PlanFile, InspectorJsonSpeaksTensorRTsKeys) {
  Plan names = builtClassifier(ProfilingVerbosity::kLayerNamesOnly);
  nlohmann::json brief = inspector::engineInspectorJson(names);
  ASSERT_TRUE(brief["Layers"][0].is_string());
  Plan plan = builtClassifier();
  nlohmann::json doc = inspector::engineInspectorJson(plan);
  bool sawConv = false;
  for (const nlohmann::json& layer : doc["Layers"]) {
    for (const char* key : {"Name", "LayerType", "Inputs", "Outputs", "ParameterType", "TacticName",
                            "TacticValue", "Metadata", "Precision", "PrecisionReason", "Candidates",
                            "Fusion", "Workspace", "MemoryOffset"})
      ASSERT_TRUE(layer.contains(key)) << key << " in " << layer.dump();
    if (layer["LayerType"] != "Convolution") continue;
    sawConv = true;
    EXPECT_EQ(layer["Inputs"][0]["Format/Datatype"], "Row major linear FP32");
    EXPECT_EQ(layer["TacticValue"].get<std::string>().size(), 18u);
    if (layer["Fusion"] == "fuse_conv_bias_activation") {
      // A FusedConv ("Conv@0 + BatchNormalization@0 + PWN(Clip@0)") runs on the
      // reference conv kernel with its epilogue: one timed candidate.
      EXPECT_EQ(layer["Metadata"].get<std::string>().rfind("[ONNX Layer: Conv", 0), 0u);
      EXPECT_GE(layer["Candidates"].size(), 1u);
      continue;
    }
    // "Conv@0 + BatchNormalization@0" came from ONNX nodes "Conv@0, BatchNormalization@0".
    std::string sources = layer["Name"].get<std::string>();
    for (size_t at; (at = sources.find(" + ")) != std::string::npos;) sources.replace(at, 3, ", ");
    EXPECT_EQ(layer["Metadata"], "[ONNX Layer: " + sources + "]");
    EXPECT_EQ(layer["Candidates"].size(), 3u);
    EXPECT_TRUE(layer["Candidates"][0].contains("TimeMs"));
  }
  EXPECT_TRUE(sawConv);
}

}  // namespace
}  // namespace kiln::test
