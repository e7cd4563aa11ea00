// Plans whose metadata was edited and whose checksum was recomputed (serializePlan
// writes a valid one, as anyone can): every field the runtime trusts is checked
// on load and a bad one refused with one line naming the file and the field.
#include <functional>
#include <string>
#include <vector>

#include "engine/builder/builder_fixture.h"
#include "kiln/plan.h"
#include "plan/plan_metadata.h"
#include "support/hostile_models.h"

namespace kiln::test {
namespace {

using hostile::kWrapsToTwo;

class PlanValidation : public hostile::FixedLimitsTest {
 protected:
  static const Plan& built() {
    static const Plan plan = [] {
      BuilderConfig config;
      config.profiles = {classifierProfile(1, 2, 4)};
      config.optimizationLevel = 1;
      return buildOnCpu(classifierNetwork(), config);
    }();
    return plan;
  }

  // Serializes the edited plan (valid checksum) and loads it back.
  static Status loaded(const Plan& edited) {
    auto bytes = serializePlan(edited);
    EXPECT_TRUE(bytes.isOk()) << bytes.status().toString();
    auto plan = deserializePlan(bytes.value(), "edited.kiln");
    return plan.isOk() ? Status::ok() : plan.status();
  }
};

TEST_F(PlanValidation, UneditedPlanLoads) {
  Status s = loaded(built());
  EXPECT_TRUE(s.isOk()) << s.toString();
}

TEST_F(PlanValidation, NegativeProfileDimsAreRefused) {
  Plan plan = built();
  plan.profiles[0].inputs["x"].min[0] = -1;
  EXPECT_EQ(loaded(plan).message(),
            "edited.kiln: optimization profile 0, input 'x': dim 0 needs 0 <= min <= opt <= max "
            "(-1, 2, 4)");
}

TEST_F(PlanValidation, ProfileShapesThatWrapAreRefused) {
  Plan plan = built();
  ShapeRange& x = plan.profiles[0].inputs["x"];
  x.max = {3, kWrapsToTwo, 48, 192};
  EXPECT_EQ(loaded(plan).message(),
            "edited.kiln: optimization profile 0, input 'x': max: dim 1 (6148914691236517206) "
            "exceeds the limit of 1099511627776");
}

TEST_F(PlanValidation, ProfilesForUnknownInputsAreRefused) {
  Plan plan = built();
  plan.profiles[0].inputs["nope"] = plan.profiles[0].inputs["x"];
  EXPECT_EQ(loaded(plan).message(),
            "edited.kiln: optimization profile 0 names 'nope', which is not an input of the "
            "model");
}

TEST_F(PlanValidation, PrecisionCodesNoBackendRunsAreRefused) {
  Plan plan = built();
  ASSERT_FALSE(plan.layers.empty());
  plan.layers[0].precision = DataType::kString;
  const std::string first = plan.network->graph.nodes[0].displayName();
  EXPECT_EQ(loaded(plan).message(), "edited.kiln: layer '" + first +
                                        "': precision string is not one a backend runs layers in");
  plan = built();
  plan.layers[0].outputType = DataType::kUInt64;
  EXPECT_EQ(loaded(plan).message(),
            "edited.kiln: layer '" + first + "': output type uint64 is not one a backend writes");
}

TEST_F(PlanValidation, RecordNumbersABuildNeverWritesAreRefused) {
  Plan plan = built();
  plan.record.config.optimizationLevel = 99;
  EXPECT_EQ(loaded(plan).message(),
            "edited.kiln: plan record is damaged: optimization level 99 is outside 0..5");
  plan = built();
  ASSERT_FALSE(plan.record.layers.empty());
  plan.record.layers[0].memoryOffset = -7;
  const std::string message = loaded(plan).message();
  EXPECT_NE(message.find("memory offset -7 is negative"), std::string::npos) << message;
  plan = built();
  plan.record.layers[0].precision = DataType::kComplex128;
  EXPECT_NE(loaded(plan).message().find("precision complex128"), std::string::npos)
      << loaded(plan).message();
}

// A candidate's choice (what a CUDA plan's engine takes back and writes into its
// implementation text): printable and bounded, or the plan is refused.
TEST_F(PlanValidation, ChoicesThatAreNotPrintableWordsAreRefused) {
  Plan plan = built();
  ASSERT_FALSE(plan.record.layers.empty());
  ASSERT_FALSE(plan.record.layers[0].candidates.empty());
  const std::string layer = plan.record.layers[0].name;
  plan.record.layers[0].candidates[0].choice = "fused_graph engine=10 knobs=2:5";
  Status fine = loaded(plan);
  EXPECT_TRUE(fine.isOk()) << fine.toString();
  for (const std::string& bad :
       {std::string("cudnn\x1b[2J engine=1"), std::string("a\nb"), std::string(2000, 'x')}) {
    plan.record.layers[0].candidates[0].choice = bad;
    EXPECT_EQ(loaded(plan).message(),
              "edited.kiln: plan record is damaged: layer '" + layer +
                  "': a candidate's choice is not printable text of at most 1024 bytes");
  }
  // The layer's own choice (the winner's, LayerRecord::choice) is held to the same rule.
  plan.record.layers[0].candidates[0].choice = "fused_graph engine=10 knobs=2:5";
  plan.record.layers[0].choice = "cudnn\x1b[2J engine=1";
  EXPECT_EQ(loaded(plan).message(),
            "edited.kiln: plan record is damaged: layer '" + layer +
                "': the layer's choice is not printable text of at most 1024 bytes");
}

TEST_F(PlanValidation, LayerListsThatDoNotMatchTheNetworkAreRefused) {
  Plan plan = built();
  plan.layers.pop_back();
  const std::string message = loaded(plan).message();
  EXPECT_EQ(message.rfind("edited.kiln: plan metadata is damaged: ", 0), 0u) << message;
  EXPECT_NE(message.find("layer implementations for"), std::string::npos) << message;
}

TEST_F(PlanValidation, NetworkInputDimsThatWrapAreRefused) {
  Plan plan = built();
  auto network = std::make_shared<Network>(*plan.network);
  network->graph.inputs[0].shape[1] = DimExpr(kWrapsToTwo);
  plan.network = network;
  const std::string message = loaded(plan).message();
  EXPECT_EQ(message.rfind("edited.kiln: graph input: value 'x': dim 1 (6148914691236517206)", 0),
            0u)
      << message;
}

// Mistyped metadata values (the JSON edited directly, as the fuzzed loader does) are
// refused naming the member; a float where an integer belongs is no longer converted
// (undefined behaviour for 3.2e19 -> uint64, found by fuzz_plan_load).
TEST_F(PlanValidation, MistypedMetadataNamesTheMember) {
  const nlohmann::json good = plan::metadataToJson(built());
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](nlohmann::json& j) { j["record"]["layers"][0]["tactic_value"] = 3.15161e19; },
       "'tactic_value' must be an integer, not the number"},
      {[](nlohmann::json& j) { j["record"]["layers"][0]["tactic_value"] = -1; },
       "'tactic_value' must be a non-negative integer"},
      {[](nlohmann::json& j) { j["identity"]["compute_major"] = "9"; },
       "'compute_major' must be an integer, not the string"},
      {[](nlohmann::json& j) { j["record"]["config"]["fp16"] = 1; },
       "'fp16' must be true or false"},
      {[](nlohmann::json& j) { j["record"]["config"]["optimization_level"] = 4294967298.0; },
       "'optimization_level' must be an integer"},
      {[](nlohmann::json& j) {
         j["record"]["warnings"] = {"ok", 5};
       },
       "'warnings' must be a string, not the number 5"},
      {[](nlohmann::json& j) { j["identity"].erase("device"); }, "'device' is missing"},
  };
  for (const Case& c : cases) {
    nlohmann::json edited = good;
    c.edit(edited);
    Plan plan;
    const Status s = plan::metadataFromJson(edited, &plan);
    ASSERT_FALSE(s.isOk()) << c.expected;
    EXPECT_NE(s.message().find(c.expected), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace kiln::test
