// padInnermostChannels (contract: channel_pad.h). Reads are element-wise (a 3-channel
// fp16 row is 6 bytes, unaligned); writes are one 4-, 8- or 16-byte store per row when
// the padded row has that size, so the pass costs about one read of X and one write
// of the padded copy.
#include <cstdint>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/channel_pad.h"

namespace kiln::cuda {
namespace {

// E: element word (uint16_t or uint32_t), P: the padded row as one word (or E when the
// row has no vector type).
template <class E, class P>
__global__ void __launch_bounds__(kBlockSize)
    padRowsKernel(const E* __restrict__ src, P* __restrict__ dst, int64_t rows, int channels,
                  int padded) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows; r += step) {
    const E* in = src + r * channels;
    if constexpr (sizeof(P) == sizeof(E)) {
      E* out = reinterpret_cast<E*>(dst) + r * padded;
      for (int c = 0; c < padded; ++c) out[c] = c < channels ? in[c] : E(0);
    } else {
      constexpr int kWords = sizeof(P) / sizeof(E);
      union {
        P whole;
        E words[kWords];
      } row;
#pragma unroll
      for (int c = 0; c < kWords; ++c) row.words[c] = c < channels ? in[c] : E(0);
      dst[r] = row.whole;
    }
  }
}

template <class E, class P>
Status launchPad(const void* src, void* dst, int64_t rows, int channels, int padded,
                 cudaStream_t stream) {
  padRowsKernel<E, P><<<gridFor(rows), kBlockSize, 0, stream>>>(
      static_cast<const E*>(src), static_cast<P*>(dst), rows, channels, padded);
  KILN_CUDA_CHECK_LAUNCH("padRowsKernel");
  return Status::ok();
}

bool aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

template <class E>
Status padRows(const void* src, void* dst, int64_t rows, int channels, int padded,
               cudaStream_t stream) {
  const size_t rowBytes = sizeof(E) * static_cast<size_t>(padded);
  if (rowBytes == 16 && aligned(dst, 16))
    return launchPad<E, uint4>(src, dst, rows, channels, padded, stream);
  if (rowBytes == 8 && aligned(dst, 8))
    return launchPad<E, uint2>(src, dst, rows, channels, padded, stream);
  if (rowBytes == 4 && aligned(dst, 4))
    return launchPad<E, uint32_t>(src, dst, rows, channels, padded, stream);
  return launchPad<E, E>(src, dst, rows, channels, padded, stream);
}

}  // namespace

Status padInnermostChannels(const void* src, void* dst, int64_t rows, int channels, int padded,
                            DataType type, cudaStream_t stream) {
  if (rows <= 0) return Status::ok();
  if (channels <= 0 || padded <= channels)
    return invalidArgument("channel padding needs 0 < channels < padded");
  switch (dataTypeSize(type)) {
    case 1:
      return padRows<uint8_t>(src, dst, rows, channels, padded, stream);
    case 2:
      return padRows<uint16_t>(src, dst, rows, channels, padded, stream);
    case 4:
      return padRows<uint32_t>(src, dst, rows, channels, padded, stream);
    default:
      return invalidArgument(std::string("channel padding of ") + dataTypeName(type));
  }
}

}  // namespace kiln::cuda
