// Kernels of the channels-first pools (contract: pool_impl.h; host half: pool.cpp):
// MaxPool / AveragePool / LpPool (1-3 spatial axes): one thread per output element walks
// its window in the CPU's order, so MaxPool's value and Indices (first maximum, row- or
// column-major) are exact. Sums are in float (double for float64 data). MaxPool also
// pools int8 / uint8 (compared in float, exactly; an empty window gives the type's
// lowest, as the CPU's). GlobalAveragePool / GlobalMaxPool / GlobalLpPool: one warp
// (small planes) or one block (large planes) reduces each (n, c) plane.
#include <limits>
#include <type_traits>

#include "backends/cuda/ops/op_common.cuh"
#include "backends/cuda/ops/pool_impl.h"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda::pool {
namespace {

__device__ __forceinline__ float mathAbs(float v) {
  return fabsf(v);
}
__device__ __forceinline__ double mathAbs(double v) {
  return fabs(v);
}
__device__ __forceinline__ float mathPow(float a, float b) {
  return powf(a, b);
}
__device__ __forceinline__ double mathPow(double a, double b) {
  return pow(a, b);
}
__device__ __forceinline__ float mathSqrt(float v) {
  return sqrtf(v);
}
__device__ __forceinline__ double mathSqrt(double v) {
  return sqrt(v);
}

// Taps [lo, hi) of a window of `count` taps at `offset` + k * stride inside [0, limit).
__device__ __forceinline__ void windowRange(int64_t offset, int64_t stride, int64_t limit,
                                            int64_t count, int64_t* lo, int64_t* hi) {
  *lo = offset >= 0 ? 0 : min(count, (-offset + stride - 1) / stride);
  *hi = offset >= limit ? 0 : min(count, (limit - 1 - offset) / stride + 1);
  *hi = max(*hi, *lo);
}

// |v|^p of LpPool, exact for the common p = 1 and p = 2.
template <class A>
__device__ __forceinline__ A lpTerm(A v, A p) {
  const A a = mathAbs(v);
  return p == A(2) ? a * a : (p == A(1) ? a : mathPow(a, p));
}
template <class A>
__device__ __forceinline__ A lpRoot(A sum, A p) {
  return p == A(2) ? mathSqrt(sum) : (p == A(1) ? sum : mathPow(sum, A(1) / p));
}

// One thread per output element; the window is walked in the CPU's order.
template <class T>
__global__ void poolWindowKernel(const T* x, T* y, int64_t* indices, PoolParams pp) {
  using Acc = AccOf<T>;
  const Acc p = static_cast<Acc>(pp.p);
  const int64_t total = pp.planes * pp.outSize;
  KILN_POOL_GRID_LOOP(e, total) {
    const int64_t plane = e / pp.outSize;
    int64_t rest = e - plane * pp.outSize;
    int64_t o[3];
    o[2] = rest % pp.out[2];
    rest /= pp.out[2];
    o[1] = rest % pp.out[1];
    o[0] = rest / pp.out[1];
    int64_t start[3], lo[3], hi[3];
    int64_t count = 1;
    for (int a = 0; a < 3; ++a) {
      start[a] = o[a] * pp.stride[a] - pp.padBegin[a];
      windowRange(start[a], pp.dilation[a], pp.in[a], pp.kernel[a], &lo[a], &hi[a]);
      if (pp.countIncludePad) {
        int64_t padLo, padHi;
        windowRange(start[a] + pp.padBegin[a], pp.dilation[a],
                    pp.in[a] + pp.padBegin[a] + pp.padEnd[a], pp.kernel[a], &padLo, &padHi);
        count *= padHi - padLo;
      } else {
        count *= hi[a] - lo[a];
      }
    }
    const T* xp = x + plane * pp.inSize;
    Acc best = std::numeric_limits<Acc>::lowest();
    Acc sum = 0;
    int64_t bestIndex = -1;
    for (int64_t k0 = lo[0]; k0 < hi[0]; ++k0) {
      const int64_t i0 = start[0] + k0 * pp.dilation[0];
      for (int64_t k1 = lo[1]; k1 < hi[1]; ++k1) {
        const int64_t i1 = start[1] + k1 * pp.dilation[1];
        const T* row = xp + (i0 * pp.in[1] + i1) * pp.in[2];
        for (int64_t k2 = lo[2]; k2 < hi[2]; ++k2) {
          const int64_t i2 = start[2] + k2 * pp.dilation[2];
          const Acc v = toAcc(row[i2]);
          if (pp.kind == kPoolMax) {
            if (bestIndex < 0 || v > best) {
              best = v;
              bestIndex = pp.columnMajor ? (i2 * pp.in[1] + i1) * pp.in[0] + i0
                                         : (i0 * pp.in[1] + i1) * pp.in[2] + i2;
            }
          } else if (pp.kind == kPoolAverage) {
            sum += v;
          } else {
            sum += lpTerm(v, p);
          }
        }
      }
    }
    if (pp.kind == kPoolMax) {
      y[e] = fromAcc<T>(best);
      if (indices) indices[e] = plane * pp.inSize + (bestIndex < 0 ? 0 : bestIndex);
    } else if (pp.kind == kPoolAverage) {
      y[e] = fromAcc<T>(count > 0 ? sum / static_cast<Acc>(count) : Acc(0));
    } else {
      y[e] = fromAcc<T>(lpRoot(sum, p));
    }
  }
}

// Max that ignores NaN on either side (NaN only when both are).
template <class A>
__device__ __forceinline__ A maxIgnoringNan(A a, A b) {
  return (a != a || b > a) ? b : a;
}

template <class A>
__device__ __forceinline__ A warpCombine(A v, int kind) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const A other = __shfl_down_sync(0xffffffffu, v, offset);
    v = kind == kPoolMax ? maxIgnoringNan(v, other) : v + other;
  }
  return v;
}

// Global pooling: `warpsPerPlane` warps (1, or all of the block) reduce one plane.
// Max keeps the CPU's semantics: the first element when it is NaN, else the largest
// non-NaN element.
template <class T>
__global__ void globalPoolReduceKernel(const T* x, T* y, int64_t planes, int64_t size, int kind,
                                       double pValue, int warpsPerPlane) {
  using Acc = AccOf<T>;
  __shared__ Acc partial[32];
  const Acc p = static_cast<Acc>(pValue);
  const Acc identity = kind == kPoolMax ? std::numeric_limits<Acc>::quiet_NaN() : Acc(0);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int planesPerBlock = (blockDim.x >> 5) / warpsPerPlane;
  const int group = warp / warpsPerPlane;
  const int groupSize = warpsPerPlane * 32;
  const int groupThread = threadIdx.x - group * groupSize;
  for (int64_t plane = int64_t(blockIdx.x) * planesPerBlock + group; plane < planes;
       plane += int64_t(gridDim.x) * planesPerBlock) {
    const T* xp = x + plane * size;
    Acc acc = identity;
    for (int64_t i = groupThread; i < size; i += groupSize) {
      const Acc v = toAcc(xp[i]);
      if (kind == kPoolMax) {
        acc = maxIgnoringNan(acc, v);
      } else {
        acc += kind == kPoolAverage ? v : lpTerm(v, p);
      }
    }
    acc = warpCombine(acc, kind);
    if (warpsPerPlane > 1) {  // then the whole block holds this plane: uniform syncs
      if (lane == 0) partial[warp] = acc;
      __syncthreads();
      if (warp == 0) {
        acc = lane < warpsPerPlane ? partial[lane] : identity;
        acc = warpCombine(acc, kind);
      }
      __syncthreads();
    }
    if (groupThread == 0) {
      Acc result;
      if (kind == kPoolMax) {
        const Acc first = toAcc(xp[0]);
        result = first != first ? first : acc;
      } else if (kind == kPoolAverage) {
        result = acc / static_cast<Acc>(size);
      } else {
        result = lpRoot(acc, p);
      }
      y[plane] = fromAcc<T>(result);
    }
  }
}

// The storage types the kernels are instantiated for (dispatchDeviceType calls its
// function only with a type of the set; the other instantiations are never reached).
template <class T>
constexpr bool kIsFloatStorage = std::is_same_v<T, float> || std::is_same_v<T, __half> ||
                                 std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, double>;
template <class T>
constexpr bool kIsPoolWindowType =
    kIsFloatStorage<T> || std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>;

Status outsideTheSet(DataType type) {
  return Status(StatusCode::kUnsupported, std::string("data type ") + dataTypeName(type));
}

}  // namespace

Status launchPoolWindow(const PoolParams& pp, DataType type, const void* x, void* y,
                        int64_t* indices, cudaStream_t stream) {
  return dispatchDeviceType<kPoolWindowTypes>(type, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (kIsPoolWindowType<T>) {
      const int64_t total = pp.planes * pp.outSize;
      poolWindowKernel<T><<<gridFor(total), kBlockSize, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), indices, pp);
      KILN_CUDA_CHECK_LAUNCH("poolWindowKernel");
      return Status::ok();
    } else {
      return outsideTheSet(type);
    }
  });
}

Status launchGlobalPool(DataType type, const void* x, void* y, int64_t planes, int64_t size,
                        int kind, double p, cudaStream_t stream) {
  return dispatchDeviceType<kGlobalPoolTypes>(type, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (kIsFloatStorage<T>) {
      // A warp per plane for small planes (ResNet's 7x7), the whole block otherwise.
      const int warpsPerPlane = size <= 1024 ? 1 : kBlockSize / 32;
      const int planesPerBlock = (kBlockSize / 32) / warpsPerPlane;
      globalPoolReduceKernel<T><<<gridFor(planes, planesPerBlock), kBlockSize, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), planes, size, kind, p, warpsPerPlane);
      KILN_CUDA_CHECK_LAUNCH("globalPoolReduceKernel");
      return Status::ok();
    } else {
      return outsideTheSet(type);
    }
  });
}

}  // namespace kiln::cuda::pool
