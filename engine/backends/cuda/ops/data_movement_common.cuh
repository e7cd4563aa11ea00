// What the data-movement kernels' device halves share (data_movement_impl.cu: strided copies,
// transposes, row copies; slice_pad_tile_impl.cu: Pad; gather_scatter_impl.cu: Gather*,
// Scatter*, ReverseSequence): the word-width and element-size dispatch, the grid-stride loop
// macro and the device index helpers. Included by those _impl.cu files only; what the host
// halves share is data_movement_common.h.
#pragma once

#include <cstdint>
#include <string>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/data_movement_impl.h"
#include "backends/cuda/type_dispatch.cuh"

// Binds `V` to the unsigned word of WIDTH bytes (1, 2, 4, 8 or 16) and runs the body.
#define KILN_DM_DISPATCH_WIDTH(WIDTH, ...) \
  switch (WIDTH) {                         \
    case 16: {                             \
      using V = uint4;                     \
      __VA_ARGS__;                         \
      break;                               \
    }                                      \
    case 8: {                              \
      using V = uint64_t;                  \
      __VA_ARGS__;                         \
      break;                               \
    }                                      \
    case 4: {                              \
      using V = uint32_t;                  \
      __VA_ARGS__;                         \
      break;                               \
    }                                      \
    case 2: {                              \
      using V = uint16_t;                  \
      __VA_ARGS__;                         \
      break;                               \
    }                                      \
    default: {                             \
      using V = uint8_t;                   \
      __VA_ARGS__;                         \
      break;                               \
    }                                      \
  }

#define KILN_DM_GRID_LOOP(i, n)                                             \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

namespace kiln::cuda {

namespace dm {

// value / divisor with the remainder, in 32 bits when both fit (value >= 0, divisor > 0).
__device__ __forceinline__ int64_t divMod(int64_t value, int64_t divisor, int64_t* rem) {
  if (((value | divisor) >> 31) == 0) {
    const uint32_t q = static_cast<uint32_t>(value) / static_cast<uint32_t>(divisor);
    *rem = value - static_cast<int64_t>(q) * divisor;
    return q;
  }
  const int64_t q = value / divisor;
  *rem = value - q * divisor;
  return q;
}

__device__ __forceinline__ int64_t loadIndex(const void* indices, bool is64, int64_t i) {
  return is64 ? static_cast<const int64_t*>(indices)[i]
              : static_cast<int64_t>(static_cast<const int32_t*>(indices)[i]);
}

// The index in [0, dim), or -1 when it is outside [-dim, dim).
__device__ __forceinline__ int64_t normalizeIndex(int64_t v, int64_t dim) {
  if (v < 0) v += dim;
  return v >= 0 && v < dim ? v : -1;
}

// `count` rows of `inner` elements staged in shared memory at row pitch `pitch` go out
// packed from `out`, the block's threads on adjacent elements (the row-run copy's and the
// row-wise Pad's second half; the caller synchronizes before and after).
template <class T>
__device__ __forceinline__ void writeStagedRows(const T* stage, int pitch, T* out, int count,
                                                int inner) {
  const int elements = count * inner;
  for (int e = threadIdx.x; e < elements; e += blockDim.x) {
    const int r = static_cast<int>(static_cast<unsigned>(e) / static_cast<unsigned>(inner));
    out[e] = stage[r * pitch + (e - r * inner)];
  }
}

// The row-staged kernels' block loop (the row-run copy, the row-wise Pad): a block takes
// `blockRows` of the `rows` output rows of `inner` elements a pass (grid-strided over the
// passes); thread t fills staging row t (pitch `pitch`) through fillRow(row, stagedRow), then
// the block writes the pass's rows out packed from out + row * inner.
template <class T, class FillRow>
__device__ __forceinline__ void stagedRowPasses(T* stage, int pitch, T* out, int64_t rows,
                                                int inner, int blockRows, FillRow fillRow) {
  for (int64_t row0 = int64_t(blockIdx.x) * blockRows; row0 < rows;
       row0 += int64_t(gridDim.x) * blockRows) {
    const int count = static_cast<int>(rows - row0 < blockRows ? rows - row0 : blockRows);
    for (int t = threadIdx.x; t < count; t += blockDim.x) fillRow(row0 + t, stage + t * pitch);
    __syncthreads();
    writeStagedRows(stage, pitch, out + row0 * inner, count, inner);
    __syncthreads();
  }
}

}  // namespace dm
}  // namespace kiln::cuda
