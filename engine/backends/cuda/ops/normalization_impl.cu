// The device half of BatchNormalization (inference), InstanceNormalization,
// GroupNormalization, LayerNormalization and RMSNormalization (the host half and the
// family's contract: normalization.cpp; the launchers' contract: normalization_impl.h).
// Statistics are computed in float (double for double) with two passes (mean, then the mean
// squared deviation). Row-wise norms give each normalized row a warp (rows up to
// kWarpRowLimit elements) or a whole block.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

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

// The split path (normalization_impl.h): a chunk's element count, mean and sum of squared
// deviations from that mean.
template <class C>
struct ChunkMoments {
  C count, mean, m2;
};

// a and b as one set's moments (Chan, Golub and LeVeque's pairwise update).
template <class C>
__device__ __forceinline__ ChunkMoments<C> combine(const ChunkMoments<C>& a,
                                                   const ChunkMoments<C>& b) {
  if (b.count == C(0)) return a;  // an empty side (a lane with no chunk) adds nothing
  if (a.count == C(0)) return b;
  const C n = a.count + b.count;
  const C delta = b.mean - a.mean, wb = b.count / n;
  return {n, a.mean + delta * wb, a.m2 + b.m2 + delta * delta * a.count * wb};
}

// Element k's pack of V (16 bytes) or, when !packed, one element, as compute values. With
// `packed` the row starts 16-byte aligned and k is a multiple of V.
template <class T, int V, class C = Compute<T>>
__device__ __forceinline__ void loadPackAs(const T* x, int64_t k, C* v) {
  uint4 raw = *reinterpret_cast<const uint4*>(x + k);
  const T* t = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int j = 0; j < V; ++j) v[j] = loadAs<C>(t, j);
}

// The chunk [begin, end) of the row `row` for pass 1 and 2 of the split path: chunks of
// `chunk` elements (a multiple of 16).
struct ChunkSpan {
  int64_t begin, end;
};
__device__ __forceinline__ ChunkSpan chunkSpan(const GroupNormArgs& a, int64_t chunk) {
  const int64_t begin = blockIdx.x * chunk;
  return {begin, begin + chunk < a.rowLength ? begin + chunk : a.rowLength};
}

// This thread's share of the sum of f(v) over the chunk's elements v (16-byte packs when
// `packed`).
template <class T, class F, class C = Compute<T>>
__device__ __forceinline__ C chunkShare(const T* xr, const ChunkSpan& span, bool packed, F f) {
  constexpr int V = 16 / sizeof(T);
  C total = C(0);
  if (packed) {
    for (int64_t k = span.begin + threadIdx.x * V; k < span.end; k += blockDim.x * V) {
      C v[V];
      loadPackAs<T, V>(xr, k, v);
#pragma unroll
      for (int j = 0; j < V; ++j) total += f(v[j]);
    }
  } else {
    for (int64_t k = span.begin + threadIdx.x; k < span.end; k += blockDim.x)
      total += f(loadAs<C>(xr, k));
  }
  return total;
}

// Pass 1: block (c, r) writes the moments of chunk c of row r to moments[r * chunks + c],
// two-pass over the chunk (the second read hits the cache). `packed`: 16-byte packs.
template <class T>
__global__ void __launch_bounds__(kBlockSize)
    groupNormChunkMoments(const T* x, GroupNormArgs a, int64_t chunk, bool packed,
                          ChunkMoments<Compute<T>>* moments) {
  using C = Compute<T>;
  __shared__ C partial[32];
  const T* xr = x + blockIdx.y * a.rowLength;
  const ChunkSpan span = chunkSpan(a, chunk);
  const C count = C(span.end - span.begin);
  const C sum = chunkShare(xr, span, packed, [](C v) { return v; });
  const C mean = groupSum(sum, false, partial) / count;
  const C squares = chunkShare(xr, span, packed, [mean](C v) {
    const C d = v - mean;
    return d * d;
  });
  const C m2 = groupSum(squares, false, partial);
  if (threadIdx.x == 0) moments[blockIdx.y * gridDim.x + blockIdx.x] = {count, mean, m2};
}

// Pass 2: block (c, r) combines row r's chunk moments (each lane of warp 0 a strided share,
// then across the warp), then normalizes chunk c. With `packed` a pack never crosses a
// channel (spatial is a multiple of V), so it takes one parameter.
template <class T>
__global__ void __launch_bounds__(kBlockSize)
    groupNormChunkApply(const T* x, T* y, const T* scale, const T* bias, GroupNormArgs a,
                        int64_t chunk, bool packed, const ChunkMoments<Compute<T>>* moments) {
  using C = Compute<T>;
  constexpr int V = 16 / sizeof(T);
  __shared__ C stats[2];
  const int64_t row = blockIdx.y;
  if (threadIdx.x < 32) {
    const ChunkMoments<C>* m = moments + row * gridDim.x;
    ChunkMoments<C> acc{C(0), C(0), C(0)};
    for (unsigned c = threadIdx.x; c < gridDim.x; c += 32) acc = combine(acc, m[c]);
#pragma unroll
    for (int mask = 16; mask >= 1; mask >>= 1) {
      const ChunkMoments<C> other{__shfl_xor_sync(kFullMask, acc.count, mask),
                                  __shfl_xor_sync(kFullMask, acc.mean, mask),
                                  __shfl_xor_sync(kFullMask, acc.m2, mask)};
      acc = combine(acc, other);
    }
    if (threadIdx.x == 0) {
      stats[0] = acc.mean;
      stats[1] = C(1) / mathSqrt(acc.m2 / C(a.rowLength) + C(a.epsilon));
    }
  }
  __syncthreads();
  const C mean = stats[0], invStd = stats[1];
  const int64_t group = row % a.groups;
  auto param = [&](int64_t k) {
    return a.perGroupParams ? group : group * a.perGroup + k / a.spatial;
  };
  const T* xr = x + row * a.rowLength;
  T* yr = y + row * a.rowLength;
  const ChunkSpan span = chunkSpan(a, chunk);
  if (packed) {
    for (int64_t k = span.begin + threadIdx.x * V; k < span.end; k += blockDim.x * V) {
      const int64_t p = param(k);
      const C s = loadAs<C>(scale, p) * invStd, b = loadAs<C>(bias, p) - mean * s;
      C v[V];
      loadPackAs<T, V>(xr, k, v);
      uint4 raw;
      T* out = reinterpret_cast<T*>(&raw);
#pragma unroll
      for (int j = 0; j < V; ++j) out[j] = storeAs<T>(v[j] * s + b);
      *reinterpret_cast<uint4*>(yr + k) = raw;
    }
  } else {
    for (int64_t k = span.begin + threadIdx.x; k < span.end; k += blockDim.x) {
      const int64_t p = param(k);
      const C s = loadAs<C>(scale, p) * invStd;
      yr[k] = storeAs<T>(loadAs<C>(xr, k) * s + (loadAs<C>(bias, p) - mean * s));
    }
  }
}

// The split path's chunk length (a multiple of 16 elements) for `args`, or 0 for the
// one-kernel path: rows of at least two chunks, too few rows to give every SM several blocks.
// Chunks are 8,192 elements, longer where a row would have more than kMaxChunksPerRow: every
// apply block re-combines all of its row's chunk moments, so the combining grows with the
// square of the chunk count (a row of 10^8 elements in 8,192-element chunks: 12,208 blocks
// reading 12,208 records each); at 128 a lane of the combining warp takes 4.
constexpr int64_t kSplitChunk = 8192;
constexpr int64_t kSplitMaxRows = 1024;
constexpr int64_t kMaxChunksPerRow = 128;
int64_t splitChunk(const GroupNormArgs& a) {
  if (a.rows >= kSplitMaxRows || a.rowLength < 2 * kSplitChunk) return 0;
  const int64_t spread = (a.rowLength + kMaxChunksPerRow - 1) / kMaxChunksPerRow;
  return std::max(kSplitChunk, (spread + 15) / 16 * 16);
}

int64_t chunksPerRow(const GroupNormArgs& a, int64_t chunk) {
  return (a.rowLength + chunk - 1) / chunk;
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

size_t groupNormWorkspaceBytes(const GroupNormArgs& args, DataType type) {
  const int64_t chunk = splitChunk(args);
  if (chunk == 0) return 0;
  const size_t record =
      type == DataType::kFloat64 ? sizeof(ChunkMoments<double>) : sizeof(ChunkMoments<float>);
  return static_cast<size_t>(args.rows * chunksPerRow(args, chunk)) * record;
}

Status launchGroupNorm(const GroupNormLaunch& l, cudaStream_t stream) {
  if (const int64_t chunk = splitChunk(l.args); chunk > 0) {
    if (!l.workspace) return Status(StatusCode::kInternal, "group norm: no split workspace");
    return dispatchDeviceType<device_types::kFloats>(l.type, [&](auto tag) -> Status {
      using T = decltype(tag);
      constexpr int64_t V = 16 / sizeof(T);
      const GroupNormArgs& a = l.args;
      // Packs: X and Y 16-byte aligned (a caller's binding need not be), every row starts
      // on a pack, and no pack crosses a channel.
      const bool packed = a.rowLength % V == 0 && a.spatial % V == 0 &&
                          reinterpret_cast<uintptr_t>(l.x) % 16 == 0 &&
                          reinterpret_cast<uintptr_t>(l.y) % 16 == 0;
      const dim3 grid(static_cast<unsigned>(chunksPerRow(a, chunk)), static_cast<unsigned>(a.rows));
      auto* moments = static_cast<ChunkMoments<Compute<T>>*>(l.workspace);
      const T* x = static_cast<const T*>(l.x);
      groupNormChunkMoments<T><<<grid, kBlockSize, 0, stream>>>(x, a, chunk, packed, moments);
      KILN_CUDA_CHECK_LAUNCH("groupNormChunkMoments");
      groupNormChunkApply<T><<<grid, kBlockSize, 0, stream>>>(
          x, static_cast<T*>(l.y), static_cast<const T*>(l.scale), static_cast<const T*>(l.bias), a,
          chunk, packed, moments);
      KILN_CUDA_CHECK_LAUNCH("groupNormChunkApply");
      return Status::ok();
    });
  }
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
