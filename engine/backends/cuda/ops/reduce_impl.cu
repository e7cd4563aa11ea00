// The device half of the reductions (host half: reduce.cpp; contract: reduce_impl.h;
// helpers shared with arg_cumsum_impl.cu: reduce_common.cuh): the Reduce* and
// Softmax / LogSoftmax / Hardmax kernels and their launch geometry.
//
// One reduced run is read as [outer, n, inner] (when inner == 1: 1-16 lanes per row of at
// most 64 elements, reading 16-byte words where the rows are whole aligned words, a warp or a
// block per longer row; a 32-wide tile of columns, or of
// column pairs for 16-bit and float data, per block otherwise), several reduced runs go through a
// general kernel with one thread per output element. ReduceLogSumExp runs twice: the
// largest finite value per output, then the shifted sum of exponentials. Rows longer than
// kWarpRowLimit use a whole block per row. A softmax over an inner axis takes a thread per
// column, or, with few columns or long ones, a block per tile of adjacent columns.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/ops/reduce_common.cuh"
#include "backends/cuda/ops/reduce_impl.h"

namespace kiln::cuda {
namespace {

using namespace rd;

// Types the packed short-row reduction reads in 16-byte words (they accumulate in float).
template <class T>
constexpr bool kPackedShortRows = kIsHalfLike<T> || std::is_same_v<T, float>;

// ---- Reduce* ---------------------------------------------------------------------

template <class T, class A>
__device__ __forceinline__ A reduceInit(ReduceOp op) {
  switch (op) {
    case ReduceOp::kProd:
      return A(1);
    case ReduceOp::kMax:
    case ReduceOp::kMaxFinite:
      if constexpr (std::is_integral_v<T>)
        return static_cast<A>(std::numeric_limits<T>::lowest());
      else
        return A(-INFINITY);
    case ReduceOp::kMin:
      if constexpr (std::is_integral_v<T>)
        return static_cast<A>(std::numeric_limits<T>::max());
      else
        return A(INFINITY);
    default:
      return A(0);
  }
}

// The value an input element contributes (|v|, v*v, ...).
template <class A>
__device__ __forceinline__ A reducePrepare(ReduceOp op, A v, A shift) {
  switch (op) {
    case ReduceOp::kL1:
      return v < A(0) ? A(0) - v : v;
    case ReduceOp::kL2:
    case ReduceOp::kSumSquare:
      return accMul(v, v);
    case ReduceOp::kMaxFinite:
      if constexpr (std::is_floating_point_v<A>)
        return isFiniteValue(v) ? v : A(-INFINITY);
      else
        return v;
    case ReduceOp::kSumExpShifted:
      if constexpr (std::is_floating_point_v<A>)
        return mathExp(v - shift);
      else
        return v;
    default:
      return v;
  }
}

// Folds two partial results. Max/Min keep a NaN once seen, as the CPU kernel does.
template <class A>
__device__ __forceinline__ A reduceCombine(ReduceOp op, A a, A b) {
  switch (op) {
    case ReduceOp::kProd:
      return accMul(a, b);
    case ReduceOp::kMax:
    case ReduceOp::kMaxFinite:
      return (b > a || b != b) ? b : a;
    case ReduceOp::kMin:
      return (b < a || b != b) ? b : a;
    default:
      return accAdd(a, b);
  }
}

template <class A>
__device__ __forceinline__ A reduceFinish(ReduceOp op, A a, int64_t count, A shift) {
  switch (op) {
    case ReduceOp::kMean:
      if constexpr (std::is_integral_v<A>)
        return count == 0 ? A(0) : a / A(count);
      else
        return a / A(count);  // an empty reduction gives 0/0 = NaN, as on the CPU
    case ReduceOp::kL2:
      if constexpr (std::is_floating_point_v<A>)
        return mathSqrt(a);
      else
        return a;
    case ReduceOp::kLogSum:
      if constexpr (std::is_floating_point_v<A>)
        return mathLog(a);
      else
        return a;
    case ReduceOp::kMaxFinite:
      return isFiniteValue(a) ? a : A(0);
    case ReduceOp::kSumExpShifted:
      if constexpr (std::is_floating_point_v<A>)
        return mathLog(a) + shift;
      else
        return a;
    default:
      return a;
  }
}

// Combines `a` across the threads of a warp; every lane gets the result.
template <class A>
__device__ __forceinline__ A warpCombine(ReduceOp op, A a) {
#pragma unroll
  for (int mask = 16; mask >= 1; mask >>= 1) a = reduceCombine(op, a, shuffleXor(a, mask));
  return a;
}

// Combines `a` across the row group; every thread gets the result. `partial`
// holds one value per warp (block mode only).
template <class A>
__device__ __forceinline__ A groupCombine(ReduceOp op, A a, bool warpMode, A* partial) {
  a = warpCombine(op, a);
  if (warpMode) return a;
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (threadIdx.x % 32 == 0) partial[warp] = a;
  __syncthreads();
  a = partial[0];
  for (int w = 1; w < warps; ++w) a = reduceCombine(op, a, partial[w]);
  __syncthreads();  // `partial` is reused by the next call
  return a;
}

// What a reduction reads and writes. The result goes to `y`, or as an accumulator
// to `accOut` (the first pass of LogSumExp). `shift` is per output (second pass).
template <class T>
struct ReduceIo {
  const T* x = nullptr;
  T* y = nullptr;
  Acc<T>* accOut = nullptr;
  const Acc<T>* shift = nullptr;
  ReduceOp op = ReduceOp::kSum;
  int64_t count = 1;  // input elements per output element
};

template <class T>
__device__ __forceinline__ Acc<T> outputShift(const ReduceIo<T>& io, int64_t o) {
  return io.shift ? io.shift[o] : Acc<T>(0);
}

template <class T>
__device__ __forceinline__ void writeReduced(const ReduceIo<T>& io, int64_t o, Acc<T> a,
                                             Acc<T> shift) {
  const Acc<T> r = reduceFinish(io.op, a, io.count, shift);
  if (io.accOut)
    io.accOut[o] = r;
  else
    io.y[o] = storeAs<T>(r);
}

// [rows, n] contiguous rows, one output per row.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    reduceRowsKernel(ReduceIo<T> io, int64_t rows, int64_t n, bool warpMode) {
  using A = Acc<T>;
  __shared__ A partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < rows; row += g.step) {
    const A shift = outputShift(io, row);
    const T* x = io.x + row * n;
    A a = reduceInit<T, A>(io.op);
    for (int64_t k = g.lane; k < n; k += g.size)
      a = reduceCombine(io.op, a, reducePrepare(io.op, loadAs<A>(x, k), shift));
    a = groupCombine(io.op, a, warpMode, partial);
    if (g.lane == 0) writeReduced(io, row, a, shift);
  }
}

// [rows, n] contiguous rows of at most 64 elements: G lanes per row (G in 1..16), so a warp
// reduces 32 / G rows at once instead of one row of a few elements with 32 lanes. V == 1: a
// lane reads one element a trip (about 4 a row, shortRowLanes). V > 1 (16-bit and float data
// whose rows are whole aligned 16-byte words): a lane reads V elements with one 16-byte load a
// trip and G covers the row's packs, so a warp's load is 32 / G adjacent rows of contiguous
// bytes; SwinV2-T's F.normalize rows (32 fp16 channels, 1.5 M rows at batch 128) took 0.083 ms
// with element loads and 0.047 ms packed on an H200. Every lane of a warp runs the same number
// of loop trips (the warp's first row decides), so the shuffles see the full warp.
template <class T, int G, int V>
__global__ void __launch_bounds__(kBlockSize)
    reduceShortRowsKernel(ReduceIo<T> io, int64_t rows, int64_t n) {
  using A = Acc<T>;
  static_assert(V == 1 || kPackedShortRows<T>, "packs of 16-bit and float data, as float");
  constexpr int kRowsPerWarp = 32 / G;
  const int lane = threadIdx.x % G;
  const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
  for (int64_t first = warp * kRowsPerWarp; first < rows; first += warps * kRowsPerWarp) {
    const int64_t row = first + (threadIdx.x % 32) / G;
    A a = reduceInit<T, A>(io.op);
    A shift = A(0);
    if (row < rows) {
      shift = outputShift(io, row);
      const T* x = io.x + row * n;
      for (int64_t k = int64_t(lane) * V; k < n; k += G * V) {
        if constexpr (V == 1) {
          a = reduceCombine(io.op, a, reducePrepare(io.op, loadAs<A>(x, k), shift));
        } else {
          float v[V];
          loadPack<V>(x, k, 1, v);
#pragma unroll
          for (int j = 0; j < V; ++j)
            a = reduceCombine(io.op, a, reducePrepare(io.op, v[j], shift));
        }
      }
    }
#pragma unroll
    for (int mask = G / 2; mask >= 1; mask >>= 1) a = reduceCombine(io.op, a, shuffleXor(a, mask));
    if (row < rows && lane == 0) writeReduced(io, row, a, shift);
  }
}

// Lanes per row for a short row read element by element: a power of two with about 4
// elements a lane; 0 for a row long enough for a whole warp.
inline int shortRowLanes(int64_t n) {
  if (n > 64) return 0;
  int lanes = 1;
  while (lanes * 4 < n) lanes *= 2;
  return lanes;
}

template <class T, int V>
void launchShortRowsOfPack(const ReduceIo<T>& io, int64_t rows, int64_t n, int lanes,
                           cudaStream_t stream) {
  const unsigned grid = gridFor(((rows * lanes + 31) / 32) * 32, kBlockSize);
  switch (lanes) {
    case 1:
      reduceShortRowsKernel<T, 1, V><<<grid, kBlockSize, 0, stream>>>(io, rows, n);
      break;
    case 2:
      reduceShortRowsKernel<T, 2, V><<<grid, kBlockSize, 0, stream>>>(io, rows, n);
      break;
    case 4:
      reduceShortRowsKernel<T, 4, V><<<grid, kBlockSize, 0, stream>>>(io, rows, n);
      break;
    case 8:
      reduceShortRowsKernel<T, 8, V><<<grid, kBlockSize, 0, stream>>>(io, rows, n);
      break;
    default:
      reduceShortRowsKernel<T, 16, V><<<grid, kBlockSize, 0, stream>>>(io, rows, n);
      break;
  }
}

// Rows of at most 64 elements (shortRowLanes(n) != 0): in 16-byte words where T is a 16-bit or
// float type, n whole words and the rows 16-byte aligned, the lanes then a power of two
// covering the row's words; else element by element.
template <class T>
Status launchShortRows(const ReduceIo<T>& io, int64_t rows, int64_t n, cudaStream_t stream) {
  if constexpr (kPackedShortRows<T>) {
    constexpr int V = 16 / sizeof(T);
    if (n % V == 0 && reinterpret_cast<uintptr_t>(io.x) % 16 == 0) {
      int lanes = 1;
      while (lanes * V < n) lanes *= 2;
      launchShortRowsOfPack<T, V>(io, rows, n, lanes, stream);
      KILN_CUDA_CHECK_LAUNCH("reduceShortRowsKernel (16-byte words)");
      return Status::ok();
    }
  }
  launchShortRowsOfPack<T, 1>(io, rows, n, shortRowLanes(n), stream);
  KILN_CUDA_CHECK_LAUNCH("reduceShortRowsKernel");
  return Status::ok();
}

// [outer, n, inner] with inner > 1: each block takes 32 adjacent columns of one
// outer slice; blockDim.y threads split the n elements of each column.
constexpr int kColumnTile = 32;
constexpr int kMaxColumnSplit = 16;
constexpr int kMaxColumnBlock = kColumnTile * kMaxColumnSplit;

// Columns a thread reads with one load: 2 for 16-bit and float data whose columns pair up
// (a warp then reads 128 or 256 contiguous bytes per row instead of 64 or 128), else 1.
// Those types accumulate in float, which loadPack (row_kernels.cuh) writes.
template <class T>
constexpr bool kPairLoads = kIsHalfLike<T> || std::is_same_v<T, float>;

// V adjacent columns per thread (V = 2 only where kPairLoads and inner is even).
template <class T, int V>
__global__ void __launch_bounds__(kMaxColumnBlock)
    reduceColumnsKernel(ReduceIo<T> io, int64_t outer, int64_t n, int64_t inner) {
  using A = Acc<T>;
  static_assert(V == 1 || (kPairLoads<T> && std::is_same_v<A, float>), "pairs load as float");
  constexpr int kTile = kColumnTile * V;
  __shared__ A partial[kMaxColumnSplit][kTile];
  const int64_t tilesPerOuter = (inner + kTile - 1) / kTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t tile = blockIdx.x; tile < outer * tilesPerOuter; tile += gridDim.x) {
    const int64_t o = tile / tilesPerOuter;
    const int64_t i = (tile - o * tilesPerOuter) * kTile + int64_t(tx) * V;
    const int64_t out = o * inner + i;
    A a[V], shift[V];
#pragma unroll
    for (int v = 0; v < V; ++v) {
      a[v] = reduceInit<T, A>(io.op);
      shift[v] = A(0);
    }
    if (i < inner) {  // with V = 2, inner is even: column i + 1 exists too
#pragma unroll
      for (int v = 0; v < V; ++v) shift[v] = outputShift(io, out + v);
      const T* x = io.x + o * n * inner + i;
      for (int64_t k = ty; k < n; k += blockDim.y) {
        A values[V];
        if constexpr (V == 2)
          loadPack<2>(x + k * inner, 0, 1, values);
        else
          values[0] = loadAs<A>(x, k * inner);
#pragma unroll
        for (int v = 0; v < V; ++v)
          a[v] = reduceCombine(io.op, a[v], reducePrepare(io.op, values[v], shift[v]));
      }
    }
#pragma unroll
    for (int v = 0; v < V; ++v) partial[ty][tx * V + v] = a[v];
    __syncthreads();
    if (ty == 0 && i < inner) {
#pragma unroll
      for (int v = 0; v < V; ++v) {
        for (int r = 1; r < static_cast<int>(blockDim.y); ++r)
          a[v] = reduceCombine(io.op, a[v], partial[r][tx * V + v]);
        writeReduced(io, out + v, a[v], shift[v]);
      }
    }
    __syncthreads();
  }
}

// Any set of reduced axes: one thread per output element walks its reduced elements.
template <class T>
__global__ void reduceGeneralKernel(ReduceIo<T> io, ShapeInfo kept, ShapeInfo reduced,
                                    int64_t outNumel) {
  using A = Acc<T>;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < outNumel;
       o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = stridedOffset(kept, o);
    const A shift = outputShift(io, o);
    A a = reduceInit<T, A>(io.op);
    for (int64_t r = 0; r < io.count; ++r) {
      const A v = loadAs<A>(io.x, base + stridedOffset(reduced, r));
      a = reduceCombine(io.op, a, reducePrepare(io.op, v, shift));
    }
    writeReduced(io, o, a, shift);
  }
}

// Launches one pass of a reduction over the collapsed plan's geometry.
template <class T>
Status launchReducePass(const ReduceLaunch& args, const ReduceIo<T>& io, cudaStream_t stream) {
  if (args.general) {
    reduceGeneralKernel<T><<<gridFor(args.outputs), kBlockSize, 0, stream>>>(
        io, args.kept, args.reduced, args.outputs);
    KILN_CUDA_CHECK_LAUNCH("reduceGeneralKernel");
    return Status::ok();
  }
  const int64_t outer = args.outer, n = args.n, inner = args.inner;
  if (inner == 1) {
    if (shortRowLanes(n) != 0) return launchShortRows<T>(io, outer, n, stream);
    const RowGeometry g = rowGeometry(outer, n);
    reduceRowsKernel<T><<<g.grid, g.block, 0, stream>>>(io, outer, n, g.warpMode);
    KILN_CUDA_CHECK_LAUNCH("reduceRowsKernel");
    return Status::ok();
  }
  int columnsPerThread = 1;
  if constexpr (kPairLoads<T>)
    if (inner % 2 == 0 && reinterpret_cast<uintptr_t>(io.x) % (2 * sizeof(T)) == 0)
      columnsPerThread = 2;
  const int tileWidth = kColumnTile * columnsPerThread;
  const int64_t tiles = outer * ((inner + tileWidth - 1) / tileWidth);
  int split = n >= 64 ? 8 : 1;
  if (n >= 1024 && tiles < 512) split = kMaxColumnSplit;
  const dim3 block(kColumnTile, split);
  if constexpr (kPairLoads<T>)
    if (columnsPerThread == 2)
      reduceColumnsKernel<T, 2><<<gridFor(tiles, 1), block, 0, stream>>>(io, outer, n, inner);
  if (columnsPerThread == 1)
    reduceColumnsKernel<T, 1><<<gridFor(tiles, 1), block, 0, stream>>>(io, outer, n, inner);
  KILN_CUDA_CHECK_LAUNCH("reduceColumnsKernel");
  return Status::ok();
}

template <class T>
Status reduceTyped(const ReduceLaunch& args, cudaStream_t stream) {
  ReduceIo<T> io;
  io.x = static_cast<const T*>(args.x);
  io.y = static_cast<T*>(args.y);
  io.count = args.count;
  if (args.op != ReduceOp::kLogSumExp) {
    io.op = args.op;
    return launchReducePass<T>(args, io, stream);
  }
  // log(sum(exp(x - shift))) + shift, shift = the largest finite value per output.
  ReduceIo<T> first = io;
  first.op = ReduceOp::kMaxFinite;
  first.accOut = static_cast<Acc<T>*>(args.scratch);
  KILN_RETURN_IF_ERROR(launchReducePass<T>(args, first, stream));
  io.op = ReduceOp::kSumExpShifted;
  io.shift = static_cast<const Acc<T>*>(args.scratch);
  return launchReducePass<T>(args, io, stream);
}

// ---- Softmax / LogSoftmax / Hardmax -------------------------------------------------

// One normalized row per group: max, then the sum of exp(x - max), then the output.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    softmaxRowsKernel(const T* x, T* y, int64_t rows, int64_t n, SoftmaxKind kind, bool warpMode) {
  using C = Acc<T>;
  __shared__ C partial[32];
  __shared__ ArgBest<C> argPartial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < rows; row += g.step) {
    const T* xr = x + row * n;
    T* yr = y + row * n;
    if (kind == SoftmaxKind::kHardmax) {  // the first maximum wins ties
      ArgBest<C> best{C(0), -1};
      for (int64_t k = g.lane; k < n; k += g.size)
        best = argFold(best, loadAs<C>(xr, k), k, true, false);
      best = groupArg(best, true, false, warpMode, argPartial);
      for (int64_t k = g.lane; k < n; k += g.size) yr[k] = storeAs<T>(C(k == best.idx ? 1 : 0));
      continue;
    }
    C maxValue = C(-INFINITY);
    for (int64_t k = g.lane; k < n; k += g.size)
      maxValue = reduceCombine(ReduceOp::kMax, maxValue, loadAs<C>(xr, k));
    maxValue = groupCombine(ReduceOp::kMax, maxValue, warpMode, partial);
    C sum = C(0);
    for (int64_t k = g.lane; k < n; k += g.size) sum += mathExp(loadAs<C>(xr, k) - maxValue);
    sum = groupCombine(ReduceOp::kSum, sum, warpMode, partial);
    if (kind == SoftmaxKind::kSoftmax) {
      const C scale = C(1) / sum;
      for (int64_t k = g.lane; k < n; k += g.size)
        yr[k] = storeAs<T>(mathExp(loadAs<C>(xr, k) - maxValue) * scale);
    } else {
      // (x - max) - log(sum): keeps the small log term when max is large.
      const C logSum = mathLog(sum);
      for (int64_t k = g.lane; k < n; k += g.size)
        yr[k] = storeAs<T>((loadAs<C>(xr, k) - maxValue) - logSum);
    }
  }
}

// [outer, n, inner], inner > 1: one thread per column of n elements `inner` apart.
template <class T>
__global__ void softmaxColumnsKernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner,
                                     SoftmaxKind kind) {
  using C = Acc<T>;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < outer * inner;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = idx / inner, i = idx - o * inner;
    const T* xc = x + o * n * inner + i;
    T* yc = y + o * n * inner + i;
    if (kind == SoftmaxKind::kHardmax) {
      int64_t best = 0;
      C bestValue = loadAs<C>(xc, 0);
      for (int64_t k = 1; k < n; ++k) {
        const C v = loadAs<C>(xc, k * inner);
        if (v > bestValue) {
          bestValue = v;
          best = k;
        }
      }
      for (int64_t k = 0; k < n; ++k) yc[k * inner] = storeAs<T>(C(k == best ? 1 : 0));
      continue;
    }
    C maxValue = C(-INFINITY);
    for (int64_t k = 0; k < n; ++k)
      maxValue = reduceCombine(ReduceOp::kMax, maxValue, loadAs<C>(xc, k * inner));
    C sum = C(0);
    for (int64_t k = 0; k < n; ++k) sum += mathExp(loadAs<C>(xc, k * inner) - maxValue);
    if (kind == SoftmaxKind::kSoftmax) {
      const C scale = C(1) / sum;
      for (int64_t k = 0; k < n; ++k)
        yc[k * inner] = storeAs<T>(mathExp(loadAs<C>(xc, k * inner) - maxValue) * scale);
    } else {
      const C logSum = mathLog(sum);
      for (int64_t k = 0; k < n; ++k)
        yc[k * inner] = storeAs<T>((loadAs<C>(xc, k * inner) - maxValue) - logSum);
    }
  }
}

// The online-softmax pair of a run: its largest value m and the sum s of exp(v - m).
template <class C>
struct MaxSum {
  C m, s;
};

// Folds value v into (m, s). -inf adds nothing (a run of only -inf ends as (-inf, 0), whose
// outputs are NaN, as the one-thread-a-column kernel gives); NaN makes s NaN, and so does +inf
// (exp(inf - inf)), as in the reference.
template <class C>
__device__ __forceinline__ void maxSumAdd(MaxSum<C>& a, C v) {
  if (v == C(-INFINITY)) return;
  if (v > a.m) {
    a.s = a.s * mathExp(a.m - v) + mathExp(v - v);
    a.m = v;
  } else {
    a.s += mathExp(v - a.m);
  }
}

// Two pairs as one. A side whose m is -inf adds its s times 0: 0, or NaN when a NaN went into
// it (a column of NaN and -inf stays NaN).
template <class C>
__device__ __forceinline__ MaxSum<C> maxSumCombine(MaxSum<C> a, MaxSum<C> b) {
  const C m = a.m > b.m ? a.m : b.m;
  if (m == C(-INFINITY)) return {m, a.s + b.s};
  return {m, a.s * mathExp(a.m - m) + b.s * mathExp(b.m - m)};
}

// [outer, n, inner], inner > 1, few columns or long ones (CoaT's softmax over the 3,137 tokens
// of K [B, heads, N, 8]: 8,192 columns, too few for a thread each): a block per outer index and
// tile of kTile columns (a power of two, <= 32), its threads kTile columns wide (adjacent threads
// read adjacent elements) and kColumnsBlock / kTile rows deep. Each thread folds its rows into
// an online (max, sum) pair, the block combines a column's pairs in shared memory, and a second
// read writes the outputs: two reads and one write of x instead of three reads.
constexpr int kColumnsBlock = 256;

template <class T, int kTile>
__global__ void __launch_bounds__(kColumnsBlock)
    softmaxColumnTilesKernel(const T* x, T* y, int64_t n, int64_t inner, SoftmaxKind kind) {
  using C = Acc<T>;
  constexpr int kLanes = kColumnsBlock / kTile;
  __shared__ C sharedM[kColumnsBlock];
  __shared__ C sharedS[kColumnsBlock];
  const int column = threadIdx.x % kTile, lane = threadIdx.x / kTile;
  const int64_t i = int64_t(blockIdx.y) * kTile + column;
  const bool active = i < inner;
  const int64_t base = int64_t(blockIdx.x) * n * inner + i;
  MaxSum<C> a{C(-INFINITY), C(0)};
  if (active)
    for (int64_t k = lane; k < n; k += kLanes) maxSumAdd(a, loadAs<C>(x, base + k * inner));
  sharedM[threadIdx.x] = a.m;
  sharedS[threadIdx.x] = a.s;
  __syncthreads();
  for (int stride = kLanes / 2; stride > 0; stride /= 2) {
    if (lane < stride) {
      const int other = threadIdx.x + stride * kTile;
      const MaxSum<C> b = maxSumCombine(MaxSum<C>{sharedM[threadIdx.x], sharedS[threadIdx.x]},
                                        MaxSum<C>{sharedM[other], sharedS[other]});
      sharedM[threadIdx.x] = b.m;
      sharedS[threadIdx.x] = b.s;
    }
    __syncthreads();
  }
  if (!active) return;
  const C m = sharedM[column], sum = sharedS[column];
  if (kind == SoftmaxKind::kSoftmax) {
    const C scale = C(1) / sum;
    for (int64_t k = lane; k < n; k += kLanes)
      y[base + k * inner] = storeAs<T>(mathExp(loadAs<C>(x, base + k * inner) - m) * scale);
  } else {
    const C logSum = mathLog(sum);
    for (int64_t k = lane; k < n; k += kLanes)
      y[base + k * inner] = storeAs<T>((loadAs<C>(x, base + k * inner) - m) - logSum);
  }
}

template <class T, int kTile>
void launchColumnTiles(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, SoftmaxKind kind,
                       cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(outer), static_cast<unsigned>((inner + kTile - 1) / kTile));
  softmaxColumnTilesKernel<T, kTile><<<grid, kColumnsBlock, 0, stream>>>(x, y, n, inner, kind);
}

// The width of a column tile for `inner` columns: the smallest power of two from 2 that holds
// them, at most 32.
int columnTile(int64_t inner) {
  int tile = 2;
  while (tile < 32 && tile < inner) tile *= 2;
  return tile;
}

// The column-tile kernel serves Softmax and LogSoftmax [outer, n, inner] when a thread per
// column would leave the GPU mostly idle (fewer than 2^17 columns) or walk a long column alone
// (n > 1024), the columns are at least as long as a block is deep, and the grid fits (outer <
// 2^31, column tiles < 2^16).
bool useColumnTiles(SoftmaxKind kind, int64_t outer, int64_t n, int64_t inner) {
  if (kind == SoftmaxKind::kHardmax) return false;
  if (outer >= (int64_t(1) << 31) || (inner + 31) / 32 >= 65536) return false;
  // Columns shorter than a block's rows would leave most of its threads idle.
  if (n < kColumnsBlock / columnTile(inner)) return false;
  return outer * inner < (int64_t(1) << 17) || n > 1024;
}

}  // namespace

Status reduceScratchBytes(DataType type, int64_t outputs, size_t* bytes) {
  return dispatchDeviceType<kReduceDeviceTypes>(type, [&](auto tag) {
    using T = decltype(tag);
    *bytes = outputs * sizeof(Acc<T>);
    return Status::ok();
  });
}

Status launchReduce(const ReduceLaunch& args, cudaStream_t stream) {
  return dispatchDeviceType<kReduceDeviceTypes>(args.type, [&](auto tag) {
    using T = decltype(tag);
    return reduceTyped<T>(args, stream);
  });
}

Status launchSoftmax(const SoftmaxLaunch& args, cudaStream_t stream) {
  return dispatchDeviceType<kSoftmaxDeviceTypes>(args.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    // The dispatcher's switch names every type; kernels exist for the float ones only
    // (kSoftmaxDeviceTypes), the others never reach here.
    if constexpr (!std::is_floating_point_v<Acc<T>>) {
      return Status(StatusCode::kUnsupported, std::string("data type ") + dataTypeName(args.type));
    } else {
      const T* x = static_cast<const T*>(args.x);
      T* y = static_cast<T*>(args.y);
      const int64_t outer = args.outer, n = args.n, inner = args.inner;
      if (inner == 1) {
        const RowGeometry g = rowGeometry(outer, n);
        softmaxRowsKernel<T><<<g.grid, g.block, 0, stream>>>(x, y, outer, n, args.kind, g.warpMode);
        KILN_CUDA_CHECK_LAUNCH("softmaxRowsKernel");
      } else if (useColumnTiles(args.kind, outer, n, inner)) {
        switch (columnTile(inner)) {
          case 2:
            launchColumnTiles<T, 2>(x, y, outer, n, inner, args.kind, stream);
            break;
          case 4:
            launchColumnTiles<T, 4>(x, y, outer, n, inner, args.kind, stream);
            break;
          case 8:
            launchColumnTiles<T, 8>(x, y, outer, n, inner, args.kind, stream);
            break;
          case 16:
            launchColumnTiles<T, 16>(x, y, outer, n, inner, args.kind, stream);
            break;
          default:
            launchColumnTiles<T, 32>(x, y, outer, n, inner, args.kind, stream);
        }
        KILN_CUDA_CHECK_LAUNCH("softmaxColumnTilesKernel");
      } else {
        softmaxColumnsKernel<T>
            <<<gridFor(outer * inner), kBlockSize, 0, stream>>>(x, y, outer, n, inner, args.kind);
        KILN_CUDA_CHECK_LAUNCH("softmaxColumnsKernel");
      }
      return Status::ok();
    }
  });
}

}  // namespace kiln::cuda
