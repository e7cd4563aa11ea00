// Zero-padding of the innermost (channel) axis, for channels-last convolutions whose
// channel count the tensor-core kernels do not take (ResNet's 3-channel stem): with
// X' = [X, 0] and W' = [W, 0] along C, Conv(X', W') = Conv(X, W), since the zero
// channels add zero products.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {

// dst[r, 0:channels] = src[r, :], dst[r, channels:padded] = 0 for r < rows; src is
// [rows, channels] and dst [rows, padded] (padded > channels), both packed, element
// size 1, 2 or 4 bytes (int8, float16/bfloat16, float32). One row per thread; rows of
// 4, 8 or 16 bytes are written as one store. Enqueued on `stream`, never synchronizes.
Status padInnermostChannels(const void* src, void* dst, int64_t rows, int channels, int padded,
                            DataType type, cudaStream_t stream);

}  // namespace kiln::cuda
