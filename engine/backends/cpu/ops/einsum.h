// Einsum, registered with the matmul family (registerMatMulKernels).
#pragma once

#include "backends/cpu/kernel.h"

namespace kiln::cpu {

Status einsumKernel(KernelContext& ctx);

}  // namespace kiln::cpu
