// Optimization profiles: dynamic inputs need ranges; a BERT-style model with
// dynamic batch and sequence builds with two profiles and runs inside both; a
// shape outside is refused naming the input, the shape and the range.
#include "engine/builder/builder_fixture.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

BuilderConfig twoBertProfiles() {
  BuilderConfig config;
  config.optimizationLevel = 1;
  config.profiles = {bertProfile({1, 4}, {2, 16}, {4, 32}),
                     bertProfile({8, 32}, {8, 64}, {16, 128})};
  return config;
}

TEST(Profiles, BertStyleModelBuildsWithTwoProfilesAndRunsInsideBoth) {
  Plan plan = buildOnCpu(tinyBertNetwork(), twoBertProfiles());
  ASSERT_EQ(plan.profiles.size(), 2u);
  for (const Shape& shape :
       {Shape{1, 4}, Shape{3, 17}, Shape{4, 32}, Shape{8, 40}, Shape{16, 128}}) {
    const int profile = shape[0] >= 8 ? 1 : 0;
    EXPECT_TRUE(checkShapeInProfile(plan.profiles[profile], profile, "input_ids", shape).isOk())
        << shapeToString(shape);
    auto expected = runNetwork(*tinyBertNetwork(), "input_ids", shape, 21);
    auto actual = runNetwork(*plan.network, "input_ids", shape, 21, &plan);
    ASSERT_EQ(actual[0].tensor.shape(), (Shape{shape[0], shape[1], 32}));
    expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-4);
  }
  // The layer report uses the first profile's opt shapes.
  EXPECT_EQ(plan.record.layers.back().outputs[0].dimensions, (Shape{2, 16, 32}));
}

TEST(Profiles, ShapeOutsideTheProfileIsRefusedClearly) {
  Plan plan = buildOnCpu(tinyBertNetwork(), twoBertProfiles());
  Status s = checkShapeInProfile(plan.profiles[0], 0, "input_ids", {2, 64});
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(),
            "input 'input_ids' shape 2x64 is outside optimization profile 0: min 1x4, max 4x32");
  EXPECT_FALSE(checkShapeInProfile(plan.profiles[1], 1, "input_ids", {4, 64}).isOk());
  EXPECT_FALSE(checkShapeInProfile(plan.profiles[1], 1, "input_ids", {8, 64, 1}).isOk());
}

Status buildError(const BuilderConfig& config) {
  auto backend = cpuBuildBackend();
  auto plan = buildPlan(tinyBertNetwork(), config, *backend);
  return plan.isOk() ? Status::ok() : plan.status();
}

TEST(Profiles, BadProfilesAreRefusedNamingTheInput) {
  BuilderConfig config;
  Status s = buildError(config);
  EXPECT_NE(s.message().find("input 'input_ids' has dynamic shape batchxseq"), std::string::npos)
      << s.message();
  config.profiles = {bertProfile({1, 8}, {1, 4}, {2, 8})};
  s = buildError(config);
  EXPECT_NE(s.message().find("min <= opt <= max"), std::string::npos) << s.message();
  config.profiles = {bertProfile({1}, {1}, {2})};
  s = buildError(config);
  EXPECT_NE(s.message().find("rank 1 but the model declares batchxseq"), std::string::npos)
      << s.message();
  config.profiles = {bertProfile({1, 4}, {1, 4}, {1, 4})};
  config.profiles[0].inputs["mask"] = {{1}, {1}, {1}};
  s = buildError(config);
  EXPECT_NE(s.message().find("'mask', which is not an input"), std::string::npos) << s.message();
  // A range for a fixed-shape input must be that shape (the classifier's 3 channels).
  BuilderConfig fixed;
  auto backend = cpuBuildBackend();
  OptimizationProfile cls;
  cls.inputs["x"] = {{1, 4, 48, 192}, {1, 4, 48, 192}, {1, 4, 48, 192}};
  auto classifier =
      importOnnxFile(std::string(KILN_MODELS_DIR) + "/ppocr_mobile_v2_cls/model.onnx");
  ASSERT_TRUE(classifier.isOk());
  fixed.profiles = {cls};
  auto plan = buildPlan(std::make_shared<Network>(std::move(classifier.value())), fixed, *backend);
  ASSERT_FALSE(plan.isOk());
  EXPECT_NE(plan.status().message().find("dim 1 is fixed at 3"), std::string::npos)
      << plan.status().message();
}

}  // namespace
}  // namespace kiln::test
