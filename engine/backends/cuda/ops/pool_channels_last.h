// Pooling of channels-last (NHWC) tensors, for layers the channels_last_layout pass
// rewrote (ir/channels_last.h). pool.cpp resolves the ONNX geometry and calls these.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {

// A 2-D MaxPool / AveragePool window over X [n, h, w, c] giving Y [n, outH, outW, c].
struct ChannelsLastWindow {
  int64_t n = 0, h = 0, w = 0, c = 0, outH = 0, outW = 0;
  int kernelH = 1, kernelW = 1, strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  bool max = true;               // MaxPool, else AveragePool
  bool countIncludePad = false;  // AveragePool's divisor counts padding taps
};

// Y = pool(X) as the channels-first kernels compute it (MaxPool: the window's first tap
// when it is NaN, else its largest; AveragePool in float). Float32/16/bf16 storage, and
// int8 / uint8 for MaxPool (an empty window gives the type's lowest); 16-byte packs of channels
// when c and the pointers allow. Y must not alias X.
Status poolChannelsLast(const ChannelsLastWindow& p, DataType type, const void* x, void* y,
                        cudaStream_t stream);

// Global pooling of X [n, spatial, c] to Y [n, c]: the mean (average) or, for max, the
// first element when it is NaN, else the largest.
Status globalPoolChannelsLast(int64_t n, int64_t spatial, int64_t c, bool max, DataType type,
                              const void* x, void* y, cudaStream_t stream);

}  // namespace kiln::cuda
