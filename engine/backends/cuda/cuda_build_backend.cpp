// The CUDA build backend: times one layer as a one-node engine on the device,
// through the public runtime API only (so it also builds without the toolkit,
// where createCudaBuildBackend() says the device is unavailable).
#include "kiln/cuda_build_backend.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

#include "backends/cuda/layer_choice_hold.h"
#include "backends/cuda/gpu_kernel.h"
#include "ir/channels_last.h"
#include "ir/fp8_layers.h"
#include "ir/quantized_layers.h"
#include "kiln/cuda_generated_kernels.h"
#include "kiln/cuda_runtime.h"
#include "kiln/plugin_registry.h"

namespace kiln::cuda {
namespace {

// Long enough for the host to queue any one layer's launches ahead of the GPU.
constexpr double kTimingHeadStartMs = 0.5;

struct CudaTactic {
  const char* name;
  uint32_t source;
};

CudaTactic tacticFor(const Node& node) {
  if (isPluginNode(node)) return {"cuda.plugin", kTacticKiln};
  // Channels-last INT8 convolutions run cuDNN's fused graph, cuBLASLt's GEMM (1x1) or
  // Kiln's MMA kernel (1x1), whichever the layer times fastest; the others im2col and
  // cuBLASLt.
  if (isQuantizedLayer(node) && isChannelsLast(node)) return {"cuda.int8.nhwc", kTacticCudnn};
  if (isQuantizedLayer(node)) return {"cuda.int8.cublaslt", kTacticCublasLt};
  if (isFp8Layer(node)) return {"cuda.fp8.cublaslt", kTacticCublasLt};
  if (node.opType == "Conv" || node.opType == "ConvTranspose" || node.opType == "FusedConv")
    return {"cuda.cudnn", kTacticCudnn};
  if (node.opType == "MatMul" || node.opType == "Gemm" || node.opType == "FusedMatMul")
    return {"cuda.cublaslt", kTacticCublasLt};
  return {"cuda.kiln", kTacticKiln};
}

Result<Precision> enginePrecision(DataType type) {
  switch (type) {
    // An INT8 (FP8) layer computes in int8 (E4M3) whatever the engine's float
    // storage; it is timed in a float32 engine.
    case DataType::kInt8:
    case DataType::kFp8E4M3:
    case DataType::kFloat32:
      return Precision::kFloat32;
    case DataType::kFloat16:
      return Precision::kFloat16;
    case DataType::kBFloat16:
      return Precision::kBFloat16;
    default:
      return unsupported(std::string("the CUDA runtime has no ") + dataTypeName(type) + " engines");
  }
}

// A network of just `node`: its variable inputs become graph inputs, its
// constant inputs and outer-scope values initializers.
std::shared_ptr<Network> singleNodeNetwork(const Node& node, const LayerInputs& inputs) {
  auto net = std::make_shared<Network>();
  net->irVersion = 8;
  net->opsets[node.domain] = node.opset;
  if (!net->opsets.count("")) net->opsets[""] = 21;
  Graph& g = net->graph;
  g.name = node.displayName();
  for (size_t i = 0; i < node.inputs.size() && i < inputs.inputs.size(); ++i) {
    const std::string& name = node.inputs[i];
    const Tensor* t = inputs.inputs[i];
    if (name.empty() || !t || g.initializers.count(name)) continue;
    if (inputs.constant[i]) {
      g.initializers[name] = *t;
      continue;
    }
    bool seen = false;
    for (const ValueInfo& v : g.inputs) seen = seen || v.name == name;
    if (seen) continue;
    ValueInfo info{name, t->type(), true, {}};
    for (int64_t d : t->shape()) info.shape.push_back(DimExpr(d));
    g.inputs.push_back(info);
  }
  for (const auto& [name, t] : inputs.outerValues) g.initializers[name] = t;
  for (const std::string& out : node.outputs)
    if (!out.empty()) g.outputs.push_back({out, DataType::kUndefined, false, {}});
  g.nodes.push_back(node);
  return net;
}

class CudaBuildBackend final : public BuildBackend {
 public:
  CudaBuildBackend(DeviceInfo device, const BuilderConfig& config)
      : m_device(std::move(device)), m_tf32(config.tf32), m_workspace(config.workspaceLimitBytes) {}

  PlanIdentity identity() const override { return cudaPlanIdentity(m_device); }
  bool uniformPrecision() const override { return true; }
  // cuDNN's tensor-core convolutions (fp16, bf16, TF32) and its fused engines are NHWC:
  // measured on an H100, ResNet-50 b256 fp16 18.2 -> 7.6 ms, TF32 26.7 -> 13.5 ms.
  // KILN_CHANNELS_LAST=1 / =0 overrides the choice (an experiment knob, docs/benchmarks.md).
  bool prefersChannelsLast(bool tensorCoreMath) const override {
    if (const char* force = std::getenv("KILN_CHANNELS_LAST")) return std::string(force) == "1";
    return tensorCoreMath;
  }

  // ResNet-50 b256 on an H200 (2026-11-27): the 3-channel stem in INT8 (C padded to 4,
  // cuDNN's best of 16 engine configurations) took the whole network from 5.5 ms to
  // 16.0 ms; in FP16 the stem runs 0.47 ms.
  int minInt8ConvInputChannels() const override { return 8; }

  std::vector<TacticDescriptor> tactics(const Node& node) const override {
    const CudaTactic t = tacticFor(node);
    if (isQuantizedLayer(node)) return {{t.name, t.source, {DataType::kInt8}}};
    if (isFp8Layer(node)) return {{t.name, t.source, {DataType::kFp8E4M3}}};
    return {{t.name, t.source, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}}};
  }

  std::string lastTimingDetail() const override { return m_detail; }
  std::string lastTimingChoice() const override { return m_choice; }
  std::vector<std::string> lastTimingChoices() const override { return m_choices; }

  std::string fusedNodeSupport(const Node& fused, const std::vector<DataType>& inputTypes,
                               const std::vector<Shape>& inputShapes) const override {
    return builtinGpuKernelSupport(fused, inputTypes, inputShapes);
  }

  // The plan's NVRTC cubins: each layer's generated kernels at the opt shapes in the
  // engine's one float storage type, which the runtime takes from a plan's 16-bit
  // layers (as `kiln run` does). Kernels the timing engines compiled come from the
  // build's CompiledCode; the rest (a warm timing cache times nothing) compile here.
  // A cubin that layers share is stored once, naming them all.
  std::vector<GeneratedKernelBinary> generatedKernels(const std::vector<BuiltLayer>& layers,
                                                      std::vector<std::string>* warnings) override {
    DataType floatType = DataType::kFloat32;
    for (const BuiltLayer& layer : layers)
      if (layer.precision == DataType::kFloat16 || layer.precision == DataType::kBFloat16)
        floatType = layer.precision;
    std::vector<GeneratedKernelBinary> out;
    std::map<std::string, size_t> byKey;
    for (const BuiltLayer& layer : layers) {
      if (!layer.shapesKnown) continue;  // the runtime compiles it at the shape it meets
      auto kernels = generatedKernelsForLayer(*m_code, *layer.node, layer.inputTypes,
                                              layer.inputShapes, floatType, m_device.ordinal);
      if (!kernels.isOk()) {
        warnings->push_back("generated kernel not stored in the plan (compiled at run instead): " +
                            kernels.status().message());
        continue;
      }
      for (GeneratedKernelBinary& kernel : kernels.value()) {
        auto [at, added] = byKey.emplace(kernel.key, out.size());
        if (added)
          out.push_back(std::move(kernel));
        else
          out[at->second].layers.push_back(layer.node->displayName());
      }
    }
    // The cuDNN execution plans the layers chose (cudnn_plan_cache.h), so that a
    // runtime neither times their candidates again nor compiles the engines that
    // compile at run time.
    std::vector<std::string> names;
    for (const BuiltLayer& layer : layers) names.push_back(layer.node->displayName());
    for (GeneratedKernelBinary& entry : m_code->cudnnRecordsForLayers(names))
      out.push_back(std::move(entry));
    return out;
  }

  Result<double> timeTactic(const Node& node, const std::string& tactic, DataType precision,
                            const LayerInputs& inputs, int iterations) override {
    return timeLayer(node, tactic, precision, inputs, iterations, "");
  }

  // The layer held to `choice` (EngineOptions::layerChoices, as an engine made from a plan
  // gets it): a candidate only when the kernel took it without choosing again.
  Result<double> timeChoice(const Node& node, const std::string& tactic, DataType precision,
                            const LayerInputs& inputs, int iterations,
                            const std::string& choice) override {
    KILN_ASSIGN_OR_RETURN(double ms,
                          timeLayer(node, tactic, precision, inputs, iterations, choice));
    if (m_choice != choice || m_detail.find("does not apply here") != std::string::npos)
      return unsupported("the layer did not take the choice: " + m_detail);
    return ms;
  }

 private:
  // One timing engine of `node` alone (with `choice` planned when not ""): its GPU median
  // over `iterations` profiled runs after a warm-up; what the layer said and chose (and
  // the choices its race offered) kept for lastTiming*(). The engine of a choice stays for
  // the layer's next choice (same node, precision and inputs): the layer alone is set up
  // again (ContextImpl::holdLayerChoice), without a new engine's weights and plans.
  Result<double> timeLayer(const Node& node, const std::string& tactic, DataType precision,
                           const LayerInputs& inputs, int iterations, const std::string& choice) {
    if (tactic != tacticFor(node).name)
      return unsupported("tactic '" + tactic + "' does not apply to " + node.describe());
    std::ostringstream key;
    key << node.displayName() << '|' << dataTypeName(precision) << '|' << &inputs;
    ExecutionContext* context = nullptr;
    std::shared_ptr<Engine> engine;
    std::unique_ptr<ExecutionContext> ownContext;
    if (!choice.empty() && m_choiceEngine.context && m_choiceEngine.key == key.str() &&
        holdLayerChoice(*m_choiceEngine.context, node.displayName(), choice)) {
      context = m_choiceEngine.context.get();
    } else {
      m_choiceEngine = {};  // the previous layer's engine is not needed any more
      EngineOptions options;
      options.device = m_device.ordinal;
      KILN_ASSIGN_OR_RETURN(options.precision, enginePrecision(precision));
      options.allowTf32 = m_tf32;
      options.workspaceLimitBytes = m_workspace;
      options.compiledCode = m_code;  // what one timing engine compiles, the next reuses
      if (!choice.empty()) options.layerChoices[node.displayName()] = choice;
      std::shared_ptr<Network> net = singleNodeNetwork(node, inputs);
      KILN_ASSIGN_OR_RETURN(engine, Engine::create(net, options));
      KILN_ASSIGN_OR_RETURN(ownContext, engine->createContext());
      for (const ValueInfo& in : net->graph.inputs) {
        const Tensor* t = nullptr;
        for (size_t i = 0; i < node.inputs.size(); ++i)
          if (node.inputs[i] == in.name) t = inputs.inputs[i];
        KILN_RETURN_IF_ERROR(ownContext->setInputShape(in.name, t->shape()));
        KILN_RETURN_IF_ERROR(ownContext->setInput(in.name, *t));
      }
      context = ownContext.get();
      if (!choice.empty()) m_choiceEngine = {key.str(), engine, std::move(ownContext)};
    }
    context->setProfiling(false);  // a reused context's warm-up is not a timed run
    context->takeLayerTimings();
    KILN_RETURN_IF_ERROR(context->execute());  // warm-up: plans, library algorithm timing
    // The layer's GPU time alone: without the head start a one-node engine's events
    // also hold the host's launch gaps, which at batch 1 are several times the work
    // and summed over the layers ranked fp32 above fp16 for BERT-base (H100: summed
    // 2.95 vs 3.50 ms, engines 1.24 vs 0.63 ms).
    context->setProfilingHeadStart(kTimingHeadStartMs);
    context->setProfiling(true);
    for (int i = 0; i < std::max(iterations, 1); ++i) KILN_RETURN_IF_ERROR(context->execute());
    std::vector<float> times;
    for (const LayerTiming& timing : context->takeLayerTimings())
      times.insert(times.end(), timing.milliseconds.begin(), timing.milliseconds.end());
    m_detail.clear();
    m_choice.clear();
    m_choices.clear();
    for (const LayerInfo& layer : context->layers()) {
      m_detail = layerDescription(layer);
      m_choice = layer.choice;
      if (layer.offeredChoices.size() > 1) m_choices = layer.offeredChoices;
    }
    if (times.empty()) return 0.0;  // folded or a view: nothing runs
    std::sort(times.begin(), times.end());
    return static_cast<double>(times[times.size() / 2]);
  }

 private:
  DeviceInfo m_device;
  bool m_tf32;
  int64_t m_workspace;
  std::string m_detail;
  std::string m_choice;
  std::vector<std::string> m_choices;
  struct ChoiceEngine {  // timeLayer's engine of the last choice timed
    std::string key;     // node, precision and inputs
    std::shared_ptr<Engine> engine;
    std::unique_ptr<ExecutionContext> context;
  };
  ChoiceEngine m_choiceEngine;
  // The code this build's timing engines compile or load (shared by all of them), which
  // the plan stores (generatedKernels).
  std::shared_ptr<CompiledCode> m_code = std::make_shared<CompiledCode>();
};

}  // namespace

Result<std::unique_ptr<BuildBackend>> createCudaBuildBackend(int device,
                                                             const BuilderConfig& config) {
  DeviceInfo info = probeCudaDevice(device);
  if (!info.available) return unsupported("CUDA backend unavailable: " + info.reason);
  return std::unique_ptr<BuildBackend>(std::make_unique<CudaBuildBackend>(info, config));
}

}  // namespace kiln::cuda
