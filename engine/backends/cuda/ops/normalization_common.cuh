// What the normalization kernels share on the device (normalization_impl.cu:
// BatchNormalization, Instance/GroupNormalization, LayerNormalization, RMSNormalization;
// lp_mvn_lrn_impl.cu: LpNormalization, MeanVarianceNormalization, LRN): row reductions and
// moments, broadcast parameter offsets, and the host index's conversion to ShapeInfo. The
// host checks and the support predicate are normalization_common.h's. Included by the
// family's _impl.cu files only.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/normalization_common.h"
#include "backends/cuda/row_kernels.cuh"

namespace kiln::cuda {
namespace nm {

// ---- Shared device helpers -----------------------------------------------------

// Compute type: double for double, float otherwise.
template <class T>
using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class C>
__device__ __forceinline__ C mathPow(C base, C exponent) {
  if constexpr (std::is_same_v<C, float>)
    return powf(base, exponent);
  else
    return pow(base, exponent);
}

// Sums `v` across the row group; every thread gets the result. `partial` holds one
// value per warp (block mode only).
template <class C>
__device__ __forceinline__ C groupSum(C v, bool warpMode, C* partial) {
#pragma unroll
  for (int mask = 16; mask >= 1; mask >>= 1) v += __shfl_xor_sync(kFullMask, v, mask);
  if (warpMode) return v;
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (threadIdx.x % 32 == 0) partial[warp] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < warps; ++w) v += partial[w];
  __syncthreads();  // `partial` is reused by the next call
  return v;
}

// Mean and population variance of a row of n elements `stride` apart, two-pass.
template <class C, class T>
__device__ __forceinline__ void rowMoments(const T* x, int64_t n, const RowGroup& g, bool warpMode,
                                           C* partial, C* mean, C* var) {
  C sum = C(0);
  for (int64_t k = g.lane; k < n; k += g.size) sum += loadAs<C>(x, k);
  sum = groupSum(sum, warpMode, partial);
  const C m = n > 0 ? sum / C(n) : C(0);
  C squares = C(0);
  for (int64_t k = g.lane; k < n; k += g.size) {
    const C d = loadAs<C>(x, k) - m;
    squares += d * d;
  }
  squares = groupSum(squares, warpMode, partial);
  *mean = m;
  *var = n > 0 ? squares / C(n) : C(0);
}

// Where a parameter element sits: `direct` when it is laid out like the elements it
// scales (offset = index), else broadcast through `info`.
struct ParamMap {
  ShapeInfo info;
  bool direct = true;
};
__device__ __forceinline__ int64_t paramOffset(const ParamMap& map, int64_t i) {
  return map.direct ? i : stridedOffset(map.info, i);
}

}  // namespace nm
}  // namespace kiln::cuda
