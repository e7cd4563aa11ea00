#include "engine/builder/builder_fixture.h"

#include <filesystem>

namespace kiln::test {
namespace {

std::shared_ptr<const Network> importOnce(const std::string& path) {
  auto network = importOnnxFile(path);
  EXPECT_TRUE(network.isOk()) << network.status().toString();
  return std::make_shared<const Network>(std::move(network.value()));
}

}  // namespace

std::shared_ptr<const Network> classifierNetwork() {
  static auto network =
      importOnce(std::string(KILN_MODELS_DIR) + "/ppocr_mobile_v2_cls/model.onnx");
  return network;
}

std::shared_ptr<const Network> tinyBertNetwork() {
  static auto network = importOnce(std::string(KILN_TEST_DATA_DIR) + "/builder/tiny_bert.onnx");
  return network;
}

OptimizationProfile classifierProfile(int64_t minBatch, int64_t optBatch, int64_t maxBatch) {
  OptimizationProfile profile;
  profile.inputs["x"] = {{minBatch, 3, 48, 192}, {optBatch, 3, 48, 192}, {maxBatch, 3, 48, 192}};
  return profile;
}

OptimizationProfile bertProfile(Shape min, Shape opt, Shape max) {
  OptimizationProfile profile;
  profile.inputs["input_ids"] = {std::move(min), std::move(opt), std::move(max)};
  return profile;
}

Plan buildOnCpu(std::shared_ptr<const Network> network, const BuilderConfig& config) {
  auto backend = cpuBuildBackend();
  auto plan = buildPlan(std::move(network), config, *backend);
  EXPECT_TRUE(plan.isOk()) << plan.status().toString();
  return plan.isOk() ? std::move(plan.value()) : Plan{};
}

std::vector<NamedTensor> runNetwork(const Network& network, const std::string& input,
                                    const Shape& shape, uint64_t seed, const Plan* plan) {
  const DataType type = network.graph.inputs[0].type;
  std::map<std::string, Tensor> inputs = {{input, randomInputTensor(type, shape, seed)}};
  ReferenceBackend backend(network);
  ReferenceRunOptions options;
  if (plan) options.layerImplementations = plan->layers;
  std::vector<NamedTensor> outputs;
  Status ran = backend.run(inputs, &outputs, options);
  EXPECT_TRUE(ran.isOk()) << ran.toString();
  return outputs;
}

std::string tempPath(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return (std::filesystem::temp_directory_path() /
          (std::string("kiln_") + info->test_suite_name() + "_" + info->name() + suffix))
      .string();
}

}  // namespace kiln::test
