// The device half of LpNormalization, MeanVarianceNormalization and LRN (the host half:
// lp_mvn_lrn.cpp; the launchers' contract: lp_mvn_lrn_impl.h; the family's contract is
// normalization.cpp's header comment).
#include "backends/cuda/ops/lp_mvn_lrn_impl.h"
#include "backends/cuda/ops/normalization_common.cuh"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda {
namespace {

using namespace nm;

// ---- LpNormalization -----------------------------------------------------------

template <class C>
__device__ __forceinline__ C lpTerm(C v, int p) {
  return p == 1 ? (v < C(0) ? -v : v) : v * v;
}

// A zero vector stays zero rather than becoming 0/0 = NaN.
template <class C>
__device__ __forceinline__ C lpScale(C accumulated, int p) {
  const C norm = p == 2 ? mathSqrt(accumulated) : accumulated;
  return norm == C(0) ? C(0) : C(1) / norm;
}

// [rows, n] contiguous rows.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    lpNormRowsKernel(const T* x, T* y, int64_t rows, int64_t n, int p, bool warpMode) {
  using C = Compute<T>;
  __shared__ C partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < rows; row += g.step) {
    const T* xr = x + row * n;
    T* yr = y + row * n;
    C sum = C(0);
    for (int64_t k = g.lane; k < n; k += g.size) sum += lpTerm(loadAs<C>(xr, k), p);
    const C scale = lpScale(groupSum(sum, warpMode, partial), p);
    for (int64_t k = g.lane; k < n; k += g.size) yr[k] = storeAs<T>(loadAs<C>(xr, k) * scale);
  }
}

// [outer, n, inner], inner > 1: one thread per column of n elements `inner` apart.
template <class T>
__global__ void lpNormColumnsKernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner,
                                    int p) {
  using C = Compute<T>;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < outer * inner;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = idx / inner, i = idx - o * inner;
    const int64_t base = o * n * inner + i;
    C sum = C(0);
    for (int64_t k = 0; k < n; ++k) sum += lpTerm(loadAs<C>(x, base + k * inner), p);
    const C scale = lpScale(sum, p);
    for (int64_t k = 0; k < n; ++k)
      y[base + k * inner] = storeAs<T>(loadAs<C>(x, base + k * inner) * scale);
  }
}

// ---- MeanVarianceNormalization -------------------------------------------------

// One row group per statistics element: its `count` elements sit at
// stridedOffset(kept, row) + stridedOffset(reduced, r). Y = (X - mean) /
// (sqrt(variance) + 1e-9), or X - mean without normalizeVariance.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    mvnRows(const T* x, T* y, ShapeInfo kept, ShapeInfo reduced, int64_t rows, int64_t count,
            bool normalizeVariance, bool warpMode) {
  using C = Compute<T>;
  __shared__ C partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < rows; row += g.step) {
    const int64_t base = stridedOffset(kept, row);
    C sum = C(0);
    for (int64_t r = g.lane; r < count; r += g.size)
      sum += loadAs<C>(x, base + stridedOffset(reduced, r));
    const C mean = groupSum(sum, warpMode, partial) / C(count);
    C squares = C(0);
    for (int64_t r = g.lane; r < count; r += g.size) {
      const C d = loadAs<C>(x, base + stridedOffset(reduced, r)) - mean;
      squares += d * d;
    }
    squares = groupSum(squares, warpMode, partial);
    const C scale = normalizeVariance ? C(1) / (mathSqrt(squares / C(count)) + C(1e-9)) : C(1);
    for (int64_t r = g.lane; r < count; r += g.size) {
      const int64_t offset = base + stridedOffset(reduced, r);
      y[offset] = storeAs<T>((loadAs<C>(x, offset) - mean) * scale);
    }
  }
}

// ---- LRN -----------------------------------------------------------------------

// y = x / (bias + alpha / size * sum of x^2 over channels [c - lo, c + hi])^beta
// with lo = floor((size - 1) / 2), hi = ceil((size - 1) / 2), clipped to [0, C).
template <class T>
__global__ void lrnApply(const T* x, T* y, LrnArgs args) {
  using C = Compute<T>;
  const int64_t lo = (args.size - 1) / 2;
  const int64_t hi = args.size - 1 - lo;
  const C alphaOverSize = C(args.alpha / static_cast<double>(args.size));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < args.numel;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = i % args.spatial;
    const int64_t c = (i / args.spatial) % args.channels;
    const int64_t batchBase = i - s - c * args.spatial;
    const int64_t first = c - lo < 0 ? 0 : c - lo;
    const int64_t last = c + hi > args.channels - 1 ? args.channels - 1 : c + hi;
    C sum = C(0);
    for (int64_t k = first; k <= last; ++k) {
      const C v = loadAs<C>(x, batchBase + k * args.spatial + s);
      sum += v * v;
    }
    y[i] = storeAs<T>(loadAs<C>(x, i) / mathPow(C(args.bias) + alphaOverSize * sum, C(args.beta)));
  }
}

}  // namespace

namespace nm {

Status launchLpNorm(const LpNormLaunch& l, cudaStream_t stream) {
  return dispatchDeviceType<device_types::kFloats>(l.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(l.x);
    T* y = static_cast<T*>(l.y);
    if (l.inner == 1) {
      const RowGeometry geo = rowGeometry(l.outer, l.n);
      lpNormRowsKernel<T>
          <<<geo.grid, geo.block, 0, stream>>>(x, y, l.outer, l.n, l.p, geo.warpMode);
      KILN_CUDA_CHECK_LAUNCH("lpNormRowsKernel");
    } else {
      lpNormColumnsKernel<T>
          <<<gridFor(l.outer * l.inner), kBlockSize, 0, stream>>>(x, y, l.outer, l.n, l.inner, l.p);
      KILN_CUDA_CHECK_LAUNCH("lpNormColumnsKernel");
    }
    return Status::ok();
  });
}

Status launchMvn(const MvnLaunch& l, cudaStream_t stream) {
  const ShapeInfo kept = l.kept, reduced = l.reduced;
  const RowGeometry geo = rowGeometry(l.rows, l.count);
  return dispatchDeviceType<device_types::kFloats>(l.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    mvnRows<T><<<geo.grid, geo.block, 0, stream>>>(static_cast<const T*>(l.x), static_cast<T*>(l.y),
                                                   kept, reduced, l.rows, l.count,
                                                   l.normalizeVariance, geo.warpMode);
    KILN_CUDA_CHECK_LAUNCH("mvnRows");
    return Status::ok();
  });
}

Status launchLrn(const LrnLaunch& l, cudaStream_t stream) {
  return dispatchDeviceType<device_types::kFloats>(l.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    lrnApply<T><<<gridFor(l.args.numel), kBlockSize, 0, stream>>>(static_cast<const T*>(l.x),
                                                                  static_cast<T*>(l.y), l.args);
    KILN_CUDA_CHECK_LAUNCH("lrnApply");
    return Status::ok();
  });
}

}  // namespace nm
}  // namespace kiln::cuda
