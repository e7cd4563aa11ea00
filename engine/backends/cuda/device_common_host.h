// Host-callable helpers of device_common.cu for the runtime's .cpp files.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {
// Converts n elements between float32, float16 and bfloat16 (any direction; same
// type is a copy) on `stream`. Used at the binding boundary of 16-bit engines.
Status convertFloatBuffer(const void* src, DataType srcType, void* dst, DataType dstType, int64_t n,
                          cudaStream_t stream);
// One thread that spins on the GPU's global timer for `microseconds` on `stream`:
// work queued behind it waits, so the host can run ahead of the GPU (profiling).
Status enqueueGpuWait(double microseconds, cudaStream_t stream);
}  // namespace kiln::cuda

namespace kiln::cuda {
struct DeviceTensor;
// Writes `src` broadcast (numpy rules) to `dst`'s shape; same element type.
Status broadcastInto(const DeviceTensor& src, const DeviceTensor& dst, cudaStream_t stream);
// y[n, c, spatial...] += bias[c] for a float tensor laid out [outer, channels, inner].
Status addChannelBias(void* y, DataType type, const void* bias, int64_t outer, int64_t channels,
                      int64_t inner, cudaStream_t stream);
}  // namespace kiln::cuda
