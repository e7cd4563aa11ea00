// The tensor-core flash attention kernel (float16 / bfloat16; mma.sync m16n8k16 with
// ldmatrix, sm_80+), included by fused_attention.cu only. A block of 4 warps owns
// 64 x kM query rows of one (batch, head); each warp owns kM groups of 16 rows and keeps
// their Q fragments in registers. The block walks the keys in tiles of kN with an online
// softmax; S = Q K^T and O += P V accumulate in float, P is rounded to the storage type
// for the second product (as the unfused graph's softmax output is).
//   kM = 2 reads each K and V fragment (ldmatrix) once for two MMAs instead of one, and
//   kN = 128 rescales the running output once per 128 keys instead of 64: fewer
//   instructions per MMA (the kernel was instruction-bound: Nsight Compute on DeiT-S,
//   issue slots 62% busy, the ALU pipe the busiest), at the cost of registers and
//   shared memory (fewer resident blocks). Which one is faster is measured, not assumed.
// 16-byte loads and stores when kVec (D % 8 == 0, 16-byte aligned pointers and strides);
// then K and V tiles are double-buffered: the next tile's cp.async copies run while the
// current one is multiplied. Else element loads with zero fill.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/ops/async_copy.cuh"
#include "backends/cuda/ops/fused_attention_tiles.cuh"
#include "backends/cuda/ops/mma_f16.cuh"
#include "backends/cuda/row_kernels.cuh"

namespace kiln::cuda::attention {


// Shared memory of the tensor-core kernel, in elements: Q's tile (also the output's
// staging rows, hence the larger of the two strides), then two stages of K's and V's
// tiles of kN keys each.
constexpr int sharedElements16(int dPad, int dvPad, int m, int n) {
  const int stride = dPad + kPad16, vStride = dvPad + kPad16;
  return kRows * m * (stride > vStride ? stride : vStride) + 2 * n * (stride + vStride);
}

// Blocks per multiprocessor the registers are sized for. The first shape (16 rows a
// warp, 64 keys) with head sizes <= 64: four blocks fit the shared memory (4 x 46 KB), so
// 128 registers a thread (ptxas: no spills). Larger tiles hold more accumulators and
// are held to 2 blocks by shared memory or registers: up to 255 registers.
constexpr int tensorCoreBlocksPerSm(int dPad, int dvPad, int m, int n) {
  return m == 1 && n == 64 && dPad <= 64 && dvPad <= 64 ? 4 : 2;
}

template <class T, int kDPad, int kDvPad, int kM, int kN, bool kVec>
__global__ void __launch_bounds__(kThreads, tensorCoreBlocksPerSm(kDPad, kDvPad, kM, kN))
    attentionTensorCore(AttentionArgs a) {
  constexpr int kStride = kDPad + kPad16;    // Q and K rows
  constexpr int kVStride = kDvPad + kPad16;  // V rows and the staged output rows
  constexpr int kBlockRows = kRows * kM;
  constexpr int kWarpRows = 16 * kM;
  extern __shared__ __align__(16) unsigned char shared[];
  T* sQ = reinterpret_cast<T*>(shared);
  T* const sK0 = sQ + kBlockRows * (kStride > kVStride ? kStride : kVStride);  // 2 stages
  T* const sV0 = sK0 + 2 * kN * kStride;                                       // 2 stages
  const int b = blockIdx.z, h = blockIdx.y, row0 = blockIdx.x * kBlockRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
  const int warpRow0 = row0 + warp * kWarpRows;
  const T* q = static_cast<const T*>(a.q) + b * a.qs.batch + h * a.qs.head;
  const T* k = static_cast<const T*>(a.k) + b * a.ks.batch + h * a.ks.head;
  const T* v = static_cast<const T*>(a.v) + b * a.vs.batch + h * a.vs.head;
  if constexpr (kVec) {  // the first key tile starts arriving while Q loads
    loadTileAsync<T, kDPad, kStride, kN>(sK0, k, a.ks.seq, 0, a.seqK, a.headDim);
    loadTileAsync<T, kDvPad, kVStride, kN>(sV0, v, a.vs.seq, 0, a.seqK, a.valueDim);
    commitCopies();
  }
  loadTile<T, kDPad, kStride, kBlockRows, kVec>(sQ, q, a.qs.seq, row0, a.seqQ, a.headDim);
  __syncthreads();
  // This warp's row groups' Q as A fragments (each warp reads only its own rows of sQ).
  uint32_t qf[kM][kDPad / 16][4];
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int kk = 0; kk < kDPad / 16; ++kk)
      ldmatrixX4<false>(qf[m][kk], sQ + (warp * kWarpRows + m * 16 + (lane & 15)) * kStride +
                                       kk * 16 + (lane >> 4) * 8);
  // Mask rows of this thread's two rows per group, read through the mask's broadcast
  // strides; rows past the end read the last row (never stored).
  const T* maskRow[kM][2] = {};
  if (a.mask) {
    const int mb = a.maskPeriod > 0 ? b % a.maskPeriod : b;
    const T* mask = static_cast<const T*>(a.mask) + mb * a.ms[0] + h * a.ms[1];
#pragma unroll
    for (int m = 0; m < kM; ++m)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        maskRow[m][r] = mask + min(warpRow0 + m * 16 + g + 8 * r, a.seqQ - 1) * a.ms[2];
  }
  float o[kM][kDvPad / 8][4] = {};
  float rowMax[kM][2], rowSum[kM][2] = {};
  bool groupActive[kM];  // warp-uniform: the group has a row before the end
#pragma unroll
  for (int m = 0; m < kM; ++m) {
    rowMax[m][0] = rowMax[m][1] = -INFINITY;
    groupActive[m] = warpRow0 + m * 16 < a.seqQ;
  }
  int buffer = 0;  // the K/V stage holding tile key0
  for (int key0 = 0; key0 < a.seqK; key0 += kN, buffer ^= 1) {
    T* const sK = sK0 + buffer * kN * kStride;
    T* const sV = sV0 + buffer * kN * kVStride;
    if constexpr (kVec) {
      // Tile key0 was copied into `buffer` one iteration ago (or before Q): start the next
      // into the other buffer, which every warp finished with at the previous iteration's
      // closing barrier, then wait for this one only.
      if (key0 + kN < a.seqK) {
        loadTileAsync<T, kDPad, kStride, kN>(sK0 + (buffer ^ 1) * kN * kStride, k, a.ks.seq,
                                             key0 + kN, a.seqK, a.headDim);
        loadTileAsync<T, kDvPad, kVStride, kN>(sV0 + (buffer ^ 1) * kN * kVStride, v, a.vs.seq,
                                               key0 + kN, a.seqK, a.valueDim);
        commitCopies();
        waitCopies<1>();
      } else {
        waitCopies<0>();
      }
      __syncthreads();  // every thread's copies of this tile are visible
    } else {
      __syncthreads();  // every warp is done with the previous K and V tiles
      loadTile<T, kDPad, kStride, kN, false>(sK, k, a.ks.seq, key0, a.seqK, a.headDim);
      loadTile<T, kDvPad, kVStride, kN, false>(sV, v, a.vs.seq, key0, a.seqK, a.valueDim);
      __syncthreads();
    }
    // Keys past the end (the last tile of a sequence that is not a multiple of kN, e.g.
    // ViT's 197) and row groups that lie past the end skip their products: the skipped
    // scores stay 0 and are masked to -inf below, so only work is saved.
    const int tileKeys = a.seqK - key0;
    const bool fullTile = tileKeys >= kN;
    float s[kM][kN / 8][4] = {};
#pragma unroll
    for (int kk = 0; kk < kDPad / 16; ++kk) {
#pragma unroll
      for (int n = 0; n < kN / 16; ++n) {
        if (n * 16 >= tileKeys) continue;
        uint32_t kf[4];
        ldmatrixX4<false>(kf, sK + (n * 16 + (lane & 7) + ((lane >> 4) << 3)) * kStride + kk * 16 +
                                  ((lane >> 3) & 1) * 8);
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          if (!groupActive[m]) continue;
          mma16816<T>(s[m][2 * n], qf[m][kk], kf[0], kf[1]);
          mma16816<T>(s[m][2 * n + 1], qf[m][kk], kf[2], kf[3]);
        }
      }
    }
    // The common tile (no bound to check, no mask, a positive scale) keeps the raw
    // products: the max commutes with the scale, which is applied inside the exponent's
    // FMA below. Other tiles hold the logits in log2 units, keys past the end -inf.
    // s[m][n][e]: row g (e < 2) or g + 8 of group m, key 8n + 2t + (e & 1).
    const bool rawTile = fullTile && !a.mask && a.scaleLog2 > 0.f;
    const float scaleOfRaw = rawTile ? a.scaleLog2 : 1.f;
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      float tileMax[2] = {-INFINITY, -INFINITY};
      if (rawTile) {
#pragma unroll
        for (int n = 0; n < kN / 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) tileMax[e >> 1] = fmaxf(tileMax[e >> 1], s[m][n][e]);
        tileMax[0] *= a.scaleLog2;
        tileMax[1] *= a.scaleLog2;
      } else {
#pragma unroll
        for (int n = 0; n < kN / 8; ++n) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = key0 + n * 8 + 2 * t + (e & 1), r = e >> 1;
            float x = s[m][n][e] * a.scaleLog2;
            if (!fullTile && key >= a.seqK)
              x = -INFINITY;
            else if (a.mask)
              x = fmaf(toFloat(maskRow[m][r][key * a.ms[3]]), kLog2e, x);
            s[m][n][e] = x;
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
        base[r] = rescale(tileMax[r], &rowMax[m][r], &correction);
        rowSum[m][r] *= correction;
#pragma unroll
        for (int d = 0; d < kDvPad / 8; ++d) {
          o[m][d][2 * r] *= correction;
          o[m][d][2 * r + 1] *= correction;
        }
      }
#pragma unroll
      for (int n = 0; n < kN / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[m][n][e] = exp2Ftz(fmaf(s[m][n][e], scaleOfRaw, -base[e >> 1]));
          rowSum[m][e >> 1] += s[m][n][e];
        }
      }
    }
    // O += P V: P's accumulator layout is the A fragment layout of the next product.
#pragma unroll
    for (int kk = 0; kk < kN / 16; ++kk) {
      if (kk * 16 >= tileKeys) continue;  // P is 0 there
      uint32_t pf[kM][4];
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        pf[m][0] = packPair<T>(s[m][2 * kk][0], s[m][2 * kk][1]);
        pf[m][1] = packPair<T>(s[m][2 * kk][2], s[m][2 * kk][3]);
        pf[m][2] = packPair<T>(s[m][2 * kk + 1][0], s[m][2 * kk + 1][1]);
        pf[m][3] = packPair<T>(s[m][2 * kk + 1][2], s[m][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dn = 0; dn < kDvPad / 16; ++dn) {
        uint32_t vf[4];
        ldmatrixX4<true>(vf, sV + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kVStride +
                                 dn * 16 + (lane >> 4) * 8);
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          if (!groupActive[m]) continue;
          mma16816<T>(o[m][2 * dn], pf[m], vf[0], vf[1]);
          mma16816<T>(o[m][2 * dn + 1], pf[m], vf[2], vf[3]);
        }
      }
    }
    if constexpr (kVec) __syncthreads();  // every warp is done with this buffer's tiles
  }
  // Normalize and stage the warp's rows in its own rows of sQ, then store them. Rows
  // wider than Q's reach into other warps' Q rows: wait until every warp has its Q
  // fragments (a key loop of zero tiles passes no barrier).
  if constexpr (kVec) waitCopies<0>();  // no copy in flight at exit (a key loop of no tiles)
  if constexpr (kVStride > kStride) __syncthreads();
  T* stage = sQ + warp * kWarpRows * kVStride;
#pragma unroll
  for (int m = 0; m < kM; ++m) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = rowSum[m][r];
      sum += __shfl_xor_sync(kFullMask, sum, 1);
      sum += __shfl_xor_sync(kFullMask, sum, 2);
      // A fully masked row sums to 0: NaN as unfused, or 0 with nan_to_zero.
      const float inv = a.nanToZero && sum == 0.f ? 0.f : 1.f / sum;
#pragma unroll
      for (int d = 0; d < kDvPad / 8; ++d)
        *reinterpret_cast<uint32_t*>(stage + (m * 16 + g + 8 * r) * kVStride + d * 8 + 2 * t) =
            packPair<T>(o[m][d][2 * r] * inv, o[m][d][2 * r + 1] * inv);
    }
  }
  __syncwarp();
  T* y = static_cast<T*>(a.y) + b * a.ys.batch + h * a.ys.head;
  constexpr int kPer = kVec ? 8 : 1;
  for (int c = lane; c < kWarpRows * kDvPad / kPer; c += 32) {
    const int r = c / (kDvPad / kPer), col = (c % (kDvPad / kPer)) * kPer;
    const int row = warpRow0 + r;
    if (row >= a.seqQ || col >= a.valueDim) continue;
    if constexpr (kVec)
      *reinterpret_cast<uint4*>(y + row * a.ys.seq + col) =
          *reinterpret_cast<const uint4*>(stage + r * kVStride + col);
    else
      y[row * a.ys.seq + col] = stage[r * kVStride + col];
  }
}

}  // namespace kiln::cuda::attention
