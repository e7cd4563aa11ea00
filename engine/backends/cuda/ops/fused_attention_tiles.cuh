// The flash attention kernels' shared pieces (fused_attention.cu's float32 kernel and
// fused_attention_mma.cuh's tensor-core kernel): the launch arguments, tile loads
// into shared memory (element loads or 16-byte cp.async copies with zero fill past
// the sequence's end and the head size), and the online softmax's exp2 and rescale.
// Included by fused_attention.cu only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/ops/async_copy.cuh"
#include "backends/cuda/row_kernels.cuh"
#include "ir/fused_attention.h"

namespace kiln::cuda::attention {

constexpr int kRows = 64;      // query rows per block (float32; 16-bit: 64 per row group)
constexpr int kThreads = 128;  // 4 warps
constexpr int kKeys32 = 32;    // keys per tile, float32 kernel
constexpr int kPad16 = 8;      // shared row padding (16 bytes): conflict-free ldmatrix
constexpr float kLog2e = 1.4426950408889634f;

struct AttentionArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* mask = nullptr;
  void* y = nullptr;
  int seqQ = 0, seqK = 0, headDim = 0, valueDim = 0;
  AttentionStrides qs, ks, vs, ys;
  int64_t ms[4] = {};      // mask strides over (b, h, i, j)
  int maskPeriod = 0;      // > 0: batch b reads the mask's batch b mod maskPeriod
  float scaleLog2 = 0.f;   // scale * log2(e): the softmax runs on exp2
  bool nanToZero = false;  // a row with no finite logit writes 0 (its sum is 0)
};

// Rows [row0, row0 + kTileRows) of one head into a shared tile of row stride kStride;
// zero past `rows` and past `dim` (so padded products add nothing).
template <class T, int kDPad, int kStride, int kTileRows, bool kVec>
__device__ __forceinline__ void loadTile(T* tile, const T* base, int64_t seqStride, int row0,
                                         int rows, int dim) {
  if constexpr (kVec) {
    constexpr int kChunks = kDPad / 8;
    for (int c = threadIdx.x; c < kTileRows * kChunks; c += kThreads) {
      const int r = c / kChunks, col = (c % kChunks) * 8;
      uint4 value = make_uint4(0, 0, 0, 0);
      if (row0 + r < rows && col < dim)
        value = *reinterpret_cast<const uint4*>(base + (row0 + r) * seqStride + col);
      *reinterpret_cast<uint4*>(tile + r * kStride + col) = value;
    }
  } else {
    for (int e = threadIdx.x; e < kTileRows * kDPad; e += kThreads) {
      const int r = e / kDPad, col = e % kDPad;
      tile[r * kStride + col] =
          row0 + r < rows && col < dim ? base[(row0 + r) * seqStride + col] : fromFloat<T>(0.f);
    }
  }
}

// loadTile's 16-byte form as cp.async copies (the caller commits and waits): rows past
// `rows` and columns past `dim` are zero-filled without reading global memory.
template <class T, int kDPad, int kStride, int kTileRows>
__device__ __forceinline__ void loadTileAsync(T* tile, const T* base, int64_t seqStride, int row0,
                                              int rows, int dim) {
  constexpr int kChunks = kDPad / 8;
  for (int c = threadIdx.x; c < kTileRows * kChunks; c += kThreads) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const bool valid = row0 + r < rows && col < dim;
    copyAsync16(tile + r * kStride + col, valid ? base + (row0 + r) * seqStride + col : base,
                valid);
  }
}

// 2^x as one MUFU.EX2 (exp2f's non-FTZ form adds a range fix-up around it). Subnormal
// results flush to 0: P is rounded to half or bfloat16 for the second product, where such
// a weight is 0 or carries nothing the row sum notices.
__device__ __forceinline__ float exp2Ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The online-softmax step for one row half: the tile's max `tileMax` (already over the
// row's 4 lanes) updates the running max; returns the subtrahend for this tile's exp2.
// A row with no finite logit so far keeps subtracting 0, never -inf (no NaN from -inf + inf).
__device__ __forceinline__ float rescale(float tileMax, float* runningMax, float* correction) {
  const float next = fmaxf(*runningMax, tileMax);
  const float base = next == -INFINITY ? 0.f : next;
  *correction = exp2f(*runningMax - base);
  *runningMax = next;
  return base;
}

}  // namespace kiln::cuda::attention
