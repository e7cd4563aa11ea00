// Registration of the gather/scatter family's selection kernels; registerGatherScatterKernels
// calls it.
#pragma once

#include "backends/cpu/kernel.h"

namespace kiln::cpu {

// OneHot, NonZero, Compress, Unique (selection_ops.cpp).
void registerSelectionKernels(KernelRegistry& registry);

}  // namespace kiln::cpu
