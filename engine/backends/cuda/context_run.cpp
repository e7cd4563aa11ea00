// The CUDA execution context's run: each step's kernel or host fallback, releasing values
// after their last reader, per-layer profiling events and CUDA graph capture and replay
// (the class: context_impl.h; planning and bindings: context.cpp).
#include <algorithm>
#include <cstring>

#include "backends/cuda/context_impl.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common_host.h"
#include "kiln/reference_backend.h"

namespace kiln::cuda::context_detail {

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
  if (step.viewOffsetBytes >= 0) return runPlannedView(index, node);
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

// A planned view (PlannedStep::viewOffsetBytes): output 0 takes the planned shape over input
// 0's bytes from the offset on; a graph output (a buffer of its own) gets those bytes copied.
Status ContextImpl::runPlannedView(size_t index, const Node& node) {
  const LiveValue* source = live(node.inputs[0]);
  if (!source)
    return internalError(node.describe() + ": input '" + node.inputs[0] + "' has no value");
  const PlannedValue& planned = m_plan.values.at(node.outputs[0]);
  // The offset counts elements of the planned storage: an input held in another width (a layer
  // that kept float32 in a 16-bit plan) would put the view on other elements.
  if (dataTypeSize(source->tensor.type) != dataTypeSize(planned.storage)) {
    return internalError(node.describe() + ": its planned view counts " +
                         dataTypeName(planned.storage) + " elements of '" + node.inputs[0] +
                         "', which holds " + dataTypeName(source->tensor.type));
  }
  const int64_t offset = m_plan.steps[index].viewOffsetBytes;
  const int64_t bytes =
      shapeNumel(planned.shape) * static_cast<int64_t>(dataTypeSize(source->tensor.type));
  if (offset + bytes > static_cast<int64_t>(source->tensor.byteSize())) {
    return internalError(node.describe() + ": its planned view (" + std::to_string(bytes) +
                         " bytes at byte " + std::to_string(offset) + ") lies outside '" +
                         node.inputs[0] + "'");
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor out,
                        allocate(node.outputs[0], source->tensor.type, planned.shape, index));
  const char* from = static_cast<const char*>(source->tensor.data) + offset;
  if (out.data != from && out.byteSize()) {
    KILN_CUDA_CHECK(
        cudaMemcpyAsync(out.data, from, out.byteSize(), cudaMemcpyDeviceToDevice, m_stream));
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

}  // namespace kiln::cuda::context_detail
