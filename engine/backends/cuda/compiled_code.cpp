// CompiledCode (kiln/cuda_generated_kernels.h) over its two stores.
#include <mutex>
#include <set>

#include "backends/cuda/compiled_code_stores.h"

namespace kiln::cuda {

CompiledCode::CompiledCode() : m_stores(std::make_unique<Stores>()) {}
CompiledCode::~CompiledCode() = default;

std::vector<GeneratedKernelBinary> CompiledCode::binaries() const {
  NvrtcStore& store = m_stores->nvrtc;
  std::lock_guard<std::mutex> lock(store.mutex);
  std::vector<GeneratedKernelBinary> out;
  for (const auto& [key, binary] : store.binaries) out.push_back(binary);
  return out;
}

void CompiledCode::preload(const std::vector<GeneratedKernelBinary>& entries) {
  std::vector<GeneratedKernelBinary> cubins;
  for (const GeneratedKernelBinary& entry : entries) {
    if (isCudnnPlanKey(entry.key))
      preloadCudnnPlanEntry(m_stores->cudnn, entry);  // a cuDNN execution plan record
    else
      cubins.push_back(entry);
  }
  preloadCubins(m_stores->nvrtc, cubins);
}

std::vector<GeneratedKernelBinary> CompiledCode::cudnnRecordsForLayers(
    const std::vector<std::string>& layers) const {
  return cudnnPlanEntries(m_stores->cudnn, std::set<std::string>(layers.begin(), layers.end()));
}

}  // namespace kiln::cuda
