// ExecutionContext of the CUDA engine: plans memory once per set of input shapes,
// then runs the main graph's nodes in order on a stream (context_run.cpp). See
// cuda_runtime.h for the contract, context_impl.h for the class and context_plan.h for
// how values are placed.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "backends/cuda/context_impl.h"
#include "backends/cuda/layer_choice_hold.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common_host.h"
#include "kiln/reference_backend.h"

namespace kiln::cuda {
namespace context_detail {

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
DataType StepContext::plannedOutputType(size_t i) const {
  if (!wantsOutput(i)) return DataType::kUndefined;
  return m_context.plannedStorage(m_node.outputs[i]);
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
void StepContext::offerChoices(const std::vector<std::string>& choices) {
  m_context.step(m_step).offers = choices;
}
std::string StepContext::plannedChoice() const {
  if (const std::string* held = m_context.heldChoice(node().displayName())) return *held;
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
                          : castTensorSaturating(host, m_engine->floatType());
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
    // A planned view starts at its offset (runPlannedView checked it lies inside the source);
    // a Reshape-like view at byte 0 (allocateOutput checked the element counts).
    const int64_t offset = std::max<int64_t>(m_plan.steps[step].viewOffsetBytes, 0);
    out.tensor.data = static_cast<char*>(source->tensor.data) + offset;
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

}  // namespace context_detail

Result<std::unique_ptr<ExecutionContext>> makeExecutionContext(
    std::shared_ptr<const EngineImpl> engine) {
  auto context = std::make_unique<context_detail::ContextImpl>(std::move(engine));
  KILN_RETURN_IF_ERROR(context->init());
  return std::unique_ptr<ExecutionContext>(std::move(context));
}

bool holdLayerChoice(ExecutionContext& context, const std::string& layer,
                     const std::string& choice) {
  auto* impl = dynamic_cast<context_detail::ContextImpl*>(&context);
  if (!impl) return false;
  impl->holdLayerChoice(layer, choice);
  return true;
}

}  // namespace kiln::cuda
