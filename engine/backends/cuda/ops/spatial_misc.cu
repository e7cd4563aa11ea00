#include "backends/cuda/device_common.cuh"

namespace kiln::cuda {

void registerSpatialMiscGpuKernels(GpuKernelRegistry& registry) {}

}  // namespace kiln::cuda
