// ai.kiln FusedAttention on CUDA, the device half (host half: fused_attention.cpp; contract:
// fused_attention_impl.h). Short sequences (both <= 32, head sizes <= 32) run a warp per
// (batch, head) (fused_attention_short.cu); on Hopper, unmasked 16-bit heads of 33..64 with at
// least 64 queries run the warpgroup kernel (fused_attention_wgmma.cu, runsWgmmaAttention);
// everything else one
// flash-style kernel: a block owns 64 query rows of one (batch, head), walks the keys in tiles
// of 64 (float32: 32) with an online softmax (running row max and sum, the partial output
// rescaled when the max grows),
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
//     and DeiT-S's attention at 3-6x their floor, every tile load a stall), and Q comes
//     with the first two key tiles (one memory latency before the first products). Key
//     tiles sit in shared memory in keySlot's order, so a thread's scores of a row are 16
//     consecutive keys and its mask values two 16-byte loads. Counted in the SASS (sm_90,
//     D = 64, instructions a thread per whole masked tile): applying the mask ~790 -> ~150
//     (it computed a 64-bit index and loaded 2 bytes per score), issuing the copies ~200
//     -> ~100, both products ~280 -> ~125 (bounds checks around every mma pair).
//   float32: SIMT FMAs in float (no TF32: the result is the float32 chain's, whatever
//     the engine's TF32 setting).
// Head sizes D (Q, K) and Dv (V) each up to 128, each padded to 32, 64 or 128 in shared
// memory; over 128 (Gemma's 256) both are padded to 256: one block a multiprocessor (165 KB
// of shared memory on the tensor cores, 137 KB in float32) and, on the tensor cores, Q's
// fragments read from shared memory at every tile instead of held in registers (the 64
// registers they take would spill beside the 128 of a 16 x 256 output). The mask, additive
// in Q's storage type, is read through its broadcast strides.
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
#include <cstdlib>
#include <string>
#include <type_traits>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/async_copy.cuh"
#include "backends/cuda/ops/attention_mask_logit.cuh"
#include "backends/cuda/ops/fused_attention_impl.h"
#include "backends/cuda/ops/mma_f16.cuh"
#include "backends/cuda/row_kernels.cuh"
#include "backends/cuda/sm90a_device.h"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda::flash {
namespace {

constexpr int kRows = 64;      // query rows per block
constexpr int kThreads = 128;  // 4 warps
constexpr int kKeys16 = 64;    // keys per tile, tensor-core kernel
constexpr int kKeys32 = 32;    // keys per tile, float32 kernel
constexpr int kPad16 = 8;      // shared row padding (16 bytes): conflict-free ldmatrix

// The tensor-core kernel's key order: a key tile is stored so that shared row 8 * nb + c
// (mma column c of score block nb) holds key 16 * (c / 2) + 2 * nb + c % 2 of the tile.
// Both products read the tile in shared-row order (S's columns and P V's inner dimension
// permuted alike, so nothing changes but which key a score is), and thread t, which owns
// columns 2t and 2t + 1 of every block, holds the 16 consecutive keys 16t .. 16t + 15: its
// mask values are one 32-byte run. Returns the shared row of tile key `key` (0..63).
__device__ __forceinline__ int keySlot(int key) {
  return ((key >> 1) & 7) * 8 + 2 * (key >> 4) + (key & 1);
}

// Rows [row0, row0 + kTileRows) of one head into a shared tile of row stride kStride, one
// element at a time; zero past `rows` and past `dim` (so padded products add nothing).
// kKeyOrder: row r goes to shared row keySlot(r) (key tiles of the tensor-core kernel).
template <class T, int kDPad, int kStride, int kTileRows, bool kKeyOrder>
__device__ __forceinline__ void loadTile(T* tile, const T* base, int64_t seqStride, int row0,
                                         int rows, int dim) {
  for (int e = threadIdx.x; e < kTileRows * kDPad; e += kThreads) {
    const int r = e / kDPad, col = e % kDPad;
    tile[(kKeyOrder ? keySlot(r) : r) * kStride + col] =
        row0 + r < rows && col < dim ? base[(row0 + r) * seqStride + col] : fromFloat<T>(0.f);
  }
}

// loadTile with 16-byte cp.async copies (the caller commits and waits): rows past `rows`
// and columns past `dim` are zero-filled without reading global memory. A thread copies
// one fixed 16-byte column of every (kThreads / chunks)-th row, so the loop unrolls with
// one address step per row (the per-copy divisions and bounds of a strided loop were a
// third of a tile's instructions).
template <class T, int kDPad, int kStride, int kTileRows, bool kKeyOrder>
__device__ __forceinline__ void loadTileAsync(T* tile, const T* base, int64_t seqStride, int row0,
                                              int rows, int dim) {
  constexpr int kChunks = kDPad / 8;
  constexpr int kRowsPerPass = kThreads / kChunks;
  static_assert(kThreads % kChunks == 0 && kTileRows % kRowsPerPass == 0, "whole passes");
  const int r = threadIdx.x / kChunks, col = (threadIdx.x % kChunks) * 8;
  const bool columnValid = col < dim;
  const T* source = base + (row0 + r) * seqStride + col;
  const int64_t passStride = kRowsPerPass * seqStride;
  // keySlot of row r + pass * kRowsPerPass: a step of 2 rows per 16 keys of a pass when
  // passes are whole multiples of 16 rows (r < kRowsPerPass), else computed per pass.
  constexpr bool kSlotSteps = kRowsPerPass % 16 == 0;
  T* target = tile + (kKeyOrder ? keySlot(r) : r) * kStride + col;
#pragma unroll
  for (int pass = 0; pass < kTileRows / kRowsPerPass; ++pass) {
    const int row = r + pass * kRowsPerPass;
    const bool valid = columnValid && row0 + row < rows;
    T* const to = !kKeyOrder   ? target + pass * kRowsPerPass * kStride
                  : kSlotSteps ? target + pass * (kRowsPerPass / 8) * kStride
                               : tile + keySlot(row) * kStride + col;
    copyAsync16(to, valid ? source : base, valid);
    source += passStride;
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
  return dPad > 128 || dvPad > 128 ? 1 : dPad <= 64 && dvPad <= 64 ? 4 : 2;
}

// Q's fragments stay in shared memory (read at every tile) for heads over 128.
constexpr bool queryInShared(int dPad) {
  return dPad > 128;
}
constexpr int queryFragments(int dPad) {
  return queryInShared(dPad) ? 1 : dPad / 16;
}

// One thread's mask values on mask row `row` (already clamped to a real row: rows past
// seqQ compute values that are never stored): keys 16t .. 16t + 15 of the tile (keySlot).
// Two 16-byte loads when the keys are contiguous and the run 16-byte aligned (`vectors`)
// and the tile is whole; else one element at a time, keys past the end read as 0.
template <class T>
struct alignas(16) MaskRun {
  T v[16];
};

template <class T>
__device__ __forceinline__ MaskRun<T> maskRun(const T* row, int64_t keyStride, int key0,
                                              int tileKeys, bool vectors, int t) {
  const int first = 16 * t;
  if (vectors && tileKeys >= kKeys16)
    return *reinterpret_cast<const MaskRun<T>*>(row + key0 + first);
  MaskRun<T> m;
#pragma unroll
  for (int j = 0; j < 16; ++j)
    m.v[j] = first + j < tileKeys ? row[(key0 + first + j) * keyStride] : fromFloat<T>(0.f);
  return m;
}

// S = Q K^T for one key tile: qf holds the warp's 16 query rows as A fragments (or, when
// queryInShared, sQ's rows of the warp are read here), sK the tile in keySlot order.
// kGuard (a partial tile): a pair of score blocks holding only keys past the end (keys
// 4n .. 4n + 3 plus multiples of 16) skips its products (branches that cost a whole tile's
// worth of instructions when every tile took them).
template <class T, int kDPad, int kStride, bool kGuard>
__device__ __forceinline__ void scoreProducts(float (&s)[kKeys16 / 8][4],
                                              const uint32_t (&qf)[queryFragments(kDPad)][4],
                                              const T* sQWarp, const T* sK, int lane,
                                              int tileKeys) {
#pragma unroll
  for (int kk = 0; kk < kDPad / 16; ++kk) {
    uint32_t a[4];
    if constexpr (queryInShared(kDPad)) {
      ldmatrixX4<false>(a, sQWarp + (lane & 15) * kStride + kk * 16 + (lane >> 4) * 8);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = qf[kk][i];
    }
#pragma unroll
    for (int n = 0; n < kKeys16 / 16; ++n) {
      if (kGuard && 4 * n >= tileKeys) continue;
      uint32_t kf[4];
      ldmatrixX4<false>(kf, sK + (n * 16 + (lane & 7) + ((lane >> 4) << 3)) * kStride + kk * 16 +
                                ((lane >> 3) & 1) * 8);
      mma16816<T>(s[2 * n], a, kf[0], kf[1]);
      mma16816<T>(s[2 * n + 1], a, kf[2], kf[3]);
    }
  }
}

// O += P V for one key tile: P (the exponentials in s) in its accumulator layout is the A
// fragment layout of this product; sV holds the tile in keySlot order (as K's). kGuard as
// scoreProducts (P is 0 where it skips).
template <class T, int kDvPad, int kVStride, bool kGuard>
__device__ __forceinline__ void valueProducts(float (&o)[kDvPad / 8][4],
                                              const float (&s)[kKeys16 / 8][4], const T* sV,
                                              int lane, int tileKeys) {
#pragma unroll
  for (int kk = 0; kk < kKeys16 / 16; ++kk) {
    if (kGuard && 4 * kk >= tileKeys) continue;
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
  const int rows[2] = {row0 + warp * 16 + g, row0 + warp * 16 + g + 8};
  // The mask rows of this thread's two query rows (a row past seqQ reads the last one), and
  // whether whole tiles read them in aligned pairs (contiguous keys, even row offsets).
  const T* maskRows[2] = {mask, mask};
  bool maskVectors = false;
  if (mask) {
    for (int r = 0; r < 2; ++r) maskRows[r] = mask + min(rows[r], a.seqQ - 1) * a.ms[2];
    maskVectors = a.ms[3] == 1 && a.ms[2] % 8 == 0 && reinterpret_cast<uintptr_t>(mask) % 16 == 0;
  }
  const int tiles = (a.seqK + kKeys16 - 1) / kKeys16;
  if constexpr (kVec) {
    // Q and the first two key tiles are in flight at once (Q with tile 0, tile 1 in a
    // group of its own), so a block waits for one memory latency before its first products.
    loadTileAsync<T, kDPad, kStride, kRows, false>(sQ, q, a.qs.seq, row0, a.seqQ, a.headDim);
    loadTileAsync<T, kDPad, kStride, kKeys16, true>(sK0, k, a.ks.seq, 0, a.seqK, a.headDim);
    loadTileAsync<T, kDvPad, kVStride, kKeys16, true>(sV0, v, a.vs.seq, 0, a.seqK, a.valueDim);
    commitCopies();
    if (tiles > 1) {
      loadTileAsync<T, kDPad, kStride, kKeys16, true>(sK0 + kKeys16 * kStride, k, a.ks.seq, kKeys16,
                                                      a.seqK, a.headDim);
      loadTileAsync<T, kDvPad, kVStride, kKeys16, true>(sV0 + kKeys16 * kVStride, v, a.vs.seq,
                                                        kKeys16, a.seqK, a.valueDim);
      commitCopies();
      waitCopies<1>();
    } else {
      waitCopies<0>();
    }
  } else {
    loadTile<T, kDPad, kStride, kRows, false>(sQ, q, a.qs.seq, row0, a.seqQ, a.headDim);
  }
  __syncthreads();
  // This warp's 16 query rows as A fragments (each warp reads only its own rows of sQ),
  // unless they stay in shared memory (queryInShared).
  const T* const sQWarp = sQ + warp * 16 * kStride;
  uint32_t qf[queryFragments(kDPad)][4] = {};
  if constexpr (!queryInShared(kDPad)) {
#pragma unroll
    for (int kk = 0; kk < kDPad / 16; ++kk)
      ldmatrixX4<false>(qf[kk], sQWarp + (lane & 15) * kStride + kk * 16 + (lane >> 4) * 8);
  }
  float o[kDvPad / 8][4] = {};
  float rowMax[2] = {-INFINITY, -INFINITY}, rowSum[2] = {0.f, 0.f};
  // Warps whose 16 rows all lie past the end (ViT's last block of 197 rows) only take part
  // in the copies and barriers.
  const bool warpActive = row0 + warp * 16 < a.seqQ;  // warp-uniform
  // No mask and a positive scale: the max commutes with the scale, so the raw products are
  // kept and the scale is applied inside the exponent's FMA below.
  const bool rawScores = !mask && a.scaleLog2 > 0.f;
  for (int tile = 0, key0 = 0; tile < tiles; ++tile, key0 += kKeys16) {
    const int buffer = tile & 1;  // the K/V stage holding this tile
    T* const sK = sK0 + buffer * kKeys16 * kStride;
    T* const sV = sV0 + buffer * kKeys16 * kVStride;
    if constexpr (kVec) {
      // Tiles 0 and 1 came with Q (tile 0 waited for before Q's fragments). Tile `tile` was
      // started one iteration ago: start the next into the other stage, which every warp
      // finished with at the previous iteration's closing barrier, then wait for this one.
      if (tile > 0) {
        if (tile + 1 < tiles) {
          loadTileAsync<T, kDPad, kStride, kKeys16, true>(sK0 + (buffer ^ 1) * kKeys16 * kStride, k,
                                                          a.ks.seq, key0 + kKeys16, a.seqK,
                                                          a.headDim);
          loadTileAsync<T, kDvPad, kVStride, kKeys16, true>(sV0 + (buffer ^ 1) * kKeys16 * kVStride,
                                                            v, a.vs.seq, key0 + kKeys16, a.seqK,
                                                            a.valueDim);
          commitCopies();
          waitCopies<1>();
        } else {
          waitCopies<0>();
        }
        __syncthreads();  // every thread's copies of this tile are visible
      }
    } else {
      __syncthreads();  // every warp is done with the previous K and V tiles
      loadTile<T, kDPad, kStride, kKeys16, true>(sK, k, a.ks.seq, key0, a.seqK, a.headDim);
      loadTile<T, kDvPad, kVStride, kKeys16, true>(sV, v, a.vs.seq, key0, a.seqK, a.valueDim);
      __syncthreads();
    }
    if (warpActive) {
      // Keys past the end (the last tile of a sequence that is not a multiple of 64, e.g.
      // ViT's 197) have their scores set to -inf below.
      const int tileKeys = a.seqK - key0;
      const bool fullTile = tileKeys >= kKeys16;
      float s[kKeys16 / 8][4] = {};
      if (fullTile)
        scoreProducts<T, kDPad, kStride, false>(s, qf, sQWarp, sK, lane, tileKeys);
      else
        scoreProducts<T, kDPad, kStride, true>(s, qf, sQWarp, sK, lane, tileKeys);
      // Logits in log2 units (raw products when rawScores); keys past the end are -inf.
      // s[nb][e]: row g (e < 2) or g + 8, tile key 16t + 2nb + (e & 1) (keySlot). Each case
      // is a loop of its own (per-element branches became predicate shuffling). The mask is
      // read one row at a time after S's products (held across them, its registers
      // spilled at 4 blocks per multiprocessor).
      if (mask) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const MaskRun<T> m = maskRun<T>(maskRows[r], a.ms[3], key0, tileKeys, maskVectors, t);
#pragma unroll
          for (int j = 0; j < 16; ++j) {
            float& x = s[j >> 1][2 * r + (j & 1)];
            x = fmaf(maskLogit(m.v[j]), kLog2e, x * a.scaleLog2);
          }
        }
      } else if (!rawScores) {
#pragma unroll
        for (int nb = 0; nb < kKeys16 / 8; ++nb)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[nb][e] *= a.scaleLog2;
      }
      if (!fullTile) {
#pragma unroll
        for (int nb = 0; nb < kKeys16 / 8; ++nb)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (16 * t + 2 * nb + (e & 1) >= tileKeys) s[nb][e] = -INFINITY;
      }
      float tileMax[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int nb = 0; nb < kKeys16 / 8; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) tileMax[e >> 1] = fmaxf(tileMax[e >> 1], s[nb][e]);
      if (rawScores) {
        tileMax[0] *= a.scaleLog2;
        tileMax[1] *= a.scaleLog2;
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
      const float scaleOfRaw = rawScores ? a.scaleLog2 : 1.f;
#pragma unroll
      for (int n = 0; n < kKeys16 / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[n][e] = exp2Ftz(fmaf(s[n][e], scaleOfRaw, -base[e >> 1]));
          rowSum[e >> 1] += s[n][e];
        }
      }
      if (fullTile)
        valueProducts<T, kDvPad, kVStride, false>(o, s, sV, lane, tileKeys);
      else
        valueProducts<T, kDvPad, kVStride, true>(o, s, sV, lane, tileKeys);
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
          x += maskLogit(mask[row * a.ms[2] + key * a.ms[3]]) * kLog2e;
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
  switch (paddedHeadSizes(a.headDim, a.valueDim).dv) {
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
  switch (paddedHeadSizes(a.headDim, a.valueDim).d) {
    case 32:
      return launchForValueSize<T, 32>(a, grid, type, stream);
    case 64:
      return launchForValueSize<T, 64>(a, grid, type, stream);
    case 128:
      return launchForValueSize<T, 128>(a, grid, type, stream);
    default:  // 256: both padded to it
      return launchForHeadSizes<T, 256, 256>(a, grid, type, stream);
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

bool runsWgmmaAttention(const AttentionLaunch& launch) {
  const AttentionArgs& a = launch.args;
  if (launch.type != DataType::kFloat16 && launch.type != DataType::kBFloat16) return false;
  const PaddedHeadSizes padded = paddedHeadSizes(a.headDim, a.valueDim);
  if (padded.d != 64 || padded.dv != 64 || !vectorizable(a) || shortSequences(a) || a.seqK < 1)
    return false;
  const char* kernel = std::getenv("KILN_ATTENTION_KERNEL");
  const std::string asked = kernel ? kernel : "";
  // Unasked, only where it was measured faster: no mask and at least one whole 64-row block
  // (with fewer queries the mma.sync kernel's idle warps skip their rows; the warpgroup's
  // products always cover 64).
  if (asked == "mma" || (asked != "wgmma" && (a.mask || a.seqQ < 64))) return false;
  return deviceRunsSm90a();
}

Status launchAttention(const AttentionLaunch& launch, cudaStream_t stream) {
  const AttentionArgs& a = launch.args;
  if (shortSequences(a)) return launchShortAttention(launch, stream);
#ifdef KILN_HAVE_SM90A
  if (runsWgmmaAttention(launch)) return launchAttentionWgmma(launch, stream);
#endif
  // seqQ <= 2^30 (fusedAttentionGpuLimits): no overflow.
  const dim3 grid(static_cast<unsigned>((static_cast<int64_t>(a.seqQ) + kRows - 1) / kRows),
                  static_cast<unsigned>(launch.heads), static_cast<unsigned>(launch.batch));
  return dispatchDeviceType<kAttentionDeviceTypes>(launch.type, [&](auto tag) {
    return launchForHeadSize<decltype(tag)>(a, grid, launch.type, stream);
  });
}

}  // namespace kiln::cuda::flash
