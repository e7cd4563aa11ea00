#include <utility>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/engine_impl.h"
#include "backends/cuda/ops/plugin_kernel.h"
#include "kiln/cuda_generated_kernels.h"
#include "kiln/plugin_registry.h"
#include "kiln/reference_backend.h"

namespace kiln::cuda {

DeviceBuffer::~DeviceBuffer() {
  if (m_data) cudaFree(m_data);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : m_data(std::exchange(other.m_data, nullptr)), m_bytes(std::exchange(other.m_bytes, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (m_data) cudaFree(m_data);
    m_data = std::exchange(other.m_data, nullptr);
    m_bytes = std::exchange(other.m_bytes, 0);
  }
  return *this;
}

Status DeviceBuffer::allocate(int64_t bytes, const std::string& what) {
  if (m_data) {
    KILN_CUDA_CHECK(cudaFree(m_data));
    m_data = nullptr;
    m_bytes = 0;
  }
  if (bytes <= 0) return Status::ok();
  cudaError_t error = cudaMalloc(&m_data, static_cast<size_t>(bytes));
  if (error != cudaSuccess) {
    m_data = nullptr;
    cudaGetLastError();
    size_t freeBytes = 0, totalBytes = 0;
    cudaMemGetInfo(&freeBytes, &totalBytes);
    return Status(StatusCode::kOutOfMemory,
                  "GPU out of memory allocating " + std::to_string(bytes >> 20) + " MiB for " +
                      what + " (" + std::to_string(freeBytes >> 20) + " MiB free of " +
                      std::to_string(totalBytes >> 20) + " MiB)");
  }
  m_bytes = bytes;
  return Status::ok();
}

Result<std::shared_ptr<Engine>> Engine::create(std::shared_ptr<const Network> network,
                                               const EngineOptions& options) {
  return EngineImpl::build(std::move(network), options);
}

EngineImpl::~EngineImpl() = default;

DataType EngineImpl::floatType() const {
  switch (m_options.precision) {
    case Precision::kFloat16:
      return DataType::kFloat16;
    case Precision::kBFloat16:
      return DataType::kBFloat16;
    case Precision::kFloat32:
      break;
  }
  return DataType::kFloat32;
}

Result<std::shared_ptr<Engine>> EngineImpl::build(std::shared_ptr<const Network> network,
                                                  const EngineOptions& options) {
  if (!network) return invalidArgument("no network given to the CUDA engine");
  std::shared_ptr<EngineImpl> engine(new EngineImpl());
  engine->m_network = std::move(network);
  engine->m_options = options;
  if (!engine->m_options.compiledCode)  // its own: nothing shared with another engine
    engine->m_options.compiledCode = std::make_shared<CompiledCode>();
  engine->m_device = probeCudaDevice(options.device);
  if (!engine->m_device.available) {
    return unsupported("CUDA backend unavailable: " + engine->m_device.reason);
  }
  KILN_CUDA_CHECK(cudaSetDevice(options.device));
  auto inferred = inferShapes(*engine->m_network);
  if (!inferred.isOk()) return inferred.status();
  engine->m_static = std::move(inferred.value());
  KILN_RETURN_IF_ERROR(engine->chooseKernels());
  KILN_RETURN_IF_ERROR(engine->uploadWeights());
  return std::shared_ptr<Engine>(engine);
}

Status EngineImpl::chooseKernels() {
  const Graph& graph = m_network->graph;
  std::vector<std::string> unsupportedNodes;
  auto cpuOps = referenceOperators();
  auto hasCpuKernel = [&](const Node& node) {
    const std::string domain = node.domain == "ai.onnx" ? "" : node.domain;
    for (const OperatorRange& r : cpuOps) {
      if (r.opType == node.opType && r.domain == domain && node.opset >= r.sinceVersion &&
          node.opset <= r.untilVersion)
        return true;
    }
    return false;
  };
  for (const Node& node : graph.nodes) {
    NodeChoice choice;
    const GpuKernelEntry* entry = builtinGpuKernels().find(node.domain, node.opType, node.opset);
    if (!entry) entry = pluginGpuKernel(node);
    if (entry) {
      std::vector<DataType> types;
      for (const std::string& in : node.inputs) {
        if (in.empty()) {
          types.push_back(DataType::kUndefined);
          continue;
        }
        auto it = m_static.values.find(in);
        types.push_back(it == m_static.values.end() ? DataType::kUndefined
                                                    : storageType(it->second.type));
      }
      std::string reason = (entry->supports ? entry->supports : supportsFloatTypes)(node, types);
      if (reason.empty()) {
        choice.entry = entry;
      } else {
        choice.fallbackReason = reason;
      }
    } else {
      choice.fallbackReason =
          "no GPU kernel for " + node.opType + " (opset " + std::to_string(node.opset) + ")";
    }
    if (!choice.entry && !hasCpuKernel(node) && !isPluginNode(node)) {
      unsupportedNodes.push_back(node.describe() + " domain '" +
                                 (node.domain.empty() ? "ai.onnx" : node.domain) + "' opset " +
                                 std::to_string(node.opset));
    }
    m_choices.push_back(std::move(choice));
  }
  if (!unsupportedNodes.empty()) {
    std::string message = std::to_string(unsupportedNodes.size()) + " unsupported node(s): ";
    for (size_t i = 0; i < unsupportedNodes.size(); ++i)
      message += (i ? "; " : "") + unsupportedNodes[i];
    return unsupported(message);
  }
  return Status::ok();
}

Status EngineImpl::uploadWeights() {
  for (const auto& [name, host] : m_network->graph.initializers) {
    if (host.type() == DataType::kString) {
      m_weights[name] = DeviceWeight{DeviceTensor{host.type(), host.shape(), nullptr}, host};
      continue;
    }
    // Weights narrowed to float16 / bfloat16 saturate (castTensorSaturating's contract).
    Tensor stored =
        host.type() == storageType(host.type()) ? host : castTensorSaturating(host, floatType());
    DeviceBuffer buffer;
    KILN_RETURN_IF_ERROR(
        buffer.allocate(static_cast<int64_t>(stored.byteSize()), "weight '" + name + "'"));
    if (stored.byteSize() > 0) {
      KILN_CUDA_CHECK(
          cudaMemcpy(buffer.data(), stored.rawData(), stored.byteSize(), cudaMemcpyHostToDevice));
    }
    m_weightBytes += static_cast<int64_t>(stored.byteSize());
    m_weights[name] =
        DeviceWeight{DeviceTensor{stored.type(), stored.shape(), buffer.data()}, host};
    m_weightBuffers.push_back(std::move(buffer));
  }
  return Status::ok();
}

Result<std::unique_ptr<ExecutionContext>> EngineImpl::createContext() {
  return makeExecutionContext(shared_from_this());
}

}  // namespace kiln::cuda
