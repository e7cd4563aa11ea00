// ai.kiln FusedAttention on CUDA, the device half (host half: fused_attention.cpp; contract:
// fused_attention_impl.h). One flash-style kernel: a block owns 64 query rows of
// one (batch, head), walks the keys in tiles of 64 (float32: 32) with an online
// softmax (running row max and sum, the partial output rescaled when the max grows),
// so any sequence length runs in registers and shared memory and the [Sq, Sk] scores
// never reach global memory. Q, K, V are read and Y written through the layouts'
// strides ([B, S, H, D] directly: no head transposes).
//   float16 / bfloat16: tensor cores, mma.sync m16n8k16 with ldmatrix (sm_80+). Each of
//     4 warps keeps its 16 query rows' Q fragments in registers; S = Q K^T and O += P V
//     accumulate in float; P is rounded to the storage type for the second product (as
//     the unfused graph's softmax output is). 16-byte loads and stores when D % 8 == 0
//     and the pointers are 16-byte aligned (BERT's D = 64: the fast path), else element
//     loads with zero fill. On the fast path K and V tiles are double-buffered: the next
//     tile's cp.async copies run while the current one is multiplied (before: ViT-B/16's
//     and DeiT-S's attention at 3-6x their floor, every tile load a stall).
//   float32: SIMT FMAs in float (no TF32: the result is the float32 chain's, whatever
//     the engine's TF32 setting).
// Head sizes D (Q, K) and Dv (V) each up to 128, each padded to 32, 64 or 128 in shared
// memory; the mask, additive in Q's storage type, is read through its broadcast strides.
//
// Floor for BERT-base, batch 128, seq 128, 12 heads of 64, 12 layers (per layer:
// Q, K, V, Y of 128 x 128 x 768 and the [128, 1, 128, 128] mask read once from DRAM):
//   fp16: 4 x 25.2 MB + 4.2 MB = 105 MB -> 1.26 GB, 0.42 ms at 3.0 TB/s; FLOPs
//         2 x 2 x 128 x 12 x 128 x 128 x 64 = 6.4 G -> 77 G, 0.10 ms at 750 TFLOP/s:
//         bandwidth-bound, floor ~0.42 ms (the unfused Transpose + MatMul + softmax: 3.1 ms).
//   fp32: 2.5 GB -> 0.84 ms; 77 GFLOP at ~51 TFLOP/s of FMA -> 1.5 ms: compute-bound.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/async_copy.cuh"
#include "backends/cuda/ops/fused_attention_impl.h"
#include "backends/cuda/ops/mma_f16.cuh"
#include "backends/cuda/row_kernels.cuh"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda::flash {
namespace {

constexpr int kRows = 64;      // query rows per block
constexpr int kThreads = 128;  // 4 warps
constexpr int kKeys16 = 64;    // keys per tile, tensor-core kernel
constexpr int kKeys32 = 32;    // keys per tile, float32 kernel
constexpr int kPad16 = 8;      // shared row padding (16 bytes): conflict-free ldmatrix

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

// Shared memory of the tensor-core kernel: Q's tile (also the output's staging rows,
// hence the larger of the two strides), then two stages of K's and V's tiles: with
// 16-byte loads the next key tile is copied (cp.async) while the current one is used.
constexpr int sharedElements16(int dPad, int dvPad) {
  const int stride = dPad + kPad16, vStride = dvPad + kPad16;
  return kRows * (stride > vStride ? stride : vStride) + 2 * kKeys16 * (stride + vStride);
}

// Blocks per multiprocessor the registers are sized for: with head sizes <= 64 four
// blocks fit the shared memory (4 x 46 KB), so 128 registers a thread (ptxas: no spills;
// before, 139 registers left room for 3); wider heads are held to 2 by shared memory.
constexpr int tensorCoreBlocksPerSm(int dPad, int dvPad) {
  return dPad <= 64 && dvPad <= 64 ? 4 : 2;
}

template <class T, int kDPad, int kDvPad, bool kVec>
__global__ void __launch_bounds__(kThreads, tensorCoreBlocksPerSm(kDPad, kDvPad))
    attentionTensorCore(AttentionArgs a) {
  constexpr int kStride = kDPad + kPad16;    // Q and K rows
  constexpr int kVStride = kDvPad + kPad16;  // V rows and the staged output rows
  extern __shared__ __align__(16) unsigned char shared[];
  T* sQ = reinterpret_cast<T*>(shared);
  T* const sK0 = sQ + kRows * (kStride > kVStride ? kStride : kVStride);  // 2 stages
  T* const sV0 = sK0 + 2 * kKeys16 * kStride;                             // 2 stages
  const int b = blockIdx.z, h = blockIdx.y, row0 = blockIdx.x * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
  const T* q = static_cast<const T*>(a.q) + b * a.qs.batch + h * a.qs.head;
  const T* k = static_cast<const T*>(a.k) + b * a.ks.batch + h * a.ks.head;
  const T* v = static_cast<const T*>(a.v) + b * a.vs.batch + h * a.vs.head;
  const int mb = a.maskPeriod > 0 ? b % a.maskPeriod : b;
  const T* mask = a.mask ? static_cast<const T*>(a.mask) + mb * a.ms[0] + h * a.ms[1] : nullptr;
  if constexpr (kVec) {  // the first key tile starts arriving while Q loads
    loadTileAsync<T, kDPad, kStride, kKeys16>(sK0, k, a.ks.seq, 0, a.seqK, a.headDim);
    loadTileAsync<T, kDvPad, kVStride, kKeys16>(sV0, v, a.vs.seq, 0, a.seqK, a.valueDim);
    commitCopies();
  }
  loadTile<T, kDPad, kStride, kRows, kVec>(sQ, q, a.qs.seq, row0, a.seqQ, a.headDim);
  __syncthreads();
  // This warp's 16 query rows as A fragments (each warp reads only its own rows of sQ).
  uint32_t qf[kDPad / 16][4];
#pragma unroll
  for (int kk = 0; kk < kDPad / 16; ++kk)
    ldmatrixX4<false>(qf[kk], sQ + (warp * 16 + (lane & 15)) * kStride + kk * 16 + (lane >> 4) * 8);
  float o[kDvPad / 8][4] = {};
  float rowMax[2] = {-INFINITY, -INFINITY}, rowSum[2] = {0.f, 0.f};
  const int rows[2] = {row0 + warp * 16 + g, row0 + warp * 16 + g + 8};
  const bool warpActive = row0 + warp * 16 < a.seqQ;  // warp-uniform
  int buffer = 0;                                     // the K/V stage holding tile key0
  for (int key0 = 0; key0 < a.seqK; key0 += kKeys16, buffer ^= 1) {
    T* const sK = sK0 + buffer * kKeys16 * kStride;
    T* const sV = sV0 + buffer * kKeys16 * kVStride;
    if constexpr (kVec) {
      // Tile key0 was copied into `buffer` one iteration ago (or before Q): start the next
      // into the other buffer, which every warp finished with at the previous iteration's
      // closing barrier, then wait for this one only.
      if (key0 + kKeys16 < a.seqK) {
        T* const nextK = sK0 + (buffer ^ 1) * kKeys16 * kStride;
        T* const nextV = sV0 + (buffer ^ 1) * kKeys16 * kVStride;
        loadTileAsync<T, kDPad, kStride, kKeys16>(nextK, k, a.ks.seq, key0 + kKeys16, a.seqK,
                                                  a.headDim);
        loadTileAsync<T, kDvPad, kVStride, kKeys16>(nextV, v, a.vs.seq, key0 + kKeys16, a.seqK,
                                                    a.valueDim);
        commitCopies();
        waitCopies<1>();
      } else {
        waitCopies<0>();
      }
      __syncthreads();  // every thread's copies of this tile are visible
    } else {
      __syncthreads();  // every warp is done with the previous K and V tiles
      loadTile<T, kDPad, kStride, kKeys16, false>(sK, k, a.ks.seq, key0, a.seqK, a.headDim);
      loadTile<T, kDvPad, kVStride, kKeys16, false>(sV, v, a.vs.seq, key0, a.seqK, a.valueDim);
      __syncthreads();
    }
    // Keys past the end (the last tile of a sequence that is not a multiple of 64, e.g.
    // ViT's 197) and warps whose 16 rows all lie past the end skip their products: the
    // skipped scores stay 0 and are masked to -inf below, so only work is saved.
    const int tileKeys = a.seqK - key0;
    const bool fullTile = tileKeys >= kKeys16;
    float s[kKeys16 / 8][4] = {};
#pragma unroll
    for (int kk = 0; kk < kDPad / 16; ++kk) {
#pragma unroll
      for (int n = 0; n < kKeys16 / 16; ++n) {
        if (!warpActive || n * 16 >= tileKeys) continue;
        uint32_t kf[4];
        ldmatrixX4<false>(kf, sK + (n * 16 + (lane & 7) + ((lane >> 4) << 3)) * kStride + kk * 16 +
                                  ((lane >> 3) & 1) * 8);
        mma16816<T>(s[2 * n], qf[kk], kf[0], kf[1]);
        mma16816<T>(s[2 * n + 1], qf[kk], kf[2], kf[3]);
      }
    }
    // Logits in log2 units; keys past the end are -inf. c[e]: row g (e < 2) or g + 8,
    // key 8n + 2t + (e & 1).
    float tileMax[2] = {-INFINITY, -INFINITY};
    // The common tile (no bound to check, no mask, a positive scale) keeps the raw
    // products: the max commutes with the scale, which is applied inside the exponent's
    // FMA below. Other tiles hold the scaled logits.
    const bool rawTile = fullTile && !mask && a.scaleLog2 > 0.f;
    if (rawTile) {
#pragma unroll
      for (int n = 0; n < kKeys16 / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) tileMax[e >> 1] = fmaxf(tileMax[e >> 1], s[n][e]);
      }
      tileMax[0] *= a.scaleLog2;
      tileMax[1] *= a.scaleLog2;
    } else {
#pragma unroll
      for (int n = 0; n < kKeys16 / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = key0 + n * 8 + 2 * t + (e & 1), r = e >> 1;
          float x = s[n][e] * a.scaleLog2;
          if (key >= a.seqK)
            x = -INFINITY;
          else if (mask && rows[r] < a.seqQ)
            x += toFloat(mask[rows[r] * a.ms[2] + key * a.ms[3]]) * kLog2e;
          s[n][e] = x;
          tileMax[r] = fmaxf(tileMax[r], x);
        }
      }
    }
    float base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      tileMax[r] = fmaxf(tileMax[r], __shfl_xor_sync(kFullMask, tileMax[r], 1));
      tileMax[r] = fmaxf(tileMax[r], __shfl_xor_sync(kFullMask, tileMax[r], 2));
      float correction;
      base[r] = rescale(tileMax[r], &rowMax[r], &correction);
      rowSum[r] *= correction;
#pragma unroll
      for (int d = 0; d < kDvPad / 8; ++d) {
        o[d][2 * r] *= correction;
        o[d][2 * r + 1] *= correction;
      }
    }
    const float scaleOfRaw = rawTile ? a.scaleLog2 : 1.f;
#pragma unroll
    for (int n = 0; n < kKeys16 / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[n][e] = exp2Ftz(fmaf(s[n][e], scaleOfRaw, -base[e >> 1]));
        rowSum[e >> 1] += s[n][e];
      }
    }
    // O += P V: P's accumulator layout is the A fragment layout of the next product.
#pragma unroll
    for (int kk = 0; kk < kKeys16 / 16; ++kk) {
      if (!warpActive || kk * 16 >= tileKeys) continue;  // P is 0 there
      const uint32_t pf[4] = {packPair<T>(s[2 * kk][0], s[2 * kk][1]),
                              packPair<T>(s[2 * kk][2], s[2 * kk][3]),
                              packPair<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              packPair<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dn = 0; dn < kDvPad / 16; ++dn) {
        uint32_t vf[4];
        ldmatrixX4<true>(vf, sV + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kVStride +
                                 dn * 16 + (lane >> 4) * 8);
        mma16816<T>(o[2 * dn], pf, vf[0], vf[1]);
        mma16816<T>(o[2 * dn + 1], pf, vf[2], vf[3]);
      }
    }
    if constexpr (kVec) __syncthreads();  // every warp is done with this buffer's tiles
  }
  // Normalize and stage the warp's 16 rows in its own rows of sQ, then store them. Rows
  // wider than Q's reach into other warps' Q rows: wait until every warp has its Q
  // fragments (a key loop of zero tiles passes no barrier).
  if constexpr (kVec) waitCopies<0>();  // no copy in flight at exit (a key loop of no tiles)
  if constexpr (kVStride > kStride) __syncthreads();
  T* stage = sQ + warp * 16 * kVStride;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    rowSum[r] += __shfl_xor_sync(kFullMask, rowSum[r], 1);
    rowSum[r] += __shfl_xor_sync(kFullMask, rowSum[r], 2);
    // A fully masked row sums to 0: NaN as unfused, or 0 with nan_to_zero.
    const float inv = a.nanToZero && rowSum[r] == 0.f ? 0.f : 1.f / rowSum[r];
#pragma unroll
    for (int d = 0; d < kDvPad / 8; ++d)
      *reinterpret_cast<uint32_t*>(stage + (g + 8 * r) * kVStride + d * 8 + 2 * t) =
          packPair<T>(o[d][2 * r] * inv, o[d][2 * r + 1] * inv);
  }
  __syncwarp();
  T* y = static_cast<T*>(a.y) + b * a.ys.batch + h * a.ys.head;
  constexpr int kPer = kVec ? 8 : 1;
  for (int c = lane; c < 16 * kDvPad / kPer; c += 32) {
    const int r = c / (kDvPad / kPer), col = (c % (kDvPad / kPer)) * kPer;
    const int row = row0 + warp * 16 + r;
    if (row >= a.seqQ || col >= a.valueDim) continue;
    if constexpr (kVec)
      *reinterpret_cast<uint4*>(y + row * a.ys.seq + col) =
          *reinterpret_cast<const uint4*>(stage + r * kVStride + col);
    else
      y[row * a.ys.seq + col] = stage[r * kVStride + col];
  }
}

// ---- float32: SIMT ---------------------------------------------------------------
// Thread (ty, tx) = (tid / 8, tid % 8) owns rows ty + 16i (i < 4), keys tx + 8j of each
// tile (j < 4) and output columns tx + 8j (j < kDvPad / 8); a row's 8 lanes share a warp.

template <int kDPad, int kDvPad>
__global__ void __launch_bounds__(kThreads) attentionSimt(AttentionArgs a) {
  constexpr int kQStride = kDPad + 1;  // odd strides: rows in distinct banks
  extern __shared__ __align__(16) unsigned char shared[];
  float* sQ = reinterpret_cast<float*>(shared);
  float* sK = sQ + kRows * kQStride;
  float* sV = sK + kKeys32 * kQStride;
  float* sP = sV + kKeys32 * kDvPad;  // [kRows][kKeys32 + 1]
  const int b = blockIdx.z, h = blockIdx.y, row0 = blockIdx.x * kRows;
  const int ty = threadIdx.x / 8, tx = threadIdx.x % 8;
  const float* q = static_cast<const float*>(a.q) + b * a.qs.batch + h * a.qs.head;
  const float* k = static_cast<const float*>(a.k) + b * a.ks.batch + h * a.ks.head;
  const float* v = static_cast<const float*>(a.v) + b * a.vs.batch + h * a.vs.head;
  const float* mask = a.mask ? static_cast<const float*>(a.mask) +
                                   (a.maskPeriod > 0 ? b % a.maskPeriod : b) * a.ms[0] + h * a.ms[1]
                             : nullptr;
  loadTile<float, kDPad, kQStride, kRows, false>(sQ, q, a.qs.seq, row0, a.seqQ, a.headDim);
  float o[4][kDvPad / 8] = {};
  float rowMax[4], rowSum[4] = {};
#pragma unroll
  for (int i = 0; i < 4; ++i) rowMax[i] = -INFINITY;
  for (int key0 = 0; key0 < a.seqK; key0 += kKeys32) {
    __syncthreads();
    loadTile<float, kDPad, kQStride, kKeys32, false>(sK, k, a.ks.seq, key0, a.seqK, a.headDim);
    loadTile<float, kDvPad, kDvPad, kKeys32, false>(sV, v, a.vs.seq, key0, a.seqK, a.valueDim);
    __syncthreads();
    float s[4][4] = {};
    for (int d = 0; d < kDPad; ++d) {
      float qv[4], kv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) qv[i] = sQ[(ty + 16 * i) * kQStride + d];
#pragma unroll
      for (int j = 0; j < 4; ++j) kv[j] = sK[(tx + 8 * j) * kQStride + d];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) s[i][j] = fmaf(qv[i], kv[j], s[i][j]);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + ty + 16 * i;
      float tileMax = -INFINITY;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int key = key0 + tx + 8 * j;
        float x = s[i][j] * a.scaleLog2;
        if (key >= a.seqK)
          x = -INFINITY;
        else if (mask && row < a.seqQ)
          x += mask[row * a.ms[2] + key * a.ms[3]] * kLog2e;
        s[i][j] = x;
        tileMax = fmaxf(tileMax, x);
      }
      for (int m = 1; m < 8; m <<= 1)
        tileMax = fmaxf(tileMax, __shfl_xor_sync(kFullMask, tileMax, m));
      float correction;
      const float base = rescale(tileMax, &rowMax[i], &correction);
      rowSum[i] *= correction;
#pragma unroll
      for (int j = 0; j < kDvPad / 8; ++j) o[i][j] *= correction;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float p = exp2f(s[i][j] - base);
        rowSum[i] += p;
        sP[(ty + 16 * i) * (kKeys32 + 1) + tx + 8 * j] = p;
      }
    }
    __syncwarp();  // a row's probabilities come from its own 8 lanes
    for (int key = 0; key < kKeys32; ++key) {
      float vv[kDvPad / 8];
#pragma unroll
      for (int j = 0; j < kDvPad / 8; ++j) vv[j] = sV[key * kDvPad + tx + 8 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float p = sP[(ty + 16 * i) * (kKeys32 + 1) + key];
#pragma unroll
        for (int j = 0; j < kDvPad / 8; ++j) o[i][j] = fmaf(p, vv[j], o[i][j]);
      }
    }
    __syncwarp();  // sP is rewritten by the next tile
  }
  float* y = static_cast<float*>(a.y) + b * a.ys.batch + h * a.ys.head;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    for (int m = 1; m < 8; m <<= 1) rowSum[i] += __shfl_xor_sync(kFullMask, rowSum[i], m);
    const int row = row0 + ty + 16 * i;
    if (row >= a.seqQ) continue;
    const float inv = a.nanToZero && rowSum[i] == 0.f ? 0.f : 1.f / rowSum[i];
#pragma unroll
    for (int j = 0; j < kDvPad / 8; ++j)
      if (tx + 8 * j < a.valueDim) y[row * a.ys.seq + tx + 8 * j] = o[i][j] * inv;
  }
}

// ---- Launchers -------------------------------------------------------------------

size_t sharedBytes(DataType type, int dPad, int dvPad) {
  if (type == DataType::kFloat32)
    return sizeof(float) *
           ((kRows + kKeys32) * (dPad + 1) + kKeys32 * dvPad + kRows * (kKeys32 + 1));
  return 2 * static_cast<size_t>(sharedElements16(dPad, dvPad));
}

template <class Kernel>
Status launchKernel(Kernel kernel, const AttentionArgs& a, dim3 grid, size_t bytes,
                    cudaStream_t stream, const char* name) {
  KILN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(bytes)));
  kernel<<<grid, kThreads, bytes, stream>>>(a);
  KILN_CUDA_CHECK_LAUNCH(name);
  return Status::ok();
}

template <class T, int kDPad, int kDvPad>
Status launchTensorCore(const AttentionArgs& a, dim3 grid, DataType type, cudaStream_t stream) {
  const size_t bytes = sharedBytes(type, kDPad, kDvPad);
  if (vectorizable(a))
    return launchKernel(attentionTensorCore<T, kDPad, kDvPad, true>, a, grid, bytes, stream,
                        "attentionTensorCore");
  return launchKernel(attentionTensorCore<T, kDPad, kDvPad, false>, a, grid, bytes, stream,
                      "attentionTensorCore");
}

// float32 runs the SIMT kernel, float16 / bfloat16 the tensor-core one.
template <class T, int kDPad, int kDvPad>
Status launchForHeadSizes(const AttentionArgs& a, dim3 grid, DataType type, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, float>)
    return launchKernel(attentionSimt<kDPad, kDvPad>, a, grid, sharedBytes(type, kDPad, kDvPad),
                        stream, "attentionSimt");
  else
    return launchTensorCore<T, kDPad, kDvPad>(a, grid, type, stream);
}

template <class T, int kDPad>
Status launchForValueSize(const AttentionArgs& a, dim3 grid, DataType type, cudaStream_t stream) {
  switch (paddedHeadSize(a.valueDim)) {
    case 32:
      return launchForHeadSizes<T, kDPad, 32>(a, grid, type, stream);
    case 64:
      return launchForHeadSizes<T, kDPad, 64>(a, grid, type, stream);
    default:
      return launchForHeadSizes<T, kDPad, 128>(a, grid, type, stream);
  }
}

template <class T>
Status launchForHeadSize(const AttentionArgs& a, dim3 grid, DataType type, cudaStream_t stream) {
  switch (paddedHeadSize(a.headDim)) {
    case 32:
      return launchForValueSize<T, 32>(a, grid, type, stream);
    case 64:
      return launchForValueSize<T, 64>(a, grid, type, stream);
    default:
      return launchForValueSize<T, 128>(a, grid, type, stream);
  }
}

// ---- NaN for fully masked rows (after cuDNN's graph) ------------------------------
// One warp per distinct mask row (b, h, i) over the dims the mask does not broadcast; the
// lanes read its keys, and a row every key of which is -inf writes NaN into the Y rows it
// covers (every head where the mask's head dim is broadcast, every query where its query
// dim is).
template <class T>
__global__ void nanForFullyMaskedRows(FullyMaskedRowsLaunch l, int64_t maskHeads,
                                      int64_t maskQueries) {
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  const int lane = threadIdx.x % 32;
  const int64_t rows = l.batch * maskHeads * maskQueries;
  const T* mask = static_cast<const T*>(l.mask);
  T* y = static_cast<T*>(l.y);
  for (int64_t r = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; r < rows;
       r += warps) {
    const int64_t i = r % maskQueries, h = (r / maskQueries) % maskHeads,
                  b = r / (maskQueries * maskHeads);
    const T* row = mask + b * l.maskStrides[0] + h * l.maskStrides[1] + i * l.maskStrides[2];
    bool masked = true;
    for (int64_t j = lane; j < l.seqK && masked; j += 32) masked = toFloat(row[j]) == -INFINITY;
    if (!__all_sync(kFullMask, masked)) continue;
    const int64_t h0 = maskHeads == 1 ? 0 : h, h1 = maskHeads == 1 ? l.heads : h + 1;
    const int64_t i0 = maskQueries == 1 ? 0 : i, i1 = maskQueries == 1 ? l.seqQ : i + 1;
    const T nan = fromFloat<T>(NAN);
    for (int64_t hh = h0; hh < h1; ++hh)
      for (int64_t ii = i0; ii < i1; ++ii)
        for (int64_t d = lane; d < l.valueDim; d += 32)
          y[b * l.ys.batch + hh * l.ys.head + ii * l.ys.seq + d] = nan;
  }
}

}  // namespace

Status launchNanForFullyMaskedRows(const FullyMaskedRowsLaunch& launch, cudaStream_t stream) {
  const int64_t maskHeads = launch.maskStrides[1] != 0 ? launch.heads : 1;
  const int64_t maskQueries = launch.maskStrides[2] != 0 ? launch.seqQ : 1;
  const int64_t warps = launch.batch * maskHeads * maskQueries;
  constexpr int kWarpsPerBlock = 8;
  const unsigned blocks = static_cast<unsigned>(
      std::min<int64_t>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock, 65535LL * 32));
  return dispatchDeviceType<device_types::kFloat16 | device_types::kBFloat16>(
      launch.type, [&](auto tag) -> Status {
        nanForFullyMaskedRows<decltype(tag)>
            <<<blocks, kWarpsPerBlock * 32, 0, stream>>>(launch, maskHeads, maskQueries);
        KILN_CUDA_CHECK_LAUNCH("nanForFullyMaskedRows");
        return Status::ok();
      });
}

Status launchAttention(const AttentionLaunch& launch, cudaStream_t stream) {
  const AttentionArgs& a = launch.args;
  // seqQ <= 2^30 (fusedAttentionGpuLimits): no overflow.
  const dim3 grid(static_cast<unsigned>((static_cast<int64_t>(a.seqQ) + kRows - 1) / kRows),
                  static_cast<unsigned>(launch.heads), static_cast<unsigned>(launch.batch));
  return dispatchDeviceType<kAttentionDeviceTypes>(launch.type, [&](auto tag) {
    return launchForHeadSize<decltype(tag)>(a, grid, launch.type, stream);
  });
}

}  // namespace kiln::cuda::flash
