// The CUDA engine's execution context, shared by its two source files: context.cpp
// (the GpuKernelContext a kernel sees, memory planning, bindings, outputs) and
// context_run.cpp (running the steps: kernels, host fallbacks, profiling, CUDA graphs).
// Private to engine/backends/cuda; the contract is ExecutionContext (kiln/cuda_runtime.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/cuda/context_plan.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/engine_impl.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/libraries.h"

namespace kiln::cuda::context_detail {

// A value's device view while a run is in progress.
struct LiveValue {
  DeviceTensor tensor;
  Tensor host;           // host copy when one exists (constants, host-fallback outputs, strings)
  bool dynamic = false;  // stream-ordered allocation to free after its last use
};

class ContextImpl;

class StepContext final : public GpuKernelContext {
 public:
  StepContext(ContextImpl& context, size_t stepIndex, const Node& node,
              std::vector<const LiveValue*> inputs)
      : m_context(context), m_step(stepIndex), m_node(node), m_inputs(std::move(inputs)) {}

  const Node& node() const override { return m_node; }
  size_t inputCount() const override { return m_inputs.size(); }
  bool hasInput(size_t i) const override { return i < m_inputs.size() && m_inputs[i]; }
  const DeviceTensor& input(size_t i) const override { return m_inputs[i]->tensor; }
  Result<Tensor> hostInput(size_t i) override;
  Status hostRoundTrip(const std::string& why) override;
  size_t outputCount() const override { return m_node.outputs.size(); }
  bool wantsOutput(size_t i) const override {
    return i < m_node.outputs.size() && !m_node.outputs[i].empty();
  }
  Result<DeviceTensor> allocateOutput(size_t i, DataType type, const Shape& shape) override;
  Result<void*> workspace(size_t bytes) override;
  Result<void*> libraryWorkspace(size_t bytes) override;
  cudaStream_t stream() const override;
  Libraries& libraries() override;
  const EngineOptions& options() const override;
  DataType floatType() const override;
  std::shared_ptr<void>& layerState() override;
  void setImplementation(const std::string& text) override;
  void setChoice(const std::string& choice) override;
  void offerChoices(const std::vector<std::string>& choices) override;
  std::string plannedChoice() const override;
  DataType plannedOutputType(size_t i) const override;

  // Output i as a view of input 0 (alias kernels).
  bool aliasMode = false;

 private:
  ContextImpl& m_context;
  size_t m_step;
  const Node& m_node;
  std::vector<const LiveValue*> m_inputs;
};

class ContextImpl final : public ExecutionContext {
 public:
  explicit ContextImpl(std::shared_ptr<const EngineImpl> engine) : m_engine(std::move(engine)) {}
  ~ContextImpl() override {
    // Caller streams may already be gone: free synchronously, never on them.
    for (auto& [name, value] : m_live)
      if (value.dynamic && value.tensor.data) cudaFree(value.tensor.data);
    if (m_graphExec) cudaGraphExecDestroy(m_graphExec);
    for (auto& [start, end] : m_events) {
      cudaEventDestroy(start);
      cudaEventDestroy(end);
    }
    if (m_ownStream) cudaStreamDestroy(m_ownStream);
  }

  Status init() {
    KILN_CUDA_CHECK(cudaSetDevice(m_engine->options().device));
    KILN_CUDA_CHECK(cudaStreamCreateWithFlags(&m_ownStream, cudaStreamNonBlocking));
    const Graph& graph = m_engine->network().graph;
    for (const ValueInfo& v : graph.inputs) {
      if (graph.initializers.count(v.name)) continue;
      m_inputs.push_back(v.name);
      m_bindings[v.name].type = v.type;
      bool fixed = v.hasShape;
      Shape shape;
      for (const DimExpr& d : v.shape) {
        if (!d.isConst())
          fixed = false;
        else
          shape.push_back(d.constValue());
      }
      if (fixed) m_inputShapes[v.name] = shape;
    }
    for (const ValueInfo& v : graph.outputs) {
      m_outputs.push_back(v.name);
      auto it = m_engine->staticValues().find(v.name);
      m_bindings[v.name].type = it != m_engine->staticValues().end() ? it->second.type : v.type;
    }
    return Status::ok();
  }

  // ---- ExecutionContext
  Status setInputShape(const std::string& name, const Shape& shape) override {
    if (!std::count(m_inputs.begin(), m_inputs.end(), name)) {
      return notFound("'" + name + "' is not an input of the model");
    }
    for (int64_t d : shape) {
      if (d < 0)
        return invalidArgument("input '" + name + "': negative dim in " + shapeToString(shape));
    }
    auto it = m_inputShapes.find(name);
    if (it == m_inputShapes.end() || it->second != shape) {
      m_inputShapes[name] = shape;
      invalidate();
    }
    return Status::ok();
  }

  Result<Shape> outputShape(const std::string& name) override {
    if (!m_bindings.count(name) || std::count(m_inputs.begin(), m_inputs.end(), name)) {
      return notFound("'" + name + "' is not an output of the model");
    }
    KILN_RETURN_IF_ERROR(prepare());
    auto ran = m_runShapes.find(name);
    if (ran != m_runShapes.end()) return ran->second;
    const PlannedValue& value = m_plan.values.at(name);
    if (!value.shapeKnown) {
      return invalidArgument("output '" + name +
                             "': shape depends on the data; it is known after a run");
    }
    return value.shape;
  }

  Result<DataType> bindingType(const std::string& name) const override {
    auto it = m_bindings.find(name);
    if (it == m_bindings.end()) return notFound("'" + name + "' is not an input or output");
    return it->second.type;
  }

  Status setTensorAddress(const std::string& name, void* pointer) override {
    auto it = m_bindings.find(name);
    if (it == m_bindings.end()) return notFound("'" + name + "' is not an input or output");
    if (it->second.user != pointer) {
      it->second.user = pointer;
      dropGraph();
    }
    return Status::ok();
  }

  Status setInput(const std::string& name, const Tensor& host, void* stream) override {
    if (!std::count(m_inputs.begin(), m_inputs.end(), name)) {
      return notFound("'" + name + "' is not an input of the model");
    }
    Binding& binding = m_bindings[name];
    if (binding.type != DataType::kUndefined && host.type() != binding.type) {
      return invalidArgument("input '" + name + "': expected " + dataTypeName(binding.type) +
                             ", got " + dataTypeName(host.type()));
    }
    KILN_RETURN_IF_ERROR(setInputShape(name, host.shape()));
    if (host.type() == DataType::kString) {
      m_hostInputs[name] = host;  // strings stay on the host (host-fallback ops read them)
      return Status::ok();
    }
    if (host.byteSize() == 0) return Status::ok();
    if (!binding.user && binding.own.bytes() < static_cast<int64_t>(host.byteSize())) {
      KILN_RETURN_IF_ERROR(binding.own.allocate(host.byteSize(), "input '" + name + "'"));
    }
    void* device = binding.user ? binding.user : binding.own.data();
    if (!device) return internalError("input '" + name + "' has no device buffer");
    cudaStream_t s = stream ? static_cast<cudaStream_t>(stream) : m_ownStream;
    KILN_CUDA_CHECK(
        cudaMemcpyAsync(device, host.rawData(), host.byteSize(), cudaMemcpyHostToDevice, s));
    KILN_CUDA_CHECK(cudaStreamSynchronize(s));  // the host tensor may go away
    return Status::ok();
  }

  Result<void*> tensorAddress(const std::string& name) override {
    auto it = m_bindings.find(name);
    if (it == m_bindings.end()) return notFound("'" + name + "' is not an input or output");
    KILN_RETURN_IF_ERROR(prepare());
    return it->second.user ? it->second.user : it->second.own.data();
  }

  Result<Tensor> getOutput(const std::string& name, void* stream) override {
    if (!std::count(m_outputs.begin(), m_outputs.end(), name)) {
      return notFound("'" + name + "' is not an output of the model");
    }
    auto shape = m_runShapes.find(name);
    if (shape == m_runShapes.end()) {
      return invalidArgument("output '" + name + "' has not been computed yet: enqueue first");
    }
    Binding& binding = m_bindings[name];
    auto hostCopy = m_hostOutputs.find(name);
    if (hostCopy != m_hostOutputs.end()) return hostCopy->second.clone();
    cudaStream_t s = stream ? static_cast<cudaStream_t>(stream) : m_ownStream;
    KILN_CUDA_CHECK(cudaStreamSynchronize(s));
    Tensor out(binding.type, shape->second);
    void* device = binding.user ? binding.user : binding.own.data();
    if (out.byteSize() > 0) {
      KILN_CUDA_CHECK(cudaMemcpy(out.rawData(), device, out.byteSize(), cudaMemcpyDeviceToHost));
    }
    return out;
  }

  Status enqueue(void* stream) override;
  Status execute() override {
    KILN_RETURN_IF_ERROR(enqueue(m_ownStream));
    KILN_CUDA_CHECK(cudaStreamSynchronize(m_ownStream));
    return Status::ok();
  }

  Status setUseCudaGraph(bool enabled) override {
    m_useGraph = enabled;
    if (!enabled) dropGraph();
    return Status::ok();
  }

  void setProfilingHeadStart(double milliseconds) override {
    m_headStartMs = std::max(0.0, milliseconds);
  }
  void setProfiling(bool enabled) override {
    m_profiling = enabled;
    dropGraph();
  }

  std::vector<LayerTiming> takeLayerTimings() override {
    std::vector<LayerTiming> out;
    for (size_t s = 0; s < m_plan.steps.size(); ++s) {
      if (m_plan.steps[s].placement == LayerPlacement::kFolded) continue;
      LayerTiming timing;
      timing.name = m_engine->network().graph.nodes[m_plan.steps[s].nodeIndex].displayName();
      if (s < m_timings.size()) timing.milliseconds = std::move(m_timings[s]);
      out.push_back(std::move(timing));
    }
    m_timings.clear();
    return out;
  }

  std::vector<LayerInfo> layers() const override {
    std::vector<LayerInfo> out;
    for (const PlannedStep& step : m_plan.steps) {
      const Node& node = m_engine->network().graph.nodes[step.nodeIndex];
      LayerInfo info;
      info.name = node.displayName();
      info.opType = node.opType;
      info.placement = step.placement;
      info.implementation = step.implementation;
      info.choice = step.choice;
      info.offeredChoices = step.offers;
      info.note = step.note;
      info.workspaceBytes = step.workspaceBytes;
      out.push_back(std::move(info));
    }
    return out;
  }

  int64_t activationBytes() const override { return m_plan.arenaBytes; }
  int64_t activationBytesWithoutReuse() const override { return m_plan.unsharedBytes; }
  std::vector<std::string> inputNames() const override { return m_inputs; }
  std::vector<std::string> outputNames() const override { return m_outputs; }

  // ---- for StepContext
  // Records a host synchronization of step `step` in its note (once); an error while capturing.
  Status noteRoundTrip(size_t step, const std::string& reader, const std::string& note) {
    if (m_capturing) {
      return unsupported(reader + ": " + note +
                         ", which a CUDA graph cannot capture; run without --cuda-graph");
    }
    PlannedStep& planned = m_plan.steps[step];
    if (planned.note.find(note) == std::string::npos)
      planned.note += (planned.note.empty() ? "" : "; ") + note;
    planned.hostRoundTrip = true;
    return Status::ok();
  }
  Result<Tensor> hostValue(const std::string& name, size_t step, const std::string& reader);
  Result<DeviceTensor> allocate(const std::string& name, DataType type, const Shape& shape,
                                size_t step);
  Result<void*> workspace(size_t bytes, size_t step, bool library);
  // Where omitted optional outputs are written (shared; the data is never read).
  Result<void*> discardBuffer(size_t bytes) {
    if (static_cast<int64_t>(bytes) > m_discard.bytes()) {
      if (m_capturing) return unsupported("discard buffer grew during CUDA graph capture");
      KILN_CUDA_CHECK(cudaStreamSynchronize(m_stream));
      KILN_RETURN_IF_ERROR(m_discard.allocate(static_cast<int64_t>(bytes), "an omitted output"));
    }
    return m_discard.data();
  }
  cudaStream_t currentStream() const { return m_stream; }
  Libraries& libraries() { return m_libraries; }
  const EngineImpl& engine() const { return *m_engine; }
  PlannedStep& step(size_t i) { return m_plan.steps[i]; }
  // The storage type planned for value `name`, kUndefined for a value the plan does not hold.
  DataType plannedStorage(const std::string& name) const {
    auto it = m_plan.values.find(name);
    return it == m_plan.values.end() ? DataType::kUndefined : it->second.storage;
  }
  // For the builder's timing of one layer's choices in one engine (cuda_build_backend.cpp):
  // from the next run on, the layer named `layer` takes `choice` as its planned choice
  // (over EngineOptions::layerChoices) and sets itself up again (its state cleared), in
  // this context only. heldChoice: that choice, or nullptr.
  void holdLayerChoice(const std::string& layer, const std::string& choice) {
    m_heldChoices[layer] = choice;
    const Graph& graph = m_engine->network().graph;
    for (PlannedStep& s : m_plan.steps) {
      if (graph.nodes[s.nodeIndex].displayName() != layer) continue;
      s.state.reset();
      s.implementation.clear();
      s.choice.clear();
      s.offers.clear();
    }
    dropGraph();
  }
  const std::string* heldChoice(const std::string& layer) const {
    auto it = m_heldChoices.find(layer);
    return it == m_heldChoices.end() ? nullptr : &it->second;
  }
  LiveValue* live(const std::string& name) {
    auto it = m_live.find(name);
    return it == m_live.end() ? nullptr : &it->second;
  }

 private:
  struct Binding {
    DataType type = DataType::kUndefined;
    void* user = nullptr;
    DeviceBuffer own;
  };

  std::map<std::string, std::string> m_heldChoices;  // holdLayerChoice

  void invalidate() {
    m_prepared = false;
    m_runShapes.clear();
    dropGraph();
  }
  void dropGraph() {
    if (m_graphExec) cudaGraphExecDestroy(m_graphExec);
    m_graphExec = nullptr;
    m_graphStream = nullptr;
  }

  Status prepare();
  Status runSteps();
  Status runStep(size_t index);
  Status runHostFallback(size_t index, const Node& node);
  Status runPlannedView(size_t index, const Node& node);
  Status bindInputs();
  Status releaseDynamic();
  Status finishOutputs();
  Status releaseAfter(size_t step);
  Status recordProfile();

  std::shared_ptr<const EngineImpl> m_engine;
  std::vector<std::string> m_inputs, m_outputs;
  std::map<std::string, Shape> m_inputShapes;
  std::map<std::string, Binding> m_bindings;
  bool m_prepared = false;
  ContextPlan m_plan;
  DeviceBuffer m_arena;
  std::vector<DeviceBuffer> m_constantBuffers;
  std::map<std::string, LiveValue> m_constants;  // folded values, uploaded at prepare
  std::unordered_map<std::string, LiveValue> m_live;
  std::map<std::string, Shape> m_runShapes;
  std::map<std::string, Tensor> m_hostOutputs;  // outputs that only exist on the host
  std::map<std::string, Tensor> m_hostInputs;   // string inputs (never on the device)
  DeviceBuffer m_workspace;
  DeviceBuffer m_libraryWorkspace;
  DeviceBuffer m_discard;
  Libraries m_libraries;
  cudaStream_t m_ownStream = nullptr;
  cudaStream_t m_stream = nullptr;
  bool m_capturing = false;
  bool m_useGraph = false;
  cudaGraphExec_t m_graphExec = nullptr;
  cudaStream_t m_graphStream = nullptr;
  bool m_profiling = false;
  double m_headStartMs = 0;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> m_events;
  std::vector<std::vector<float>> m_timings;
};

}  // namespace kiln::cuda::context_detail
