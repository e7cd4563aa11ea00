// The device half of BatchNormalization (inference), InstanceNormalization,
// GroupNormalization, LayerNormalization and RMSNormalization (the host half and the
// family's contract: normalization.cpp; the launchers' contract: normalization_impl.h).
// Statistics are computed in float (double for double) with two passes (mean, then the mean
// squared deviation). Row-wise norms give each normalized row a warp (rows up to
// kWarpRowLimit elements) or a whole block.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/ops/normalization_common.cuh"
#include "backends/cuda/ops/normalization_impl.h"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda {
namespace {

using namespace nm;

// ---- BatchNormalization --------------------------------------------------------

// y = x * a + (bias - mean * a), a = scale / sqrt(var + epsilon); parameter k of
// element i is (i / run) % params.
template <class T>
__global__ void batchNormApply(const T* x, T* y, const T* scale, const T* bias, const T* mean,
                               const T* var, int64_t numel, int64_t run, int64_t params,
                               Compute<T> epsilon) {
  using C = Compute<T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < numel;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = (i / run) % params;
    const C a = loadAs<C>(scale, k) / mathSqrt(loadAs<C>(var, k) + epsilon);
    const C b = loadAs<C>(bias, k) - loadAs<C>(mean, k) * a;
    y[i] = storeAs<T>(loadAs<C>(x, i) * a + b);
  }
}

// ---- InstanceNormalization / GroupNormalization ---------------------------------

template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    groupNormRows(const T* x, T* y, const T* scale, const T* bias, GroupNormArgs args,
                  bool warpMode) {
  using C = Compute<T>;
  __shared__ C partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < args.rows; row += g.step) {
    const T* xr = x + row * args.rowLength;
    T* yr = y + row * args.rowLength;
    C mean, var;
    rowMoments(xr, args.rowLength, g, warpMode, partial, &mean, &var);
    const C invStd = C(1) / mathSqrt(var + C(args.epsilon));
    const int64_t group = row % args.groups;
    for (int64_t k = g.lane; k < args.rowLength; k += g.size) {
      const int64_t p = args.perGroupParams ? group : group * args.perGroup + k / args.spatial;
      const C a = loadAs<C>(scale, p) * invStd;
      yr[k] = storeAs<T>(loadAs<C>(xr, k) * a + (loadAs<C>(bias, p) - mean * a));
    }
  }
}

// ---- LayerNormalization --------------------------------------------------------

// Writes a statistic in the output's storage type.
template <class C>
__device__ __forceinline__ void storeStat(void* p, DataType type, int64_t i, C v) {
  switch (type) {
    case DataType::kFloat16:
      static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v));
      break;
    case DataType::kBFloat16:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v));
      break;
    case DataType::kFloat64:
      static_cast<double*>(p)[i] = static_cast<double>(v);
      break;
    default:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
  }
}

struct LayerNormArgs {
  int64_t rows = 0, cols = 0;
  ParamMap scaleMap, biasMap;
  double epsilon = 1e-5;
  void* meanOut = nullptr;  // optional statistics outputs, one per row
  void* invStdOut = nullptr;
  DataType statType = DataType::kFloat32;
};

template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    layerNormRows(const T* x, T* y, const T* scale, const T* bias, LayerNormArgs args,
                  bool warpMode) {
  using C = Compute<T>;
  __shared__ C partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < args.rows; row += g.step) {
    const T* xr = x + row * args.cols;
    T* yr = y + row * args.cols;
    C mean, var;
    rowMoments(xr, args.cols, g, warpMode, partial, &mean, &var);
    const C invStd = C(1) / mathSqrt(var + C(args.epsilon));
    for (int64_t k = g.lane; k < args.cols; k += g.size) {
      C v = (loadAs<C>(xr, k) - mean) * invStd * loadAs<C>(scale, paramOffset(args.scaleMap, k));
      if (bias) v += loadAs<C>(bias, paramOffset(args.biasMap, k));
      yr[k] = storeAs<T>(v);
    }
    if (g.lane == 0) {
      if (args.meanOut) storeStat(args.meanOut, args.statType, row, mean);
      if (args.invStdOut) storeStat(args.invStdOut, args.statType, row, invStd);
    }
  }
}

// ---- RMSNormalization ----------------------------------------------------------

// Y = round_T(X / sqrt(mean(X^2) + epsilon)) * scale, scale broadcast onto X (`direct`:
// one value per element of a row; else through the full index).
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    rmsNormRows(const T* x, const T* scale, T* y, int64_t rows, int64_t cols, ParamMap scaleMap,
                double epsilon, bool warpMode) {
  using C = Compute<T>;
  __shared__ C partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < rows; row += g.step) {
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    C sum = C(0);
    for (int64_t k = g.lane; k < cols; k += g.size) {
      const C v = loadAs<C>(xr, k);
      sum += v * v;
    }
    sum = groupSum(sum, warpMode, partial);
    const C meanSquare = cols > 0 ? sum / C(cols) : C(0);
    const C inv = C(1) / mathSqrt(meanSquare + C(epsilon));
    for (int64_t k = g.lane; k < cols; k += g.size) {
      // The spec casts the normalized value back to X's type before scaling.
      const T rounded = storeAs<T>(loadAs<C>(xr, k) * inv);
      const C normalized = loadAs<C>(&rounded, 0);
      const int64_t s = scaleMap.direct ? k : stridedOffset(scaleMap.info, row * cols + k);
      yr[k] = storeAs<T>(normalized * loadAs<C>(scale, s));
    }
  }
}

// The kernels' ParamMap of the host's ParamBroadcast.
ParamMap toParamMap(const ParamBroadcast& broadcast) {
  ParamMap map;
  map.info = broadcast.index;
  map.direct = broadcast.direct;
  return map;
}

}  // namespace

namespace nm {

Status launchBatchNorm(const BatchNormLaunch& l, cudaStream_t stream) {
  return dispatchDeviceType<device_types::kFloats>(l.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    batchNormApply<T><<<gridFor(l.numel), kBlockSize, 0, stream>>>(
        static_cast<const T*>(l.x), static_cast<T*>(l.y), static_cast<const T*>(l.scale),
        static_cast<const T*>(l.bias), static_cast<const T*>(l.mean), static_cast<const T*>(l.var),
        l.numel, l.run, l.params, static_cast<Compute<T>>(l.epsilon));
    KILN_CUDA_CHECK_LAUNCH("batchNormApply");
    return Status::ok();
  });
}

Status launchGroupNorm(const GroupNormLaunch& l, cudaStream_t stream) {
  const RowGeometry geo = rowGeometry(l.args.rows, l.args.rowLength);
  return dispatchDeviceType<device_types::kFloats>(l.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    groupNormRows<T><<<geo.grid, geo.block, 0, stream>>>(
        static_cast<const T*>(l.x), static_cast<T*>(l.y), static_cast<const T*>(l.scale),
        static_cast<const T*>(l.bias), l.args, geo.warpMode);
    KILN_CUDA_CHECK_LAUNCH("groupNormRows");
    return Status::ok();
  });
}

Status launchLayerNormRows(const LayerNormLaunch& l, cudaStream_t stream) {
  LayerNormArgs args;
  args.rows = l.rows;
  args.cols = l.cols;
  args.scaleMap = toParamMap(l.scaleMap);
  args.biasMap = toParamMap(l.biasMap);
  args.epsilon = l.epsilon;
  args.meanOut = l.meanOut;
  args.invStdOut = l.invStdOut;
  args.statType = l.statType;
  const RowGeometry geo = rowGeometry(args.rows, args.cols);
  return dispatchDeviceType<device_types::kFloats>(l.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    layerNormRows<T><<<geo.grid, geo.block, 0, stream>>>(
        static_cast<const T*>(l.x), static_cast<T*>(l.y), static_cast<const T*>(l.scale),
        static_cast<const T*>(l.bias), args, geo.warpMode);
    KILN_CUDA_CHECK_LAUNCH("layerNormRows");
    return Status::ok();
  });
}

Status launchRmsNorm(const RmsNormLaunch& l, cudaStream_t stream) {
  const ParamMap scaleMap = toParamMap(l.scaleMap);
  const RowGeometry geo = rowGeometry(l.rows, l.cols);
  return dispatchDeviceType<device_types::kFloats>(l.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    rmsNormRows<T><<<geo.grid, geo.block, 0, stream>>>(
        static_cast<const T*>(l.x), static_cast<const T*>(l.scale), static_cast<T*>(l.y), l.rows,
        l.cols, scaleMap, l.epsilon, geo.warpMode);
    KILN_CUDA_CHECK_LAUNCH("rmsNormRows");
    return Status::ok();
  });
}

}  // namespace nm
}  // namespace kiln::cuda
