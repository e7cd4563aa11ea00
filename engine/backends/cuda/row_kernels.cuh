// Device helpers shared by the row-wise kernels (reductions, softmax, norms): the
// 16-bit-aware load/store into an accumulator type, vector packs of a row, and the
// warp-or-block row geometry (a warp per row for short rows, a block per row for long ones).
// Included by .cu files only.
#pragma once

#include <type_traits>

#include "backends/cuda/device_common.cuh"

namespace kiln::cuda {

constexpr int64_t kWarpRowLimit = 1024;  // rows up to this length get one warp each
constexpr int kMaxRowBlock = 512;        // block size for very long rows
constexpr unsigned kFullMask = 0xffffffffu;

template <class T>
constexpr bool kIsHalfLike = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// Element i of p as the accumulator type A (16-bit floats through float).
template <class A, class T>
__device__ __forceinline__ A loadAs(const T* p, int64_t i) {
  if constexpr (kIsHalfLike<T>)
    return toFloat(p[i]);
  else
    return static_cast<A>(p[i]);
}

// An accumulator value rounded to the storage type T.
template <class T, class A>
__device__ __forceinline__ T storeAs(A v) {
  if constexpr (kIsHalfLike<T>)
    return fromFloat<T>(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

template <class A>
__device__ __forceinline__ A mathSqrt(A v) {
  if constexpr (std::is_same_v<A, float>)
    return sqrtf(v);
  else
    return sqrt(v);
}

// V adjacent elements moved by one vector access (aligned to all V).
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// V elements of a row from element k on, as float (V == 1 honours a stride of 0; V > 1
// needs row + k aligned to V elements).
template <int V, class T>
__device__ __forceinline__ void loadPack(const T* row, int64_t k, int64_t stride, float* out) {
  if constexpr (V == 1) {
    out[0] = toFloat(row[k * stride]);
  } else {
    const Pack<T, V> p = *reinterpret_cast<const Pack<T, V>*>(row + k);
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] = toFloat(p.v[j]);
  }
}

template <int V, class T>
__device__ __forceinline__ void storePack(T* row, int64_t k, const float* in) {
  Pack<T, V> p;
#pragma unroll
  for (int j = 0; j < V; ++j) p.v[j] = fromFloat<T>(in[j]);
  *reinterpret_cast<Pack<T, V>*>(row + k) = p;
}

// The rows visited by this thread's group (a warp, or the whole block) and the
// thread's place in it. Block-mode groups loop uniformly, so __syncthreads is safe.
struct RowGroup {
  int64_t first = 0, step = 1;
  int lane = 0, size = 1;
};
__device__ __forceinline__ RowGroup rowGroup(bool warpMode) {
  RowGroup g;
  if (warpMode) {
    const int warpsPerBlock = blockDim.x / 32;
    g.first = int64_t(blockIdx.x) * warpsPerBlock + threadIdx.x / 32;
    g.step = int64_t(gridDim.x) * warpsPerBlock;
    g.lane = threadIdx.x % 32;
    g.size = 32;
  } else {
    g.first = blockIdx.x;
    g.step = gridDim.x;
    g.lane = threadIdx.x;
    g.size = blockDim.x;
  }
  return g;
}

// Launch geometry for row kernels: a warp per row for short rows, else a block.
struct RowGeometry {
  unsigned grid = 1, block = kBlockSize;
  bool warpMode = true;
};
inline RowGeometry rowGeometry(int64_t rows, int64_t n) {
  RowGeometry g;
  if (n <= kWarpRowLimit) {
    g.grid = gridFor(rows * 32, kBlockSize);
    return g;
  }
  g.warpMode = false;
  g.block = n >= 16384 ? kMaxRowBlock : kBlockSize;
  g.grid = gridFor(rows, 1);
  return g;
}

}  // namespace kiln::cuda
