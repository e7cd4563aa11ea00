// Plugin layers on the CUDA backend: the GPU kernel entry that runs a plugin's
// enqueue() on the context's stream. A plugin without a CUDA implementation, or
// one that refuses the engine's types, runs through the host fallback (its CPU
// implementation), and the layer's note says why.
#pragma once

#include "backends/cuda/gpu_kernel.h"

namespace kiln::cuda {

// The entry for `node` when it is a plugin layer (isPluginNode), else nullptr.
const GpuKernelEntry* pluginGpuKernel(const Node& node);

}  // namespace kiln::cuda
