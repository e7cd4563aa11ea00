// EngineImpl: what an Engine holds for its contexts. Weights live on the device
// once (in the engine's storage precision) with their host originals; each node
// of the main graph has its chosen GPU kernel or the reason it runs on the host.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/gpu_kernel.h"
#include "kiln/cuda_runtime.h"
#include "kiln/shape_inference.h"

namespace kiln::cuda {

// A device allocation freed with the engine/context that owns it.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Frees the old allocation and allocates `bytes` (0 frees only). Names `what` in errors.
  Status allocate(int64_t bytes, const std::string& what);
  void* data() const { return m_data; }
  int64_t bytes() const { return m_bytes; }

 private:
  void* m_data = nullptr;
  int64_t m_bytes = 0;
};

struct NodeChoice {
  const GpuKernelEntry* entry = nullptr;  // nullptr: host fallback
  std::string fallbackReason;
};

struct DeviceWeight {
  DeviceTensor tensor;  // storage type on the device
  Tensor host;          // the model's initializer
};

class EngineImpl : public Engine, public std::enable_shared_from_this<EngineImpl> {
 public:
  static Result<std::shared_ptr<Engine>> build(std::shared_ptr<const Network> network,
                                               const EngineOptions& options);
  ~EngineImpl() override;

  const Network& network() const override { return *m_network; }
  const EngineOptions& options() const override { return m_options; }
  const DeviceInfo& device() const override { return m_device; }
  int64_t weightBytes() const override { return m_weightBytes; }
  Result<std::unique_ptr<ExecutionContext>> createContext() override;

  DataType floatType() const;
  DataType storageType(DataType modelType) const {
    return modelType == DataType::kFloat32 ? floatType() : modelType;
  }
  const std::vector<NodeChoice>& choices() const { return m_choices; }
  const std::map<std::string, DeviceWeight>& weights() const { return m_weights; }
  // Model data types of every value (from shape inference without input shapes).
  const std::map<std::string, InferredValue>& staticValues() const { return m_static.values; }

 private:
  EngineImpl() = default;
  Status uploadWeights();
  Status chooseKernels();

  std::shared_ptr<const Network> m_network;
  EngineOptions m_options;
  DeviceInfo m_device;
  ShapeInferenceResult m_static;
  std::vector<NodeChoice> m_choices;
  std::map<std::string, DeviceWeight> m_weights;
  std::vector<DeviceBuffer> m_weightBuffers;
  int64_t m_weightBytes = 0;
};

Result<std::unique_ptr<ExecutionContext>> makeExecutionContext(
    std::shared_ptr<const EngineImpl> engine);

}  // namespace kiln::cuda
