// Pooling kernels that live outside pool.cpp, registered by registerPoolKernels.
#pragma once

#include "backends/cpu/kernel.h"

namespace kiln::cpu {

Status maxUnpoolKernel(KernelContext& ctx);   // pool_unpool.cpp
Status maxRoiPoolKernel(KernelContext& ctx);  // pool_unpool.cpp

}  // namespace kiln::cpu
