// Registration of the shape family's other files; registerShapeKernels calls these.
#pragma once

#include "backends/cpu/kernel.h"

namespace kiln::cpu {

// Slice, Pad, CenterCropPad, Tile, Expand (slice_pad.cpp).
void registerSlicePadKernels(KernelRegistry& registry);
// EyeLike, ConstantOfShape, Range, Trilu (generator_ops.cpp).
void registerTensorGeneratorKernels(KernelRegistry& registry);

}  // namespace kiln::cpu
