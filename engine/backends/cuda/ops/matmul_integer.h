// The integer GEMMs of the CUDA backend (matmul_integer.cu): MatMulInteger and QLinearMatMul,
// registered by registerQuantizeGpuKernels (quantize.cu) beside the Q/DQ ops.
#pragma once

#include "backends/cuda/gpu_kernel.h"

namespace kiln::cuda {

void registerIntegerMatMulGpuKernels(GpuKernelRegistry& registry);

}  // namespace kiln::cuda
