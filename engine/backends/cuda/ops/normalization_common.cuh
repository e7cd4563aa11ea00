// What the normalization kernels share (normalization.cu: BatchNormalization,
// Instance/GroupNormalization, LayerNormalization, RMSNormalization; lp_mvn_lrn.cu:
// LpNormalization, MeanVarianceNormalization, LRN): row reductions and moments on the device,
// input and shape checks and the support predicate on the host. Internal to kiln_cuda.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/op_common.cuh"
#include "backends/cuda/ops/layer_norm_packed.h"
#include "backends/cuda/row_kernels.cuh"
#include "ops/axis_params.h"
#include "ops/normalization_params.h"

namespace kiln::cuda {

// LpNormalization, MeanVarianceNormalization, LRN (lp_mvn_lrn.cu);
// registerNormalizationGpuKernels calls it.
void registerLpMvnLrnGpuKernels(GpuKernelRegistry& registry);

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

// ---- Host helpers ----------------------------------------------------------------

inline Status requireNumel(const GpuKernelContext& ctx, const DeviceTensor& t, const char* name,
                           int64_t n) {
  if (t.numel() == n) return Status::ok();
  return ctx.error(std::string("input '") + name + "' has shape " + shapeToString(t.shape) +
                   ", expected " + std::to_string(n) + " elements");
}

// Parameters are read in X's storage type (the predicates make sure of it).
inline Status requireSameType(const GpuKernelContext& ctx, const DeviceTensor& x,
                              const DeviceTensor& t, const char* name) {
  if (t.type == x.type) return Status::ok();
  return ctx.unsupported(std::string("input '") + name + "' of type " + dataTypeName(t.type) +
                         " with X of type " + dataTypeName(x.type));
}

// (N, C, spatial...) split into N, C and the spatial element count S.
struct NcsShape {
  int64_t n = 1, c = 1, s = 1;
};
inline Status splitNcs(const GpuKernelContext& ctx, const DeviceTensor& x, NcsShape* out) {
  if (x.rank() < 2)
    return ctx.error("input 'X' must have rank >= 2, got " + shapeToString(x.shape));
  out->n = x.shape[0];
  out->c = x.shape[1];
  out->s = 1;
  for (int d = 2; d < x.rank(); ++d) out->s *= x.shape[d];
  return Status::ok();
}

// "" when every present input is a float type and all share one type.
inline std::string supportsSameFloatType(const Node& node, const std::vector<DataType>& types) {
  DataType first = DataType::kUndefined;
  for (DataType t : types) {
    if (t == DataType::kUndefined) continue;
    if (!isFloatData(t))
      return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(t);
    if (first == DataType::kUndefined) first = t;
    if (t != first) return "inputs of mixed float types";
  }
  return "";
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
