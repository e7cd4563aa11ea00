#include "backends/cuda/device_common.cuh"

namespace kiln::cuda {

void registerRnnGpuKernels(GpuKernelRegistry& registry) {}

}  // namespace kiln::cuda
