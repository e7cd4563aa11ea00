#include "backends/cuda/device_common.cuh"

namespace kiln::cuda {

void registerSelectionGpuKernels(GpuKernelRegistry& registry) {}

}  // namespace kiln::cuda
