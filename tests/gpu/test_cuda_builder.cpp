// The builder on the CUDA backend: every layer timed on the device at each
// enabled precision, one precision chosen for the engine, a plan that survives
// save/load and runs on the CUDA runtime like the CPU reference.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "compare/accuracy_compare.h"
#include "compare/model_runner.h"
#include "gpu/gpu_op_test.h"
#include "kiln/builder.h"
#include "kiln/cuda_plan_options.h"
#include "kiln/cuda_build_backend.h"
#include "kiln/cuda_runtime.h"
#include "kiln/onnx_import.h"
#include "kiln/reference_backend.h"
#include "kiln/typed_onnx_export.h"
#include "plan_profiler.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

// The device runs a copy of the tree elsewhere: KILN_TEST_DATA_DIR overrides the path.
std::string testDataDir() {
  const char* dir = std::getenv("KILN_TEST_DATA_DIR");
  return dir ? dir : KILN_TEST_DATA_DIR;
}

std::shared_ptr<const Network> tinyBert() {
  auto network = importOnnxFile(testDataDir() + "/builder/tiny_bert.onnx");
  EXPECT_TRUE(network.isOk()) << network.status().toString();
  return std::make_shared<const Network>(std::move(network.value()));
}

BuilderConfig bertConfig(bool fp16) {
  BuilderConfig config;
  config.fp16 = fp16;
  config.tf32 = false;
  config.optimizationLevel = 2;
  OptimizationProfile profile;
  profile.inputs["input_ids"] = {{1, 8}, {4, 32}, {8, 64}};
  config.profiles = {profile};
  return config;
}

Result<Plan> buildOnCuda(const BuilderConfig& config) {
  KILN_ASSIGN_OR_RETURN(auto backend, cuda::createCudaBuildBackend(0, config));
  return buildPlan(tinyBert(), config, *backend);
}

// Runs a CUDA plan at `shape` the way `kiln run PLAN` does and returns the output.
Tensor runPlanOnCuda(const Plan& plan, const Tensor& ids) {
  cuda::EngineOptions options;
  options.allowTf32 = plan.record.config.tf32;
  for (const LayerImplementation& l : plan.layers)
    if (l.precision == DataType::kFloat16) options.precision = cuda::Precision::kFloat16;
  auto engine = cuda::Engine::create(plan.network, options);
  EXPECT_TRUE(engine.isOk()) << engine.status().toString();
  auto context = (*engine)->createContext();
  EXPECT_TRUE(context.isOk()) << context.status().toString();
  EXPECT_TRUE((*context)->setInputShape("input_ids", ids.shape()).isOk());
  EXPECT_TRUE((*context)->setInput("input_ids", ids).isOk());
  Status ran = (*context)->execute();
  EXPECT_TRUE(ran.isOk()) << ran.toString();
  auto out = (*context)->getOutput("hidden");
  EXPECT_TRUE(out.isOk()) << out.status().toString();
  return out.isOk() ? out.value() : Tensor();
}

Tensor cpuReference(const Tensor& ids) {
  auto network = tinyBert();
  ReferenceBackend backend(*network);
  std::vector<NamedTensor> outputs;
  EXPECT_TRUE(backend.run({{"input_ids", ids}}, &outputs).isOk());
  return outputs[0].tensor;
}

TEST(CudaBuilder, Fp32PlanTimesEveryLayerAndMatchesCpu) {
  KILN_REQUIRE_GPU();
  auto plan = buildOnCuda(bertConfig(false));
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_EQ(plan->identity.backend, "cuda");
  for (const LayerRecord& layer : plan->record.layers) {
    ASSERT_FALSE(layer.candidates.empty()) << layer.name;
    EXPECT_EQ(layer.precision, DataType::kFloat32) << layer.name;
    EXPECT_GE(layer.milliseconds, 0) << layer.name;
    if (layer.opType == "MatMul") {
      EXPECT_EQ(layer.tactic, "cuda.cublaslt");
      EXPECT_GT(layer.milliseconds, 0);
      EXPECT_NE(layer.candidates[0].detail.find("gpu"), std::string::npos)
          << layer.candidates[0].detail;
    }
  }
  auto bytes = serializePlan(*plan);
  ASSERT_TRUE(bytes.isOk());
  auto loaded = deserializePlan(*bytes, "bert.kiln");
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  EXPECT_TRUE(checkPlanCompatible(loaded->identity, cuda::cudaPlanIdentity(cuda::probeCudaDevice()))
                  .isOk());
  const Tensor ids = randomInputTensor(DataType::kInt64, {3, 40}, 5);
  expectTensorNear(runPlanOnCuda(loaded.value(), ids), cpuReference(ids), 1e-4, 1e-3);
}

// `kiln compare PLAN --per-tensor` on a CUDA plan: the outputs of its layers come back
// from the device (a second engine of the same layers with them as graph outputs) and
// each matches the plan's network on the CPU reference; a run that asks for none returns
// the graph output alone.
TEST(CudaBuilder, PerTensorCompareReadsEveryLayerOutputBackFromTheDevice) {
  KILN_REQUIRE_GPU();
  auto built = buildOnCuda(bertConfig(false));
  ASSERT_TRUE(built.isOk()) << built.status().toString();
  auto plan = std::make_shared<const Plan>(std::move(built.value()));
  auto device = compare::planRunner(plan, "bert.kiln");
  ASSERT_TRUE(device.isOk()) << device.status().toString();
  auto reference = compare::referenceRunner(plan->network, "its network");
  const std::vector<compare::ExposedTensor> exposed = (*device)->intermediates();
  ASSERT_GE(exposed.size(), 5u);
  for (const compare::ExposedTensor& t : exposed) EXPECT_FALSE(t.layer.empty()) << t.name;

  auto inputs = compare::randomInputSet(*plan->network, {{"input_ids", Shape{3, 40}}}, 7);
  ASSERT_TRUE(inputs.isOk()) << inputs.status().toString();
  std::vector<NamedTensor> plain;
  ASSERT_TRUE((*device)->run(inputs.value(), {}, &plain).isOk());
  ASSERT_EQ(plain.size(), plan->network->graph.outputs.size());

  compare::CompareOptions options;
  options.perTensor = true;
  options.tolerance = {1e-4, 1e-3};
  auto report = compare::compareAccuracy(**device, *reference, {inputs.value()}, options);
  ASSERT_TRUE(report.isOk()) << report.status().toString();
  EXPECT_TRUE(report->perTensorNote.empty()) << report->perTensorNote;
  EXPECT_EQ(report->intermediates.size(), exposed.size());
  EXPECT_EQ(report->firstDivergent, -1);
  for (const compare::ComparedTensor& t : report->intermediates) {
    EXPECT_TRUE(t.stats.comparable) << t.stats.name << ": " << t.stats.problem;
    EXPECT_GT(t.stats.elements, 0) << t.stats.name;
    EXPECT_EQ(t.stats.outsideTolerance, 0) << t.stats.name << " max abs " << t.stats.maxAbs;
    EXPECT_EQ(t.stats.nanActual + t.stats.infActual, 0) << t.stats.name;
  }
  EXPECT_TRUE(report->pass);

  // The plain engine was released for the exposing one; a plain run builds it again and
  // gives the first plain run's outputs (same plan, same tactics).
  std::vector<NamedTensor> again;
  ASSERT_TRUE((*device)->run(inputs.value(), {}, &again).isOk());
  ASSERT_EQ(again.size(), plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(again[i].name, plain[i].name);
    expectTensorNear(again[i].tensor, plain[i].tensor, 1e-5, 1e-5);
  }
}

TEST(CudaBuilder, Fp16BuildChoosesOnePrecisionForTheEngine) {
  KILN_REQUIRE_GPU();
  auto plan = buildOnCuda(bertConfig(true));
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  DataType engine = DataType::kUndefined;
  for (const LayerRecord& layer : plan->record.layers) {
    if (layer.precisionReason.rfind("engine-wide", 0) != 0) continue;
    if (engine == DataType::kUndefined) engine = layer.precision;
    EXPECT_EQ(layer.precision, engine) << layer.name;
    bool timedBoth = false;
    for (const TacticCandidate& c : layer.candidates)
      timedBoth = timedBoth || (c.precision == DataType::kFloat16 && c.milliseconds >= 0);
    EXPECT_TRUE(timedBoth) << layer.name;
  }
  ASSERT_NE(engine, DataType::kUndefined);
  const Tensor ids = randomInputTensor(DataType::kInt64, {2, 24}, 9);
  expectTensorNear(runPlanOnCuda(plan.value(), ids), cpuReference(ids), 5e-2, 5e-2);
}

TEST(CudaBuilder, ReplayAndLevelZeroKeepOneEnginePrecision) {
  KILN_REQUIRE_GPU();
  BuilderConfig config = bertConfig(true);
  auto first = buildOnCuda(config);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  const TacticReplay replay = TacticReplay::fromRecord(first->record);
  config.replay = &replay;
  auto second = buildOnCuda(config);
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  EXPECT_TRUE(second->record.unreplayedLayers.empty());
  for (size_t i = 0; i < first->layers.size(); ++i) {
    EXPECT_EQ(second->layers[i].tactic, first->layers[i].tactic) << i;
    EXPECT_EQ(second->layers[i].precision, first->layers[i].precision) << i;
  }
  config.replay = nullptr;
  config.optimizationLevel = 0;  // untimed rivals: the heuristic's lowest precision
  auto level0 = buildOnCuda(config);
  ASSERT_TRUE(level0.isOk()) << level0.status().toString();
  for (const LayerRecord& layer : level0->record.layers) {
    if (layer.precisionReason.rfind("engine-wide", 0) == 0)
      EXPECT_EQ(layer.precision, DataType::kFloat16) << layer.name;
  }
}

// TensorRT 11's route (issue 24): an FP16 CUDA plan's decisions written into the ONNX
// (export-onnx --from), that model built --strongly-typed on CUDA. The typed plan runs
// the model's own types (fp16 regions, Casts at their edges) and gives the CPU
// reference's outputs within fp16 error, with the source plan's per-layer precisions.
TEST(CudaBuilder, StronglyTypedBuildOfATypedExportRunsAsThePlanDid) {
  KILN_REQUIRE_GPU();
  // FP16 by rule, not by timing: under compute-sanitizer the engine-wide race can pick
  // FP32, and an all-FP32 plan exports nothing to test.
  BuilderConfig fp16 = bertConfig(true);
  fp16.layerPrecisions = {{"*", DataType::kFloat16}};
  fp16.precisionConstraints = ConstraintMode::kPrefer;
  auto source = buildOnCuda(fp16);
  ASSERT_TRUE(source.isOk()) << source.status().toString();
  const std::string modelPath = testDataDir() + "/builder/tiny_bert.onnx";
  auto decisions =
      nodePrecisionsFromPlan(source->record, *tinyBert(), "fp16.kiln", DataType::kUndefined);
  ASSERT_TRUE(decisions.isOk()) << decisions.status().toString();
  TypedExportOptions options;
  options.keepIoTypes = true;  // float32 output, compared with the reference as is
  auto typed = exportStronglyTypedOnnx(modelPath, decisions.value(), options);
  ASSERT_TRUE(typed.isOk()) << typed.status().toString();
  EXPECT_GT(typed->reducedNodes, 0);
  auto network = importOnnxBytes(typed->bytes, testDataDir() + "/builder", "tiny_bert.typed.onnx");
  ASSERT_TRUE(network.isOk()) << network.status().toString();
  BuilderConfig config = bertConfig(false);
  config.stronglyTyped = true;
  auto backend = cuda::createCudaBuildBackend(0, config);
  ASSERT_TRUE(backend.isOk()) << backend.status().toString();
  auto plan =
      buildPlan(std::make_shared<const Network>(std::move(network.value())), config, **backend);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  int fp16Layers = 0;
  for (const LayerRecord& layer : plan->record.layers)
    fp16Layers += layer.precision == DataType::kFloat16 ? 1 : 0;
  EXPECT_GT(fp16Layers, 0) << "a typed FP16 export recorded no FP16 layer";
  for (const LayerImplementation& l : plan->layers)  // the runtime runs the graph's types
    EXPECT_EQ(l.precision, DataType::kFloat32);
  const Tensor ids = randomInputTensor(DataType::kInt64, {2, 24}, 13);
  expectTensorNear(runPlanOnCuda(plan.value(), ids), cpuReference(ids), 5e-2, 5e-2);
}

// The PP-OCR classifier: Conv + BatchNormalization folded by the builder, MatMul +
// bias fused; the CUDA plan must still give the CPU reference's outputs.
TEST(CudaBuilder, FoldedConvolutionsMatchTheCpuReference) {
  KILN_REQUIRE_GPU();
  const char* dir = std::getenv("KILN_MODELS_DIR");
  auto network =
      importOnnxFile(std::string(dir ? dir : KILN_MODELS_DIR) + "/ppocr_mobile_v2_cls/model.onnx");
  ASSERT_TRUE(network.isOk()) << network.status().toString();
  auto shared = std::make_shared<const Network>(std::move(network.value()));
  BuilderConfig config;
  config.tf32 = false;
  config.optimizationLevel = 1;
  OptimizationProfile profile;
  profile.inputs["x"] = {{1, 3, 48, 192}, {4, 3, 48, 192}, {8, 3, 48, 192}};
  config.profiles = {profile};
  auto backend = cuda::createCudaBuildBackend(0, config);
  ASSERT_TRUE(backend.isOk()) << backend.status().toString();
  auto plan = buildPlan(shared, config, **backend);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_GT(plan->record.passes.size(), 20u);
  const Tensor x = randomInputTensor(DataType::kFloat32, {5, 3, 48, 192}, 3);
  cuda::EngineOptions options;
  options.allowTf32 = false;
  auto engine = cuda::Engine::create(plan->network, options);
  ASSERT_TRUE(engine.isOk()) << engine.status().toString();
  auto context = (*engine)->createContext();
  ASSERT_TRUE(context.isOk());
  ASSERT_TRUE((*context)->setInputShape("x", x.shape()).isOk());
  ASSERT_TRUE((*context)->setInput("x", x).isOk());
  ASSERT_TRUE((*context)->execute().isOk());
  const std::string output = plan->record.outputNames[0];
  auto gpu = (*context)->getOutput(output);
  ASSERT_TRUE(gpu.isOk()) << gpu.status().toString();
  std::vector<NamedTensor> cpu;
  ASSERT_TRUE(ReferenceBackend(*shared).run({{"x", x}}, &cpu).isOk());
  expectTensorNear(gpu.value(), cpu[0].tensor, 1e-4, 1e-3);
}

TEST(CudaBuilder, ConflictingObeyedPrecisionsAreRefused) {
  KILN_REQUIRE_GPU();
  BuilderConfig config = bertConfig(true);
  config.precisionConstraints = ConstraintMode::kObey;
  config.layerPrecisions = parseLayerPrecisionSpec("*:fp16,scores:fp32").value();
  auto plan = buildOnCuda(config);
  ASSERT_FALSE(plan.isOk());
  EXPECT_NE(plan.status().message().find("one precision per engine"), std::string::npos)
      << plan.status().message();
}

// Device memory held back from the builder: every block cudaMalloc gives until less than
// `leave` bytes are free (a few large blocks, then smaller ones); freed by the destructor.
class DeviceMemoryHog {
 public:
  explicit DeviceMemoryHog(size_t leave) {
    for (size_t block = size_t{1} << 34; block >= (size_t{1} << 20);) {
      size_t free = 0, total = 0;
      if (cudaMemGetInfo(&free, &total) != cudaSuccess || free <= leave) break;
      void* p = nullptr;
      if (block <= free - leave && cudaMalloc(&p, block) == cudaSuccess) {
        m_blocks.push_back(p);
      } else {
        cudaGetLastError();  // the failed cudaMalloc's error is not sticky; clear it
        block /= 2;
      }
    }
  }
  ~DeviceMemoryHog() {
    for (void* p : m_blocks) cudaFree(p);
  }

 private:
  std::vector<void*> m_blocks;
};

// The GPU out of memory while the builder times tactics: the build fails with a clean
// status that says so (no abort, no exception), frees what it took, and the same process
// then builds and runs the same model once the memory is back.
TEST(CudaBuilder, OutOfMemoryDuringBuildFailsCleanlyAndTheProcessBuildsAgain) {
  KILN_REQUIRE_GPU();
  size_t freeBefore = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&freeBefore, &total), cudaSuccess);
  {
    DeviceMemoryHog hog(size_t{2} << 20);  // 2 MiB left
    auto starved = buildOnCuda(bertConfig(true));
    ASSERT_FALSE(starved.isOk()) << "the build succeeded in 2 MiB of device memory";
    const std::string& message = starved.status().message();
    EXPECT_TRUE(starved.status().code() == StatusCode::kOutOfMemory ||
                message.find("out of memory") != std::string::npos)
        << starved.status().toString();
    EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
  }
  auto plan = buildOnCuda(bertConfig(true));
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  const Tensor ids = randomInputTensor(DataType::kInt64, {2, 24}, 9);
  expectTensorNear(runPlanOnCuda(plan.value(), ids), cpuReference(ids), 2e-2, 2e-2);
  size_t freeAfter = 0;
  ASSERT_EQ(cudaMemGetInfo(&freeAfter, &total), cudaSuccess);
  // cuBLAS/cuDNN handles and plan caches the second build made stay for the process.
  EXPECT_GE(freeAfter + (size_t{512} << 20), freeBefore) << "device memory leaked";
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// A small CNN (channels 16 -> 32): a 3x3 convolution with bias and ReLU, a 1x1 one whose
// output adds the first's (a residual), a ReLU, a depthwise 3x3: FusedConv layers of
// every epilogue kind in an FP16 build.
std::shared_ptr<const Network> smallCnn() {
  auto net = std::make_shared<Network>();
  net->irVersion = 8;
  net->opsets[""] = 17;
  Graph& g = net->graph;
  ValueInfo x{"x", DataType::kFloat32, true, {}};
  for (int64_t d : {2, 16, 24, 24}) x.shape.push_back(DimExpr(d));
  g.inputs.push_back(x);
  g.initializers["w1"] = randomFloats({32, 16, 3, 3}, 71, -0.3, 0.3);
  g.initializers["b1"] = randomFloats({32}, 72);
  g.initializers["w2"] = randomFloats({32, 32, 1, 1}, 73, -0.3, 0.3);
  g.initializers["b2"] = randomFloats({32}, 74);
  g.initializers["w3"] = randomFloats({32, 1, 3, 3}, 75, -0.3, 0.3);
  auto node = [&](const std::string& name, const std::string& op, std::vector<std::string> in,
                  const std::string& out) -> Node& {
    Node n;
    n.name = name;
    n.opType = op;
    n.opset = 17;
    n.inputs = std::move(in);
    n.outputs = {out};
    g.nodes.push_back(n);
    return g.nodes.back();
  };
  auto ints = [](std::vector<int64_t> v) {
    Attribute a;
    a.kind = Attribute::Kind::kInts;
    a.ints = std::move(v);
    return a;
  };
  node("conv1", "Conv", {"x", "w1", "b1"}, "c1").attributes["pads"] = ints({1, 1, 1, 1});
  node("relu1", "Relu", {"c1"}, "r1");
  node("conv2", "Conv", {"r1", "w2", "b2"}, "c2");
  node("add", "Add", {"c2", "r1"}, "s");
  node("relu2", "Relu", {"s"}, "r2");
  Node& dw = node("depthwise", "Conv", {"r2", "w3"}, "y");
  dw.attributes["pads"] = ints({1, 1, 1, 1});
  dw.attributes["group"].kind = Attribute::Kind::kInt;
  dw.attributes["group"].i = 32;
  g.outputs.push_back({"y", DataType::kFloat32, false, {}});
  return net;
}

// Every recorded choice of `plan` is the one the profiler's engine (made from the plan, as
// `kiln run PLAN`'s is) says it ran, and every layer runs where the build placed it.
// `raced`: the op type whose layers time candidates inside their tactic; each of those
// must record a choice. Returns how many choices the plan records.
size_t expectEngineRunsRecordedChoices(const Plan& plan, const std::string& raced) {
  const std::map<std::string, std::string> choices = cuda::layerChoicesOfRecord(plan.record);
  for (const LayerRecord& layer : plan.record.layers) {
    for (const TacticCandidate& c : layer.candidates) {
      if (c.tactic != layer.tactic || !c.rejected.empty() || c.precision != layer.precision ||
          layer.opType != raced || c.detail.find("ms") == std::string::npos)
        continue;
      EXPECT_FALSE(c.choice.empty()) << layer.name << " recorded no choice: " << c.detail;
    }
  }
  auto profile = inspector::profilePlan(plan, 2, 5, nullptr, {});
  EXPECT_TRUE(profile.isOk()) << profile.status().toString();
  if (!profile.isOk()) return choices.size();
  std::map<std::string, std::string> ran;
  for (size_t i = 1; i < profile->size(); ++i)
    ran[(*profile)[i]["name"]] = (*profile)[i].value("implementation", "");
  for (const LayerRecord& layer : plan.record.layers) {
    const TacticCandidate* winner = winningCandidate(layer);
    if (!winner || !ran.count(layer.name)) continue;  // folded or a view: no time
    const std::string& implementation = ran[layer.name];
    // Placement first in both: "gpu: ...", "host fallback: ...".
    EXPECT_EQ(implementation.substr(0, implementation.find(':')),
              winner->detail.substr(0, winner->detail.find(':')))
        << layer.name << ": built " << winner->detail << ", ran " << implementation;
    auto choice = choices.find(layer.name);
    if (choice != choices.end())
      EXPECT_NE(implementation.find("the plan's choice: " + choice->second), std::string::npos)
          << layer.name << ": built " << winner->detail << ", ran " << implementation;
  }
  return choices.size();
}

// The builder timed the choices the kernels of `opType` offered (issue 23: tactics as
// data): such a layer has one candidate per choice, each run held to its choice (the
// detail says "the plan's choice"), and the layer's choice is the fastest's. Returns how
// many layers had several.
size_t expectBuilderTimedTheChoices(const Plan& plan, const std::string& opType) {
  size_t layers = 0;
  for (const LayerRecord& layer : plan.record.layers) {
    if (layer.opType != opType) continue;
    std::vector<const TacticCandidate*> rows;
    for (const TacticCandidate& c : layer.candidates)
      if (c.tactic == layer.tactic && c.precision == layer.precision && !c.choice.empty())
        rows.push_back(&c);
    if (rows.size() < 2) continue;
    ++layers;
    const TacticCandidate* fastest = nullptr;
    for (const TacticCandidate* c : rows) {
      if (!c->rejected.empty() || c->milliseconds < 0) continue;
      if (c->detail.find("(same signature)") == std::string::npos)
        EXPECT_NE(c->detail.find("the plan's choice: " + c->choice), std::string::npos)
            << layer.name << ": " << c->detail;
      if (!fastest || c->milliseconds < fastest->milliseconds) fastest = c;
    }
    if (!fastest) {
      ADD_FAILURE() << layer.name << ": no choice ran";
      continue;
    }
    EXPECT_EQ(layer.choice, fastest->choice) << layer.name;
    EXPECT_EQ(winningCandidate(layer), fastest) << layer.name;
    if (layers == 1) {
      std::cout << "  " << layer.name << ": " << rows.size() << " choices timed by the builder:";
      for (const TacticCandidate* c : rows)
        std::cout << " {" << c->choice << " " << c->milliseconds << " ms}";
      std::cout << "\n";
    }
  }
  return layers;
}

// Tactics as data (issue 23): a layer's choice inside its tactic (FusedMatMul's cuBLASLt,
// tanh-form GELU epilogue or cuDNN graph) is recorded with the winning candidate, and the
// plan's runtime (the profiler's engine, as `kiln run PLAN`'s) takes it back instead of
// timing again: every layer runs where the build placed it, and every recorded choice is
// the one the profiled engine says it ran.
TEST(CudaBuilder, ProfiledEngineRunsTheChoicesItsBuildRecorded) {
  KILN_REQUIRE_GPU();
  auto plan = buildOnCuda(bertConfig(true));
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  std::cout << "  " << expectEngineRunsRecordedChoices(plan.value(), "FusedMatMul")
            << " recorded choices\n";
  std::cout << "  " << expectBuilderTimedTheChoices(plan.value(), "FusedMatMul")
            << " FusedMatMul layers with choices timed by the builder\n";
}

// A GEMM large enough for cuBLASLt's algorithms to be raced (1 GFLOP): the builder times
// each algorithm the layer offered, keeps the fastest, and the plan's engine runs it.
TEST(CudaBuilder, TheBuilderTimesEachCublasLtAlgorithmItself) {
  KILN_REQUIRE_GPU();
  auto net = std::make_shared<Network>();
  net->irVersion = 8;
  net->opsets[""] = 17;
  Graph& g = net->graph;
  ValueInfo a{"a", DataType::kFloat32, true, {DimExpr(512), DimExpr(1024)}};
  g.inputs.push_back(a);
  g.initializers["w"] = randomFloats({1024, 1024}, 81, -0.05, 0.05);
  Node matmul;
  matmul.name = "gemm";
  matmul.opType = "MatMul";
  matmul.opset = 17;
  matmul.inputs = {"a", "w"};
  matmul.outputs = {"y"};
  g.nodes.push_back(matmul);
  g.outputs.push_back({"y", DataType::kFloat32, false, {}});
  BuilderConfig config;
  config.fp16 = true;
  config.optimizationLevel = 2;
  auto backend = cuda::createCudaBuildBackend(0, config);
  ASSERT_TRUE(backend.isOk()) << backend.status().toString();
  auto plan = buildPlan(net, config, *backend.value());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  ASSERT_EQ(plan->record.layers.size(), 1u);
  const LayerRecord& layer = plan->record.layers[0];  // MatMul, or FusedMatMul after the passes
  EXPECT_EQ(expectBuilderTimedTheChoices(plan.value(), layer.opType), 1u);
  EXPECT_TRUE(layer.choice.rfind("algorithm:", 0) == 0 || layer.choice.rfind("cublaslt#", 0) == 0)
      << layer.choice;
  expectEngineRunsRecordedChoices(plan.value(), layer.opType);
}

// The same for convolutions: FusedConv's implementation (cuDNN's fused graph or conv +
// Kiln's epilogue with the engine configuration, Kiln's depthwise kernel, channel
// padding) is the layer's recorded choice, and the plan's engine builds it again without
// timing; its output matches the CPU reference.
TEST(CudaBuilder, ProfiledConvEngineRunsTheChoicesItsBuildRecorded) {
  KILN_REQUIRE_GPU();
  BuilderConfig config;
  config.fp16 = true;
  config.tf32 = false;
  config.optimizationLevel = 2;
  auto backend = cuda::createCudaBuildBackend(0, config);
  ASSERT_TRUE(backend.isOk()) << backend.status().toString();
  auto plan = buildPlan(smallCnn(), config, *backend.value());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  size_t convChoices = 0;
  for (const auto& [name, choice] : cuda::layerChoicesOfRecord(plan->record)) {
    std::cout << "  " << name << ": " << choice << "\n";
    convChoices += choice.find("engine=") != std::string::npos ||
                   choice.find("kiln_depthwise") != std::string::npos;
  }
  EXPECT_GE(convChoices, 3u) << "every convolution records its choice";
  expectEngineRunsRecordedChoices(plan.value(), "FusedConv");
  EXPECT_GE(expectBuilderTimedTheChoices(plan.value(), "FusedConv"), 1u);
  // The plan's engine computes what the CPU reference does.
  auto engine = cuda::createEngineForPlan(plan.value(), 0);
  ASSERT_TRUE(engine.isOk()) << engine.status().toString();
  auto context = (*engine)->createContext();
  ASSERT_TRUE(context.isOk()) << context.status().toString();
  const Tensor x = randomFloats({2, 16, 24, 24}, 76);
  ASSERT_TRUE((*context)->setInputShape("x", x.shape()).isOk());
  ASSERT_TRUE((*context)->setInput("x", x).isOk());
  Status ran = (*context)->execute();
  ASSERT_TRUE(ran.isOk()) << ran.toString();
  auto out = (*context)->getOutput("y");
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  const std::shared_ptr<const Network> cnn = smallCnn();  // the backend keeps a reference
  ReferenceBackend reference(*cnn);
  std::vector<NamedTensor> expected;
  ASSERT_TRUE(reference.run({{"x", x}}, &expected).isOk());
  expectTensorNear(out.value(), expected[0].tensor, 3e-2, 3e-2);
}

}  // namespace
}  // namespace kiln::test
