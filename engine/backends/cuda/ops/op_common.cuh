// Device helpers shared by the CUDA kernels of pool, resize, block_rearrange, generators,
// spatial_misc, attention and rotary_embedding: the grid-stride loop and the compute type
// of a storage type (PoolCompute: float, double for float64, float for int8 / uint8) with
// its loads and stores. The host checks they share are in op_common.h (included here).
// Included by .cu files only.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/op_common.h"

namespace kiln::cuda {

#define KILN_GRID_LOOP(i, n)                                                \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)
#define KILN_POOL_GRID_LOOP(i, n) KILN_GRID_LOOP(i, n)

// int8 / uint8 (MaxPool only: fold_qdq pools quantized values) compare in float,
// exactly.
template <class T>
struct PoolCompute {
  using type = typename ComputeType<T>::type;
};
template <>
struct PoolCompute<int8_t> {
  using type = float;
};
template <>
struct PoolCompute<uint8_t> {
  using type = float;
};
template <class T>
using AccOf = typename PoolCompute<T>::type;

// Loads / stores a float storage element in its compute type (float, or double for
// float64; device_common's toFloat/fromFloat would round doubles to float).
template <class T>
__device__ __forceinline__ AccOf<T> toAcc(T v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return toFloat(v);
  }
}
template <class T>
__device__ __forceinline__ T fromAcc(AccOf<T> v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return fromFloatSaturating<T>(v);  // int8 / uint8 MaxPool: exact, saturated
  }
}

}  // namespace kiln::cuda
