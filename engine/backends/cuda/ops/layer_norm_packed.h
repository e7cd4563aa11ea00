// LayerNormalization's packed form for 16-bit rows (normalization_impl.cu's layerNormKernel takes
// it when it applies): rows of up to 1024 columns, a multiple of 8, one scale (and bias)
// value per column, no statistics outputs, 16-byte aligned buffers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/gpu_kernel.h"

namespace kiln::cuda {

struct PackedLayerNorm {
  int64_t rows = 0, cols = 0;
  bool scaleDirect = false;  // Scale holds one value per column
  bool biasDirect = false;   // B absent or one value per column
  bool wantsStatistics = false;
  float epsilon = 1e-5f;
};

// Launches the packed kernel on `stream` and returns true when it applies to these tensors
// (float16 or bfloat16 X); false, with nothing launched, otherwise.
bool launchLayerNormPacked(const DeviceTensor& x, DeviceTensor& y, const DeviceTensor& scale,
                           const DeviceTensor* bias, const PackedLayerNorm& p, cudaStream_t stream);

}  // namespace kiln::cuda
