// Kernels of Resize and Upsample (contract: resize_impl.h; host half: resize.cpp).
// Coordinates, nearest indices and interpolation taps are computed on the device in
// double exactly as the CPU does (no fused multiply-adds where they could move a
// coordinate). Nearest gathers raw elements of any fixed-size type; linear / cubic run
// one separable pass per resized axis in float (double for float64), like the CPU, or,
// for the last two axes alone (or the two before a kept innermost axis: NHWC), both passes
// in one kernel with the same sums.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backends/cuda/ops/op_common.cuh"
#include "backends/cuda/ops/resize_impl.h"
#include "backends/cuda/row_kernels.cuh"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda::resize {
namespace {

__host__ __device__ __forceinline__ int64_t clampIndex(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// The CPU's sourceCoordinate, in double. No product here feeds an addition, so the
// compiler cannot fuse a multiply-add and move a coordinate by an ulp.
__device__ double sourceCoordinate(int mode, const ResizeAxis& a, int64_t y) {
  const double yd = static_cast<double>(y);
  switch (mode) {
    case kAsymmetric:
      return yd / a.scale;
    case kAlignCorners:
      return a.length == 1 ? 0.0 : static_cast<double>(y * (a.inDim - 1)) / (a.length - 1);
    case kPytorchHalfPixel:
      return a.length == 1 ? -0.5 : (yd + 0.5) / a.scale - 0.5;
    case kTfHalfPixelForNn:
      return (yd + 0.5) / a.scale;
    case kHalfPixelSymmetric:
      return a.symmetricOffset + (yd + 0.5) / a.scale - 0.5;
    case kTfCropAndResize: {
      const double span = a.roiEnd - a.roiStart;
      const double x = a.length == 1
                           ? span * static_cast<double>(a.inDim - 1) / 2
                           : yd * span * static_cast<double>(a.inDim - 1) / (a.length - 1);
      return x + a.cropOffset;
    }
    default:
      return (yd + 0.5) / a.scale - 0.5;  // half_pixel
  }
}

__device__ int64_t nearestIndex(int mode, double scale, double x) {
  switch (mode) {
    case kNearestFloor:
      return static_cast<int64_t>(floor(x));
    case kNearestCeil:
      return static_cast<int64_t>(ceil(x));
    case kRoundPreferCeil:
      return static_cast<int64_t>(floor(x + 0.5));
    case kSimple:
      return static_cast<int64_t>(scale < 1 ? ceil(x) : trunc(x));
    default:
      return static_cast<int64_t>(ceil(x - 0.5));  // round_prefer_floor
  }
}

__device__ __forceinline__ bool outsideCrop(int mode, double x, int64_t inDim) {
  return mode == kTfCropAndResize && (x < 0 || x > static_cast<double>(inDim - 1));
}

// Nearest: the input index of every output position of every axis (-1: extrapolate).
__global__ void nearestMapKernel(ResizeSetup s, int64_t* maps, int64_t total) {
  KILN_POOL_GRID_LOOP(e, total) {
    int d = 0;
    while (d + 1 < s.rank && e >= s.axes[d + 1].mapOffset) ++d;
    const ResizeAxis& a = s.axes[d];
    const double x = sourceCoordinate(s.coordMode, a, e - a.mapOffset);
    maps[e] = outsideCrop(s.coordMode, x, a.inDim)
                  ? -1
                  : clampIndex(nearestIndex(s.nearestMode, a.scale, x), 0, a.inDim - 1);
  }
}

template <class T>
__global__ void nearestGatherKernel(const T* in, T* out, ResizeSetup s, const int64_t* maps, T fill,
                                    int64_t total) {
  KILN_POOL_GRID_LOOP(e, total) {
    int64_t rest = e, offset = 0;
    bool border = false;
    for (int d = s.rank - 1; d >= 0; --d) {
      const ResizeAxis& a = s.axes[d];
      const int64_t q = rest / a.outDim;
      const int64_t m = maps[a.mapOffset + (rest - q * a.outDim)];
      rest = q;
      border = border || m < 0;
      offset += m * a.inStride;
    }
    out[e] = border ? fill : in[offset];
  }
}

// The CPU's interpolationWeight; __dmul_rn keeps each product rounded as on the host.
__device__ double interpolationWeight(bool cubic, double a, double t) {
  t = fabs(t);
  if (!cubic) return fmax(0.0, 1 - t);
  if (t <= 1) return __dmul_rn(__dmul_rn(__dmul_rn(a + 2, t) - (a + 3), t), t) + 1;
  if (t < 2) {
    const double inner = __dmul_rn(__dmul_rn(a, t) - __dmul_rn(5.0, a), t) + __dmul_rn(8.0, a);
    return __dmul_rn(inner, t) - __dmul_rn(4.0, a);
  }
  return 0;
}

// The CPU's interpolationTaps: output position y reads weight[y * taps + t] *
// in[index[y * taps + t]], or the extrapolation value when outside[y].
__global__ void resizeTapsKernel(TapsParams tp, int64_t* index, double* weight, uint8_t* outside) {
  const ResizeAxis& a = tp.axis;
  KILN_POOL_GRID_LOOP(y, a.outDim) {
    const double x = sourceCoordinate(tp.coordMode, a, y);
    outside[y] = outsideCrop(tp.coordMode, x, a.inDim) ? 1 : 0;
    double base = floor(x);
    double ratio = x - base;
    if (ratio == 0) {
      base -= 1;
      ratio = 1;
    }
    double sum = 0;
    for (int64_t t = 0; t < tp.taps; ++t) {
      const int64_t i = tp.first + t;
      const int64_t src = static_cast<int64_t>(base) + i;
      double w = interpolationWeight(tp.cubic, tp.cubicA, __dmul_rn(i - ratio, tp.kernelScale));
      if (tp.excludeOutside && (src < 0 || src >= a.inDim)) w = 0;
      sum += w;
      index[y * tp.taps + t] = clampIndex(src, 0, a.inDim - 1);
      weight[y * tp.taps + t] = w;
    }
    if (tp.normalize && sum != 0) {
      for (int64_t t = 0; t < tp.taps; ++t) weight[y * tp.taps + t] /= sum;
    }
  }
}

// One weighted pass along an axis: src [outer, inDim, inner] -> dst [outer, outDim,
// inner]. src / dst are T (the tensors) or the compute type (intermediates).
template <class T>
__global__ void resizePassKernel(const void* src, bool srcIsT, void* dst, bool dstIsT,
                                 int64_t outer, int64_t inDim, int64_t outDim, int64_t inner,
                                 int64_t taps, const int64_t* index, const double* weight,
                                 const uint8_t* outside, double extrapolation) {
  using Acc = AccOf<T>;
  const int64_t total = outer * outDim * inner;
  KILN_POOL_GRID_LOOP(e, total) {
    const int64_t r = e / inner;
    const int64_t i = e - r * inner;
    const int64_t o = r / outDim;
    const int64_t y = r - o * outDim;
    Acc sum = 0;
    if (outside[y]) {
      sum = static_cast<Acc>(extrapolation);
    } else {
      const int64_t base = o * inDim * inner + i;
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t at = base + index[y * taps + t] * inner;
        const Acc v =
            srcIsT ? toAcc(static_cast<const T*>(src)[at]) : static_cast<const Acc*>(src)[at];
        sum += static_cast<Acc>(weight[y * taps + t]) * v;
      }
    }
    if (dstIsT) {
      static_cast<T*>(dst)[e] = fromAcc<T>(sum);
    } else {
      static_cast<Acc*>(dst)[e] = sum;
    }
  }
}

template <class T>
Status gatherNearest(const ResizeSetup& s, const void* in, void* out, const int64_t* maps,
                     const void* fill, int64_t total, cudaStream_t stream) {
  T fillBits{};
  std::memcpy(&fillBits, fill, sizeof(T));
  nearestGatherKernel<T><<<gridFor(total), kBlockSize, 0, stream>>>(
      static_cast<const T*>(in), static_cast<T*>(out), s, maps, fillBits, total);
  KILN_CUDA_CHECK_LAUNCH("nearestGatherKernel");
  return Status::ok();
}

// Both passes of a last-two-axes resize at once (resize_impl.h, Resize2dLaunch): a thread
// per output column x of one output row y of one plane; the row's H taps sit in registers.
template <class T>
__global__ void resize2dKernel(const T* in, T* out, int64_t planes, int64_t inH, int64_t inW,
                               int64_t outH, int64_t outW, int tapsY, const int64_t* indexY,
                               const double* weightY, int tapsX, const int64_t* indexX,
                               const double* weightX) {
  using Acc = AccOf<T>;
  const int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (x >= outW) return;
  for (int64_t y = blockIdx.y; y < outH; y += gridDim.y) {
    int64_t rowOffset[kResize2dMaxTaps];
    Acc rowWeight[kResize2dMaxTaps];
    for (int t = 0; t < tapsY; ++t) {
      rowOffset[t] = indexY[y * tapsY + t] * inW;
      rowWeight[t] = static_cast<Acc>(weightY[y * tapsY + t]);
    }
    for (int64_t p = blockIdx.z; p < planes; p += gridDim.z) {
      const T* plane = in + p * inH * inW;
      Acc sum = 0;
      for (int tx = 0; tx < tapsX; ++tx) {
        const int64_t column = indexX[x * tapsX + tx];
        Acc columnSum = 0;
        for (int ty = 0; ty < tapsY; ++ty)
          columnSum += rowWeight[ty] * toAcc(plane[rowOffset[ty] + column]);
        sum += static_cast<Acc>(weightX[x * tapsX + tx]) * columnSum;
      }
      out[(p * outH + y) * outW + x] = fromAcc<T>(sum);
    }
  }
}

// The same sums with the taps known at compile time (TY rows, TX columns: 2 for linear, 4
// for cubic), for both layouts: [planes, H, W] (inner 1) and [planes, H, W, inner] (NHWC
// images: the two axes before a kept innermost one). A thread computes V adjacent inner
// elements (one vector access each, V > 1 for 16- and 32-bit floats when inner is a
// multiple of V and the buffers are aligned), the taps sit in registers, and every index
// and weight of a block's row is the same for its threads. Adjacent threads write adjacent
// vectors of one output row.
template <class T, int TY, int TX, int V>
__global__ void resize2dFixedTapsKernel(const T* in, T* out, int64_t planes, int64_t inH,
                                        int64_t inW, int64_t outH, int64_t outW, int64_t inner,
                                        uint32_t packsPerColumn, const int64_t* indexY,
                                        const double* weightY, const int64_t* indexX,
                                        const double* weightX) {
  using Acc = AccOf<T>;
  const int64_t rowPacks = outW * packsPerColumn;
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= rowPacks) return;
  const uint32_t x =
      packsPerColumn == 1 ? static_cast<uint32_t>(e) : static_cast<uint32_t>(e) / packsPerColumn;
  const int64_t c = (static_cast<uint32_t>(e) - x * packsPerColumn) * int64_t(V);
  int64_t column[TX];
  Acc columnWeight[TX];
#pragma unroll
  for (int t = 0; t < TX; ++t) {
    column[t] = indexX[int64_t(x) * TX + t] * inner + c;
    columnWeight[t] = static_cast<Acc>(weightX[int64_t(x) * TX + t]);
  }
  const int64_t inRow = inW * inner, outRow = outW * inner;
  for (int64_t y = blockIdx.y; y < outH; y += gridDim.y) {
    int64_t row[TY];
    Acc rowWeight[TY];
#pragma unroll
    for (int t = 0; t < TY; ++t) {
      row[t] = indexY[y * TY + t] * inRow;
      rowWeight[t] = static_cast<Acc>(weightY[y * TY + t]);
    }
    for (int64_t p = blockIdx.z; p < planes; p += gridDim.z) {
      const T* plane = in + p * inH * inRow;
      float sum[V];
#pragma unroll
      for (int j = 0; j < V; ++j) sum[j] = 0;
      Acc total[V];
#pragma unroll
      for (int j = 0; j < V; ++j) total[j] = 0;
#pragma unroll
      for (int tx = 0; tx < TX; ++tx) {
        Acc columnSum[V];
#pragma unroll
        for (int j = 0; j < V; ++j) columnSum[j] = 0;
#pragma unroll
        for (int ty = 0; ty < TY; ++ty) {
          if constexpr (V == 1) {
            columnSum[0] += rowWeight[ty] * toAcc(plane[row[ty] + column[tx]]);
          } else {
            float v[V];
            loadPack<V>(plane + row[ty] + column[tx], 0, 1, v);
#pragma unroll
            for (int j = 0; j < V; ++j) columnSum[j] += rowWeight[ty] * v[j];
          }
        }
#pragma unroll
        for (int j = 0; j < V; ++j) total[j] += columnWeight[tx] * columnSum[j];
      }
      T* target = out + (p * outH + y) * outRow + x * inner + c;
      if constexpr (V == 1) {
        *target = fromAcc<T>(total[0]);
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j) sum[j] = total[j];
        storePack<V>(target, 0, sum);
      }
    }
  }
}

// The storage types the pass kernel is instantiated for (dispatchDeviceType calls its
// function only with a type of kInterpolatedTypes; the other instantiations are never
// reached).
template <class T>
constexpr bool kIsFloatStorage = std::is_same_v<T, float> || std::is_same_v<T, __half> ||
                                 std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, double>;

// The fixed-taps kernel for `args` when it has one (linear or cubic taps on both axes);
// kNotFound otherwise (the general kernel then runs: antialiasing's wider taps, float64).
template <class T>
Status launchFixedTaps(const Resize2dLaunch& args, cudaStream_t stream) {
  const int64_t ty = args.rows.taps.taps, tx = args.columns.taps.taps;
  if (ty != tx || (ty != 2 && ty != 4) || std::is_same_v<T, double>)
    return Status(StatusCode::kNotFound, "no fixed-taps kernel");
  const int64_t inner = args.inner, outW = args.columns.taps.axis.outDim;
  constexpr int kVector = sizeof(T) == 2 ? 8 : 4;
  const bool vectors = inner % kVector == 0 &&
                       reinterpret_cast<uintptr_t>(args.in) % (kVector * sizeof(T)) == 0 &&
                       reinterpret_cast<uintptr_t>(args.out) % (kVector * sizeof(T)) == 0;
  const int64_t packsPerColumn = vectors ? inner / kVector : inner;
  const int64_t rowPacks = outW * packsPerColumn;
  if (rowPacks >= (int64_t(1) << 32))
    return Status(StatusCode::kUnsupported, "resize2d: an output row of 2^32 vectors");
  constexpr int kThreads = 128;
  const dim3 grid(static_cast<unsigned>((rowPacks + kThreads - 1) / kThreads),
                  static_cast<unsigned>(std::min<int64_t>(args.rows.taps.axis.outDim, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(args.planes, 65535)));
  auto launch = [&](auto kernel) {
    kernel<<<grid, kThreads, 0, stream>>>(
        static_cast<const T*>(args.in), static_cast<T*>(args.out), args.planes,
        args.rows.taps.axis.inDim, args.columns.taps.axis.inDim, args.rows.taps.axis.outDim, outW,
        inner, static_cast<uint32_t>(packsPerColumn), args.rows.index, args.rows.weight,
        args.columns.index, args.columns.weight);
    KILN_CUDA_CHECK_LAUNCH("resize2dFixedTapsKernel");
    return Status::ok();
  };
  if (ty == 2)
    return vectors ? launch(resize2dFixedTapsKernel<T, 2, 2, kVector>)
                   : launch(resize2dFixedTapsKernel<T, 2, 2, 1>);
  return vectors ? launch(resize2dFixedTapsKernel<T, 4, 4, kVector>)
                 : launch(resize2dFixedTapsKernel<T, 4, 4, 1>);
}

}  // namespace

Status launchNearestMap(const ResizeSetup& s, int64_t* maps, int64_t mapEntries,
                        cudaStream_t stream) {
  nearestMapKernel<<<gridFor(mapEntries), kBlockSize, 0, stream>>>(s, maps, mapEntries);
  KILN_CUDA_CHECK_LAUNCH("nearestMapKernel");
  return Status::ok();
}

// Dispatch on the element's size only: nearest moves bytes.
Status launchNearestGather(const ResizeSetup& s, DataType type, const void* in, void* out,
                           const int64_t* maps, const void* fill, int64_t total,
                           cudaStream_t stream) {
  return dispatchWord(type, [&](auto word) {
    return gatherNearest<decltype(word)>(s, in, out, maps, fill, total, stream);
  });
}

Status launchResizePass(const ResizePassLaunch& args, cudaStream_t stream) {
  const TapsParams& tp = args.taps;
  return dispatchDeviceType<kInterpolatedTypes>(args.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (kIsFloatStorage<T>) {
      resizeTapsKernel<<<gridFor(tp.axis.outDim), kBlockSize, 0, stream>>>(
          tp, args.index, args.weight, args.outside);
      KILN_CUDA_CHECK_LAUNCH("resizeTapsKernel");
      resizePassKernel<T><<<gridFor(args.outNumel), kBlockSize, 0, stream>>>(
          args.src, args.srcIsT, args.dst, args.dstIsT, args.outer, tp.axis.inDim, tp.axis.outDim,
          args.inner, tp.taps, args.index, args.weight, args.outside, args.extrapolation);
      KILN_CUDA_CHECK_LAUNCH("resizePassKernel");
      return Status::ok();
    } else {
      return Status(StatusCode::kUnsupported, std::string("data type ") + dataTypeName(args.type));
    }
  });
}

Status launchResize2d(const Resize2dLaunch& args, cudaStream_t stream) {
  const TapsParams& ty = args.rows.taps;
  const TapsParams& tx = args.columns.taps;
  if (ty.taps > kResize2dMaxTaps || tx.taps > kResize2dMaxTaps)
    return Status(StatusCode::kInternal, "resize2d: more taps than kResize2dMaxTaps");
  return dispatchDeviceType<kInterpolatedTypes>(args.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (kIsFloatStorage<T>) {
      for (const ResizePassLaunch* pass : {&args.rows, &args.columns}) {
        resizeTapsKernel<<<gridFor(pass->taps.axis.outDim), kBlockSize, 0, stream>>>(
            pass->taps, pass->index, pass->weight, pass->outside);
        KILN_CUDA_CHECK_LAUNCH("resizeTapsKernel");
      }
      const int64_t outW = tx.axis.outDim, outH = ty.axis.outDim;
      constexpr int kThreads = 128;
      if (const Status fixed = launchFixedTaps<T>(args, stream);
          fixed.code() != StatusCode::kNotFound)
        return fixed;
      if (args.inner > 1)
        return Status(StatusCode::kInternal, "resize2d: no kernel for these taps of NHWC storage");
      const dim3 grid(static_cast<unsigned>((outW + kThreads - 1) / kThreads),
                      static_cast<unsigned>(std::min<int64_t>(outH, 65535)),
                      static_cast<unsigned>(std::min<int64_t>(args.planes, 65535)));
      resize2dKernel<T><<<grid, kThreads, 0, stream>>>(
          static_cast<const T*>(args.in), static_cast<T*>(args.out), args.planes, ty.axis.inDim,
          tx.axis.inDim, outH, outW, static_cast<int>(ty.taps), args.rows.index, args.rows.weight,
          static_cast<int>(tx.taps), args.columns.index, args.columns.weight);
      KILN_CUDA_CHECK_LAUNCH("resize2dKernel");
      return Status::ok();
    } else {
      return Status(StatusCode::kUnsupported, std::string("data type ") + dataTypeName(args.type));
    }
  });
}

}  // namespace kiln::cuda::resize
