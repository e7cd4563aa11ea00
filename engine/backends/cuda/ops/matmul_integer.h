// The integer GEMMs of the CUDA backend (matmul_integer.cpp, device half
// matmul_integer_impl.cu): MatMulInteger and QLinearMatMul, registered by
// registerQuantizeGpuKernels (quantize.cpp) beside the Q/DQ ops.
#pragma once

#include "backends/cuda/gpu_kernel.h"

namespace kiln::cuda {

// Adds MatMulInteger and QLinearMatMul (opsets 10 and later) with their support predicates.
void registerIntegerMatMulGpuKernels(GpuKernelRegistry& registry);

}  // namespace kiln::cuda
