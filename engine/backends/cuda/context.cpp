// ExecutionContext of the CUDA engine: plans memory once per set of input shapes,
// then runs the main graph's nodes in order on a stream. See cuda_runtime.h for the
// contract and context_plan.h for how values are placed.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "backends/cuda/context_plan.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common_host.h"
#include "backends/cuda/engine_impl.h"
#include "backends/cuda/libraries.h"
#include "kiln/reference_backend.h"

namespace kiln::cuda {
namespace {

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
  std::string plannedChoice() const override;

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

// ---- StepContext

Result<Tensor> StepContext::hostInput(size_t i) {
  if (!hasInput(i)) return error("input " + std::to_string(i) + " is missing");
  return m_context.hostValue(m_node.inputs[i], m_step, m_node.describe());
}
Status StepContext::hostRoundTrip(const std::string& why) {
  return m_context.noteRoundTrip(m_step, m_node.describe(), "host round trip: " + why);
}
Result<DeviceTensor> StepContext::allocateOutput(size_t i, DataType type, const Shape& shape) {
  if (!wantsOutput(i)) {
    // An omitted optional output: a discard buffer (not the workspace, which the
    // kernel may be using) so kernels can write unconditionally.
    auto scratch =
        m_context.discardBuffer(static_cast<size_t>(std::max<int64_t>(shapeNumel(shape), 1)) *
                                std::max<size_t>(dataTypeSize(type), 1));
    if (!scratch.isOk()) return scratch.status();
    return DeviceTensor{type, shape, scratch.value()};
  }
  for (int64_t d : shape) {
    if (d < 0) return error("output '" + m_node.outputs[i] + "' would have negative dim");
  }
  if (aliasMode && i == 0) {
    const DeviceTensor& in = input(0);
    if (shapeNumel(shape) != in.numel()) {
      return error("cannot view " + shapeToString(in.shape) + " as " + shapeToString(shape));
    }
    auto planned = m_context.allocate(m_node.outputs[0], type, shape, m_step);
    if (!planned.isOk()) return planned.status();
    return planned.value();
  }
  return m_context.allocate(m_node.outputs[i], type, shape, m_step);
}
Result<void*> StepContext::workspace(size_t bytes) {
  return m_context.workspace(bytes, m_step, false);
}
Result<void*> StepContext::libraryWorkspace(size_t bytes) {
  return m_context.workspace(bytes, m_step, true);
}
cudaStream_t StepContext::stream() const {
  return m_context.currentStream();
}
Libraries& StepContext::libraries() {
  return m_context.libraries();
}
const EngineOptions& StepContext::options() const {
  return m_context.engine().options();
}
DataType StepContext::floatType() const {
  return m_context.engine().floatType();
}
std::shared_ptr<void>& StepContext::layerState() {
  return m_context.step(m_step).state;
}
void StepContext::setImplementation(const std::string& text) {
  m_context.step(m_step).implementation = text;
}
void StepContext::setChoice(const std::string& choice) {
  m_context.step(m_step).choice = choice;
}
std::string StepContext::plannedChoice() const {
  const auto& choices = options().layerChoices;
  const auto found = choices.find(node().displayName());
  return found == choices.end() ? std::string() : found->second;
}

// ---- ContextImpl

Status ContextImpl::prepare() {
  if (m_prepared) return Status::ok();
  const Graph& graph = m_engine->network().graph;
  for (const std::string& name : m_inputs) {
    if (!m_inputShapes.count(name)) {
      const ValueInfo* info = nullptr;
      for (const ValueInfo& v : graph.inputs)
        if (v.name == name) info = &v;
      return invalidArgument(
          "input '" + name + "': shape not set (the model declares " +
          (info && info->hasShape ? symbolicShapeToString(info->shape) : std::string("no shape")) +
          "); give it with setInputShape or --shapes");
    }
  }
  auto planned = planContext(*m_engine, m_inputShapes);
  if (!planned.isOk()) return planned.status();
  m_plan = std::move(planned.value());
  m_constants.clear();
  m_constantBuffers.clear();
  m_hostOutputs.clear();
  KILN_RETURN_IF_ERROR(m_arena.allocate(m_plan.arenaBytes, "the activation arena"));
  // Folded values that the device reads: upload once per plan.
  for (const auto& [name, host] : m_plan.folded) {
    LiveValue value;
    value.host = host;
    if (host.type() == DataType::kString) {
      value.tensor = DeviceTensor{host.type(), host.shape(), nullptr};
    } else {
      Tensor stored = host.type() == m_engine->storageType(host.type())
                          ? host
                          : castTensor(host, m_engine->floatType());
      DeviceBuffer buffer;
      KILN_RETURN_IF_ERROR(
          buffer.allocate(std::max<int64_t>(stored.byteSize(), 1), "folded value '" + name + "'"));
      if (stored.byteSize()) {
        KILN_CUDA_CHECK(
            cudaMemcpy(buffer.data(), stored.rawData(), stored.byteSize(), cudaMemcpyHostToDevice));
      }
      value.tensor = DeviceTensor{stored.type(), stored.shape(), buffer.data()};
      m_constantBuffers.push_back(std::move(buffer));
    }
    m_constants[name] = std::move(value);
  }
  // Own buffers for inputs and for outputs whose shape is known.
  for (auto& [name, binding] : m_bindings) {
    const PlannedValue& value = m_plan.values.at(name);
    if (!value.shapeKnown || binding.type == DataType::kString) continue;
    int64_t bytes = shapeNumel(value.shape) * static_cast<int64_t>(dataTypeSize(binding.type));
    const bool isInput = std::count(m_inputs.begin(), m_inputs.end(), name) > 0;
    const bool oversized = !isInput && binding.own.bytes() > 2 * bytes + (1 << 20);
    if (binding.own.bytes() < bytes || oversized) {
      KILN_RETURN_IF_ERROR(
          binding.own.allocate(std::max<int64_t>(bytes, 1), "binding '" + name + "'"));
    }
  }
  m_timings.clear();
  m_prepared = true;
  return Status::ok();
}

Result<Tensor> ContextImpl::hostValue(const std::string& name, size_t step,
                                      const std::string& reader) {
  auto constant = m_constants.find(name);
  if (constant != m_constants.end()) return constant->second.host;
  auto weight = m_engine->weights().find(name);
  if (weight != m_engine->weights().end()) return weight->second.host;
  LiveValue* value = live(name);
  if (!value) return internalError(reader + ": value '" + name + "' has no data");
  if (value->host.defined()) return value->host;
  KILN_RETURN_IF_ERROR(
      noteRoundTrip(step, reader, "host round trip: reads '" + name + "' on the host"));
  Tensor host(value->tensor.type, value->tensor.shape);
  KILN_CUDA_CHECK(cudaStreamSynchronize(m_stream));
  if (host.byteSize()) {
    KILN_CUDA_CHECK(
        cudaMemcpy(host.rawData(), value->tensor.data, host.byteSize(), cudaMemcpyDeviceToHost));
  }
  return host;
}

Result<DeviceTensor> ContextImpl::allocate(const std::string& name, DataType type,
                                           const Shape& shape, size_t step) {
  const PlannedValue& value = m_plan.values.at(name);
  int64_t bytes = shapeNumel(shape) * static_cast<int64_t>(dataTypeSize(type));
  LiveValue& out = m_live[name];
  if (out.dynamic && out.tensor.data) KILN_CUDA_CHECK(cudaFreeAsync(out.tensor.data, m_stream));
  out.host = Tensor();
  out.dynamic = false;
  out.tensor = DeviceTensor{type, shape, nullptr};
  if (value.home == ValueHome::kOutputBinding && type == m_bindings[name].type) {
    Binding& binding = m_bindings[name];
    if (binding.user) {
      if (!value.shapeKnown || value.shape != shape) {
        return invalidArgument("output '" + name + "' has shape " + shapeToString(shape) +
                               " at run time, so the bound buffer's size is unknown; leave it "
                               "unbound and copy it out");
      }
      out.tensor.data = binding.user;
    } else {
      if (binding.own.bytes() < bytes) {
        if (m_capturing) return unsupported("output '" + name + "' grew during CUDA graph capture");
        KILN_CUDA_CHECK(cudaStreamSynchronize(m_stream));
        KILN_RETURN_IF_ERROR(binding.own.allocate(bytes, "output '" + name + "'"));
      }
      out.tensor.data = binding.own.data();
    }
    return out.tensor;
  }
  if (value.home == ValueHome::kAlias) {
    const Node& node = m_engine->network().graph.nodes[m_plan.steps[step].nodeIndex];
    const LiveValue* source = live(node.inputs[0]);
    if (!source) return internalError(node.describe() + ": view of a value that has no data");
    out.tensor.data = source->tensor.data;
    return out.tensor;
  }
  if (value.home == ValueHome::kArena && value.shapeKnown && value.shape == shape &&
      value.storage == type) {
    out.tensor.data = static_cast<char*>(m_arena.data()) + value.offset;
    return out.tensor;
  }
  // Shape known only now (data-dependent) or different from inference: stream-ordered.
  if (bytes > 0) {
    void* pointer = nullptr;
    cudaError_t error = cudaMallocAsync(&pointer, static_cast<size_t>(bytes), m_stream);
    if (error != cudaSuccess) {
      cudaGetLastError();
      return Status(StatusCode::kOutOfMemory, "GPU out of memory allocating " +
                                                  std::to_string(bytes >> 20) + " MiB for '" +
                                                  name + "'");
    }
    out.tensor.data = pointer;
    out.dynamic = true;
  }
  PlannedStep& planned = m_plan.steps[step];
  if (!planned.dynamicNoted) {
    planned.note += std::string(planned.note.empty() ? "" : "; ") +
                    "output shape known only at run time (stream-ordered allocation)";
    planned.dynamicNoted = true;
  }
  return out.tensor;
}

Result<void*> ContextImpl::workspace(size_t bytes, size_t step, bool library) {
  PlannedStep& planned = m_plan.steps[step];
  planned.workspaceBytes = std::max<int64_t>(planned.workspaceBytes, static_cast<int64_t>(bytes));
  DeviceBuffer& buffer = library ? m_libraryWorkspace : m_workspace;
  if (static_cast<int64_t>(bytes) > buffer.bytes()) {
    if (m_capturing) return unsupported("workspace grew during CUDA graph capture");
    if (static_cast<int64_t>(bytes) > m_engine->options().workspaceLimitBytes * 4) {
      return Status(StatusCode::kOutOfMemory,
                    "workspace of " + std::to_string(bytes >> 20) + " MiB exceeds the limit");
    }
    KILN_CUDA_CHECK(cudaStreamSynchronize(m_stream));
    KILN_RETURN_IF_ERROR(buffer.allocate(static_cast<int64_t>(bytes), "the workspace"));
  }
  return buffer.data();
}

Status ContextImpl::releaseDynamic() {
  // Stream-ordered allocations of an earlier run that stopped early.
  for (auto& [name, value] : m_live) {
    if (value.dynamic && value.tensor.data) {
      KILN_CUDA_CHECK(cudaFreeAsync(value.tensor.data, m_stream ? m_stream : m_ownStream));
      value.tensor.data = nullptr;
      value.dynamic = false;
    }
  }
  return Status::ok();
}

Status ContextImpl::bindInputs() {
  KILN_RETURN_IF_ERROR(releaseDynamic());
  m_live.clear();
  for (const auto& [name, weight] : m_engine->weights()) {
    m_live[name] = LiveValue{weight.tensor, weight.host, false};
  }
  for (const auto& [name, value] : m_constants) m_live[name] = value;
  for (const std::string& name : m_inputs) {
    Binding& binding = m_bindings[name];
    const PlannedValue& value = m_plan.values.at(name);
    void* source = binding.user ? binding.user : binding.own.data();
    const Shape& shape = m_inputShapes.at(name);
    auto hostInput = m_hostInputs.find(name);
    if (hostInput != m_hostInputs.end()) {
      m_live[name] =
          LiveValue{DeviceTensor{DataType::kString, shape, nullptr}, hostInput->second, false};
      continue;
    }
    if (value.storage == binding.type) {
      m_live[name] = LiveValue{DeviceTensor{binding.type, shape, source}, Tensor(), false};
      continue;
    }
    // A float32 input of a 16-bit engine: converted into its arena slot.
    void* slot = static_cast<char*>(m_arena.data()) + value.offset;
    KILN_RETURN_IF_ERROR(
        convertFloatBuffer(source, binding.type, slot, value.storage, shapeNumel(shape), m_stream));
    m_live[name] = LiveValue{DeviceTensor{value.storage, shape, slot}, Tensor(), false};
  }
  return Status::ok();
}

Status ContextImpl::finishOutputs() {
  for (const std::string& name : m_outputs) {
    LiveValue* value = live(name);
    if (!value) return internalError("output '" + name + "' was not produced");
    Binding& binding = m_bindings[name];
    m_runShapes[name] = value->tensor.shape;
    const DataType produced = value->tensor.type;
    auto convertible = [](DataType t) {
      return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
    };
    const bool floatPair = convertible(produced) && convertible(binding.type);
    if (binding.type != produced && !floatPair) {
      // Inference could not type this output (or typed it differently): the value decides,
      // with 16-bit storage shown as the model's float32.
      const PlannedValue& planned = m_plan.values.at(name);
      binding.type = produced == m_engine->floatType() && planned.modelType != produced &&
                             produced != DataType::kFloat32
                         ? DataType::kFloat32
                         : produced;
      if (binding.type == DataType::kFloat32 && produced != DataType::kFloat32) {
        // fall through to the conversion below
      } else if (binding.user) {
        return invalidArgument("output '" + name + "' is " + dataTypeName(produced) +
                               ", not the type its bound buffer was sized for");
      }
    }
    if (binding.type == DataType::kString || value->tensor.type == DataType::kString) {
      m_hostOutputs[name] = value->host;
      continue;
    }
    int64_t n = value->tensor.numel();
    int64_t bytes = n * static_cast<int64_t>(dataTypeSize(binding.type));
    void* target = binding.user;
    if (!target) {
      if (binding.own.bytes() < bytes) {
        if (m_capturing) return unsupported("output '" + name + "' grew during CUDA graph capture");
        KILN_CUDA_CHECK(cudaStreamSynchronize(m_stream));
        KILN_RETURN_IF_ERROR(binding.own.allocate(bytes, "output '" + name + "'"));
      }
      target = binding.own.data();
    }
    if (target == value->tensor.data || n == 0) continue;
    if (value->tensor.type == binding.type) {
      KILN_CUDA_CHECK(cudaMemcpyAsync(target, value->tensor.data, static_cast<size_t>(bytes),
                                      cudaMemcpyDeviceToDevice, m_stream));
    } else {
      KILN_RETURN_IF_ERROR(convertFloatBuffer(value->tensor.data, value->tensor.type, target,
                                              binding.type, n, m_stream));
    }
  }
  // Values whose last reader was a graph output (or nobody) are freed now.
  for (auto& [name, value] : m_live) {
    if (value.dynamic && value.tensor.data) {
      KILN_CUDA_CHECK(cudaFreeAsync(value.tensor.data, m_stream));
      value.tensor.data = nullptr;
      value.dynamic = false;
    }
  }
  return Status::ok();
}

Status ContextImpl::releaseAfter(size_t step) {
  for (const std::string& name : m_plan.steps[step].releaseAfter) {
    auto it = m_live.find(name);
    if (it == m_live.end()) continue;
    if (it->second.dynamic && it->second.tensor.data) {
      KILN_CUDA_CHECK(cudaFreeAsync(it->second.tensor.data, m_stream));
    }
    m_live.erase(it);
  }
  return Status::ok();
}

Status ContextImpl::runHostFallback(size_t index, const Node& node) {
  if (m_capturing) {
    return unsupported(node.describe() + " runs on the host (" + m_plan.steps[index].note +
                       "), which a CUDA graph cannot capture; run without --cuda-graph")
        .withNodeOf(node);
  }
  std::map<std::string, Tensor> values;
  std::vector<std::string> reads(node.inputs.begin(), node.inputs.end());
  for (const std::string& name : node.implicitInputs()) reads.push_back(name);
  for (const std::string& name : reads) {
    if (name.empty() || values.count(name)) continue;
    auto host = hostValue(name, index, node.describe());
    if (!host.isOk()) return host.status();
    Tensor t = host.value();
    auto modelType = m_plan.values.find(name);
    if (modelType != m_plan.values.end() && modelType->second.modelType == DataType::kFloat32 &&
        t.type() != DataType::kFloat32 && isFloatingPoint(t.type())) {
      t = castTensor(t, DataType::kFloat32);
    }
    values[name] = t;
  }
  std::vector<Tensor> outputs;
  KILN_RETURN_IF_ERROR(runReferenceNode(node, values, &outputs));
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (node.outputs[i].empty() || !outputs[i].defined()) continue;
    Tensor stored = outputs[i];
    if (stored.type() == DataType::kFloat32 && m_engine->floatType() != DataType::kFloat32) {
      stored = castTensor(stored, m_engine->floatType());
    }
    if (stored.type() == DataType::kString) {
      LiveValue& out = m_live[node.outputs[i]];
      out = LiveValue{DeviceTensor{stored.type(), stored.shape(), nullptr}, stored, false};
      continue;
    }
    auto device = allocate(node.outputs[i], stored.type(), stored.shape(), index);
    if (!device.isOk()) return device.status();
    if (stored.byteSize()) {
      KILN_CUDA_CHECK(cudaMemcpyAsync(device.value().data, stored.rawData(), stored.byteSize(),
                                      cudaMemcpyHostToDevice, m_stream));
      KILN_CUDA_CHECK(cudaStreamSynchronize(m_stream));  // `stored` is pageable and short-lived
    }
    m_live[node.outputs[i]].host = stored;
  }
  return Status::ok();
}

Status ContextImpl::runStep(size_t index) {
  PlannedStep& step = m_plan.steps[index];
  const Node& node = m_engine->network().graph.nodes[step.nodeIndex];
  if (step.placement == LayerPlacement::kFolded) return Status::ok();
  if (step.placement == LayerPlacement::kHostFallback) return runHostFallback(index, node);
  std::vector<const LiveValue*> inputs;
  for (const std::string& name : node.inputs) {
    if (name.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    const LiveValue* value = live(name);
    if (!value) return internalError(node.describe() + ": input '" + name + "' has no value");
    if (value->tensor.type == DataType::kString) {
      return internalError(node.describe() + ": string input '" + name + "' on the GPU path");
    }
    inputs.push_back(value);
  }
  StepContext context(*this, index, node, std::move(inputs));
  context.aliasMode = step.placement == LayerPlacement::kAlias;
  Status status = step.entry->fn(context);
  if (status.code() == StatusCode::kUnsupported && !m_capturing) {
    // A variant the GPU kernel does not cover (found only once shapes or constant
    // inputs are seen): this node runs on the host from now on, and says why.
    step.placement = LayerPlacement::kHostFallback;
    step.note = status.message() + "; runs on the host";
    step.implementation = "CPU reference kernel";
    return runHostFallback(index, node);
  }
  if (!status.isOk()) {
    bool named = status.message().rfind(node.describe(), 0) == 0;
    return named ? status : status.withContext(node.describe());
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i].empty()) continue;
    if (!live(node.outputs[i])) {
      return internalError(node.describe() + ": GPU kernel did not produce '" + node.outputs[i] +
                           "'");
    }
  }
  if (context.aliasMode && !node.outputs.empty() && !node.outputs[0].empty()) {
    // A view that landed in its own buffer (a graph output): copy the bytes.
    const LiveValue* source = live(node.inputs[0]);
    LiveValue* out = live(node.outputs[0]);
    if (source && out && out->tensor.data != source->tensor.data && out->tensor.byteSize()) {
      KILN_CUDA_CHECK(cudaMemcpyAsync(out->tensor.data, source->tensor.data, out->tensor.byteSize(),
                                      cudaMemcpyDeviceToDevice, m_stream));
    }
  }
  return Status::ok();
}

Status ContextImpl::runSteps() {
  KILN_RETURN_IF_ERROR(bindInputs());
  bool timed = m_profiling && !m_capturing;
  if (timed && m_events.size() < m_plan.steps.size()) {
    while (m_events.size() < m_plan.steps.size()) {
      cudaEvent_t start, end;
      KILN_CUDA_CHECK(cudaEventCreate(&start));
      KILN_CUDA_CHECK(cudaEventCreate(&end));
      m_events.emplace_back(start, end);
    }
  }
  if (timed) KILN_RETURN_IF_ERROR(enqueueGpuWait(m_headStartMs * 1000.0, m_stream));
  for (size_t i = 0; i < m_plan.steps.size(); ++i) {
    if (timed) KILN_CUDA_CHECK(cudaEventRecord(m_events[i].first, m_stream));
    KILN_RETURN_IF_ERROR_NODE(runStep(i),
                              m_engine->network().graph.nodes[m_plan.steps[i].nodeIndex]);
    if (timed) KILN_CUDA_CHECK(cudaEventRecord(m_events[i].second, m_stream));
    KILN_RETURN_IF_ERROR(releaseAfter(i));
  }
  KILN_RETURN_IF_ERROR(finishOutputs());
  if (timed) KILN_RETURN_IF_ERROR(recordProfile());
  return Status::ok();
}

Status ContextImpl::recordProfile() {
  KILN_CUDA_CHECK(cudaStreamSynchronize(m_stream));
  m_timings.resize(m_plan.steps.size());
  for (size_t i = 0; i < m_plan.steps.size(); ++i) {
    if (m_plan.steps[i].placement == LayerPlacement::kFolded) continue;
    float ms = 0;
    KILN_CUDA_CHECK(cudaEventElapsedTime(&ms, m_events[i].first, m_events[i].second));
    m_timings[i].push_back(ms);
  }
  return Status::ok();
}

Status ContextImpl::enqueue(void* stream) {
  KILN_CUDA_CHECK(cudaSetDevice(m_engine->options().device));
  KILN_RETURN_IF_ERROR(prepare());
  m_stream = stream ? static_cast<cudaStream_t>(stream) : m_ownStream;
  if (!m_useGraph || m_profiling) return runSteps();
  if (m_graphExec && m_graphStream == m_stream) {
    KILN_CUDA_CHECK(cudaGraphLaunch(m_graphExec, m_stream));
    return Status::ok();
  }
  dropGraph();
  // A plain run first: creates library plans and workspaces, which capture cannot.
  KILN_RETURN_IF_ERROR(runSteps());
  KILN_CUDA_CHECK(cudaStreamSynchronize(m_stream));
  for (const PlannedStep& step : m_plan.steps) {
    if (step.placement == LayerPlacement::kHostFallback || step.hostRoundTrip) {
      const Node& node = m_engine->network().graph.nodes[step.nodeIndex];
      return unsupported(node.describe() + " needs the host (" + step.note +
                         "), which a CUDA graph cannot capture; run without --cuda-graph")
          .withNodeOf(node);
    }
  }
  cudaStream_t captureStream = m_stream;
  if (captureStream == nullptr) return invalidArgument("CUDA graphs need a non-default stream");
  KILN_CUDA_CHECK(cudaStreamBeginCapture(captureStream, cudaStreamCaptureModeThreadLocal));
  m_capturing = true;
  Status status = runSteps();
  m_capturing = false;
  cudaGraph_t graph = nullptr;
  cudaError_t endError = cudaStreamEndCapture(captureStream, &graph);
  if (!status.isOk()) {
    if (graph) cudaGraphDestroy(graph);
    return status;
  }
  KILN_CUDA_CHECK(endError);
  cudaError_t instantiateError = cudaGraphInstantiate(&m_graphExec, graph, 0);
  cudaGraphDestroy(graph);
  KILN_CUDA_CHECK(instantiateError);
  m_graphStream = captureStream;
  KILN_CUDA_CHECK(cudaGraphLaunch(m_graphExec, m_stream));
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<ExecutionContext>> makeExecutionContext(
    std::shared_ptr<const EngineImpl> engine) {
  auto context = std::make_unique<ContextImpl>(std::move(engine));
  KILN_RETURN_IF_ERROR(context->init());
  return std::unique_ptr<ExecutionContext>(std::move(context));
}

}  // namespace kiln::cuda
