// The device half of ArgMax / ArgMin and CumSum (host half: arg_cumsum.cpp; contract:
// arg_cumsum_impl.h; helpers shared with reduce_impl.cu: reduce_common.cuh): their kernels
// and launch geometry. Rows (inner == 1) get a warp or block each (CumSum: a block per
// row longer than a warp); columns get one thread each, scanning sequentially like the CPU.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/ops/arg_cumsum_impl.h"
#include "backends/cuda/ops/reduce_common.cuh"

namespace kiln::cuda {
namespace {

using namespace rd;

// ---- ArgMax / ArgMin ---------------------------------------------------------------

// [rows, n] contiguous rows.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    argRowsKernel(const T* x, int64_t* y, int64_t rows, int64_t n, bool isMax, bool last,
                  bool warpMode) {
  using A = Acc<T>;
  __shared__ ArgBest<A> partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < rows; row += g.step) {
    const T* xr = x + row * n;
    ArgBest<A> best{A(0), -1};
    for (int64_t k = g.lane; k < n; k += g.size)
      best = argFold(best, loadAs<A>(xr, k), k, isMax, last);
    best = groupArg(best, isMax, last, warpMode, partial);
    if (g.lane == 0) y[row] = best.idx;
  }
}

// [outer, n, inner], inner > 1: the CPU's sequential scan, one thread per column.
template <class T>
__global__ void argColumnsKernel(const T* x, int64_t* y, int64_t outer, int64_t n, int64_t inner,
                                 bool isMax, bool last) {
  using A = Acc<T>;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < outer * inner;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = idx / inner, i = idx - o * inner;
    const T* column = x + o * n * inner + i;
    A best = loadAs<A>(column, 0);
    int64_t bestIndex = 0;
    for (int64_t k = 1; k < n; ++k) {
      const A v = loadAs<A>(column, k * inner);
      const bool better = isMax ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
      if (better) {
        best = v;
        bestIndex = k;
      }
    }
    y[idx] = bestIndex;
  }
}

// ---- CumSum -------------------------------------------------------------------------

// [rows, n] contiguous rows, a block per row: the row is scanned in chunks of
// blockDim.x elements (warp scans, then warp totals), carrying the running sum.
template <class T>
__global__ void __launch_bounds__(kBlockSize)
    cumSumRowsKernel(const T* x, T* y, int64_t rows, int64_t n, bool exclusive, bool reverse) {
  using A = Acc<T>;
  __shared__ A warpTotals[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * n;
    T* yr = y + row * n;
    A carry = A(0);
    for (int64_t start = 0; start < n; start += blockDim.x) {
      const int64_t step = start + threadIdx.x;
      const int64_t k = reverse ? n - 1 - step : step;
      const A v = step < n ? loadAs<A>(xr, k) : A(0);
      A inclusive = v;  // within the warp
#pragma unroll
      for (int delta = 1; delta < 32; delta <<= 1) {
        const A other = shuffleUp(inclusive, delta);
        if (lane >= delta) inclusive = accAdd(inclusive, other);
      }
      const A previous = shuffleUp(inclusive, 1);
      if (lane == 31) warpTotals[warp] = inclusive;
      __syncthreads();
      A offset = carry;
      A chunkTotal = carry;
      for (int w = 0; w < warps; ++w) {
        if (w < warp) offset = accAdd(offset, warpTotals[w]);
        chunkTotal = accAdd(chunkTotal, warpTotals[w]);
      }
      if (step < n) {
        const A result =
            exclusive ? (lane == 0 ? offset : accAdd(offset, previous)) : accAdd(offset, inclusive);
        yr[k] = storeAs<T>(result);
      }
      carry = chunkTotal;
      __syncthreads();
    }
  }
}

// [outer, n, inner], inner > 1: one thread per column, sequential like the CPU.
template <class T>
__global__ void cumSumColumnsKernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner,
                                    bool exclusive, bool reverse) {
  using A = Acc<T>;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < outer * inner;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = idx / inner, i = idx - o * inner;
    const int64_t base = o * n * inner + i;
    A acc = A(0);
    for (int64_t step = 0; step < n; ++step) {
      const int64_t offset = base + (reverse ? n - 1 - step : step) * inner;
      const A v = loadAs<A>(x, offset);
      if (!exclusive) acc = accAdd(acc, v);
      y[offset] = storeAs<T>(acc);
      if (exclusive) acc = accAdd(acc, v);
    }
  }
}

}  // namespace

Status launchArgReduce(const ArgReduceLaunch& args, cudaStream_t stream) {
  return dispatchDeviceType<kArgCumSumDeviceTypes>(args.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(args.x);
    const int64_t outer = args.outer, n = args.n, inner = args.inner;
    if (inner == 1) {
      const RowGeometry g = rowGeometry(outer, n);
      argRowsKernel<T>
          <<<g.grid, g.block, 0, stream>>>(x, args.y, outer, n, args.isMax, args.last, g.warpMode);
      KILN_CUDA_CHECK_LAUNCH("argRowsKernel");
    } else {
      argColumnsKernel<T><<<gridFor(outer * inner), kBlockSize, 0, stream>>>(
          x, args.y, outer, n, inner, args.isMax, args.last);
      KILN_CUDA_CHECK_LAUNCH("argColumnsKernel");
    }
    return Status::ok();
  });
}

Status launchCumSum(const CumSumLaunch& args, cudaStream_t stream) {
  return dispatchDeviceType<kArgCumSumDeviceTypes>(args.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(args.x);
    T* y = static_cast<T*>(args.y);
    const int64_t outer = args.outer, n = args.n, inner = args.inner;
    if (inner == 1 && n > 32) {
      cumSumRowsKernel<T><<<gridFor(outer, 1), kBlockSize, 0, stream>>>(
          x, y, outer, n, args.exclusive, args.reverse);
      KILN_CUDA_CHECK_LAUNCH("cumSumRowsKernel");
    } else {
      cumSumColumnsKernel<T><<<gridFor(outer * inner), kBlockSize, 0, stream>>>(
          x, y, outer, n, inner, args.exclusive, args.reverse);
      KILN_CUDA_CHECK_LAUNCH("cumSumColumnsKernel");
    }
    return Status::ok();
  });
}

}  // namespace kiln::cuda
