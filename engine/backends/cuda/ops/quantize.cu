#include "backends/cuda/device_common.cuh"

namespace kiln::cuda {

void registerQuantizeGpuKernels(GpuKernelRegistry& registry) {}

}  // namespace kiln::cuda
