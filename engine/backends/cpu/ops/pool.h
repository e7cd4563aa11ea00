// Pooling kernels that live outside pool.cpp, registered by registerPoolKernels, and
// MaxPool's, which the fused layers ending in a MaxPool run (conv_max_pool.cpp).
#pragma once

#include "backends/cpu/kernel.h"

namespace kiln::cpu {

Status maxPoolKernel(KernelContext& ctx);  // pool.cpp

Status maxUnpoolKernel(KernelContext& ctx);   // pool_unpool.cpp
Status maxRoiPoolKernel(KernelContext& ctx);  // pool_unpool.cpp

}  // namespace kiln::cpu
