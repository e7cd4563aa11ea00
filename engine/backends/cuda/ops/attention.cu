#include "backends/cuda/device_common.cuh"

namespace kiln::cuda {

void registerAttentionGpuKernels(GpuKernelRegistry& registry) {}

}  // namespace kiln::cuda
