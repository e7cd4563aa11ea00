// The example plugins' CUDA implementations (examples/plugins/*.cu) against their
// CPU implementations: each example model on the CUDA engine (the plugin layer must
// run on the GPU, through enqueue(), and show up in the per-layer profiler) and on
// the CPU reference backend with the same random non-zero inputs; a fp16 engine for
// the float models; and a CUDA build whose plugin layer gets the cuda.plugin tactic.
//
// Tolerances: CopyConcat copies bytes and QuantizedPool INT8 rounds the same float32
// arithmetic on both sides (quantized_pool_math.h): exact. Float average pooling
// sums in the same order on both: 1e-6. fp16 engines: inputs rounded to fp16 first,
// 2e-3.
#include <cstdlib>
#include <iostream>

#include "gpu/gpu_op_test.h"
#include "kiln/builder.h"
#include "kiln/cuda_build_backend.h"
#include "kiln/onnx_import.h"
#include "kiln/plugin_registry.h"
#include "kiln/reference_backend.h"

namespace kiln::test {
namespace {

// The build's paths, or (on the GPU machine) what run_on_device.sh exports.
std::string fromEnv(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}
const std::string kModels = fromEnv("KILN_EXAMPLE_MODELS_DIR", KILN_EXAMPLE_MODELS_DIR);
const std::string kLibrary = fromEnv("KILN_EXAMPLE_PLUGINS", KILN_EXAMPLE_PLUGINS);

struct Case {
  std::string model;
  std::map<std::string, Tensor> inputs;
  std::string pluginLayer;
};

std::vector<Case> cases() {
  return {
      {"copy_concat",
       {{"A", randomTensor(DataType::kFloat32, {37, 4}, 1, -1, 1.5)},
        {"B", randomTensor(DataType::kFloat32, {1000, 4}, 2, -1, 1.5)}},
       "copy_concat"},
      {"quantized_pool_max",
       {{"X", randomTensor(DataType::kFloat32, {5, 4, 8, 8}, 3, -2, 2.5)}},
       "pool"},
      {"quantized_pool_average",
       {{"X", randomTensor(DataType::kFloat32, {5, 4, 8, 8}, 4, -2, 2.5)}},
       "pool"},
      {"quantized_pool_float",
       {{"X", randomTensor(DataType::kFloat32, {7, 3, 6, 10}, 5, -1, 1.5)}},
       "pool"},
  };
}

std::shared_ptr<Network> load(const std::string& name) {
  auto net = importOnnxFile(kModels + "/" + name + "/model.onnx");
  EXPECT_TRUE(net.isOk()) << net.status().toString();
  return net.isOk() ? std::make_shared<Network>(std::move(net.value())) : nullptr;
}

std::vector<NamedTensor> runReference(const Network& net, const std::map<std::string, Tensor>& in) {
  ReferenceBackend backend(net);
  std::vector<NamedTensor> out;
  Status s = backend.run(in, &out);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return out;
}

class CudaPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KILN_REQUIRE_GPU();
    Status loaded = loadPluginLibrary(kLibrary);
    ASSERT_TRUE(loaded.isOk()) << loaded.toString();
  }

  // Runs `c` on a CUDA engine of `precision`; checks the plugin layer ran on the GPU
  // and was profiled; returns the outputs (float32 at the boundary).
  std::vector<NamedTensor> runCuda(const Case& c, cuda::Precision precision) {
    std::shared_ptr<Network> net = load(c.model);
    if (!net) return {};
    cuda::EngineOptions options;
    options.allowTf32 = false;
    options.precision = precision;
    auto engine = cuda::Engine::create(net, options);
    EXPECT_TRUE(engine.isOk()) << engine.status().toString();
    if (!engine.isOk()) return {};
    auto ctx = engine.value()->createContext();
    EXPECT_TRUE(ctx.isOk()) << ctx.status().toString();
    if (!ctx.isOk()) return {};
    auto& context = *ctx.value();
    for (const auto& [name, t] : c.inputs) {
      EXPECT_TRUE(context.setInputShape(name, t.shape()).isOk());
      EXPECT_TRUE(context.setInput(name, t).isOk());
    }
    context.setProfiling(true);
    Status ran = context.execute();
    EXPECT_TRUE(ran.isOk()) << ran.toString();
    bool onGpu = false;
    for (const cuda::LayerInfo& layer : context.layers()) {
      if (layer.name != c.pluginLayer) continue;
      onGpu = layer.placement == cuda::LayerPlacement::kGpu &&
              layer.implementation.find("enqueue") != std::string::npos;
      std::cout << c.model << " " << cuda::precisionName(precision) << ": " << layer.name << " "
                << cuda::layerPlacementName(layer.placement) << " " << layer.implementation
                << (layer.note.empty() ? "" : " (" + layer.note + ")") << "\n";
    }
    EXPECT_TRUE(onGpu) << c.model << ": the plugin layer did not run through enqueue()";
    bool profiled = false;
    for (const cuda::LayerTiming& t : context.takeLayerTimings()) {
      if (t.name != c.pluginLayer || t.milliseconds.empty()) continue;
      profiled = t.milliseconds[0] > 0.f;
      std::cout << "  profiler: " << t.name << " " << t.milliseconds[0] << " ms\n";
    }
    EXPECT_TRUE(profiled) << c.model << ": the plugin layer is missing from the profiler";
    std::vector<NamedTensor> out;
    for (const std::string& name : context.outputNames()) {
      auto t = context.getOutput(name);
      EXPECT_TRUE(t.isOk()) << t.status().toString();
      if (t.isOk()) out.push_back({name, t.value()});
    }
    return out;
  }
};

TEST_F(CudaPluginTest, Float32EnginesMatchTheCpuImplementations) {
  for (const Case& c : cases()) {
    std::shared_ptr<Network> net = load(c.model);
    ASSERT_TRUE(net);
    std::vector<NamedTensor> expected = runReference(*net, c.inputs);
    std::vector<NamedTensor> actual = runCuda(c, cuda::Precision::kFloat32);
    ASSERT_EQ(actual.size(), expected.size()) << c.model;
    const double tolerance = c.model == "quantized_pool_float" ? 1e-6 : 0.0;
    for (size_t i = 0; i < expected.size(); ++i) {
      SCOPED_TRACE(c.model + " output " + expected[i].name);
      expectTensorNear(actual[i].tensor, expected[i].tensor, tolerance, tolerance);
    }
  }
}

TEST_F(CudaPluginTest, Float16EnginesMatchTheCpuImplementations) {
  for (const Case& c : cases()) {
    if (c.model != "copy_concat" && c.model != "quantized_pool_float") continue;
    std::shared_ptr<Network> net = load(c.model);
    ASSERT_TRUE(net);
    const std::map<std::string, Tensor> rounded = roundTo(c.inputs, cuda::Precision::kFloat16);
    std::vector<NamedTensor> expected = runReference(*net, rounded);
    Case half = c;
    half.inputs = rounded;
    std::vector<NamedTensor> actual = runCuda(half, cuda::Precision::kFloat16);
    ASSERT_EQ(actual.size(), expected.size()) << c.model;
    for (size_t i = 0; i < expected.size(); ++i) {
      SCOPED_TRACE(c.model + " fp16 output " + expected[i].name);
      expectTensorNear(actual[i].tensor, expected[i].tensor, 2e-3, 2e-3);
    }
  }
}

TEST_F(CudaPluginTest, CudaBuildsGiveThePluginLayerItsOwnTactic) {
  std::shared_ptr<Network> net = load("quantized_pool_max");
  ASSERT_TRUE(net);
  BuilderConfig config;
  config.tf32 = false;
  OptimizationProfile profile;
  profile.inputs["X"] = {{1, 4, 8, 8}, {4, 4, 8, 8}, {8, 4, 8, 8}};
  config.profiles = {profile};
  auto backend = cuda::createCudaBuildBackend(0, config);
  ASSERT_TRUE(backend.isOk()) << backend.status().toString();
  auto plan = buildPlan(net, config, **backend);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  const LayerRecord& layer = plan->record.layers.at(1);
  EXPECT_EQ(layer.layerType, "Plugin");
  EXPECT_EQ(layer.tactic, "cuda.plugin");
  EXPECT_GT(layer.milliseconds, 0);
  std::cout << "cuda build: " << layer.name << " " << layer.tactic << " " << layer.milliseconds
            << " ms; " << (layer.candidates.empty() ? "" : layer.candidates[0].detail) << "\n";
}

}  // namespace
}  // namespace kiln::test
