// Kiln's flash attention on Hopper's warpgroup MMAs (sm_90a `wgmma`; contract:
// fused_attention_impl.h, runsWgmmaAttention and launchAttentionWgmma; the mma.sync kernel
// beside it in fused_attention_impl.cu runs every other case). For 16-bit Q, K, V with head
// sizes D and Dv in 33..64 (padded to 64: ViT, DeiT, CLIP, GPT-2, Whisper, T5, BERT) and 16-byte
// loads; by default only without a mask and with at least 64 queries, where it measured faster
// than the mma.sync kernel.
//
// A block is one warpgroup (4 warps, 128 threads) and owns 64 query rows of one (batch,
// head): wgmma's M. Per 64-key tile: S = Q K^T is four m64n64k16 wgmmas straight from shared
// memory, the online softmax runs on S's accumulators in registers (a row's 64 scores over its
// 4 lanes, as in the mma.sync kernel), and O += P V is four m64n64k16 wgmmas with P from
// registers (the accumulator layout rounded to the storage type is the A fragment layout) and V
// from shared memory, transposed (V's [key][dv] rows are B's MN-major operand). A partial last
// tile's zero-filled keys are multiplied too (their scores set to -inf); P V stops at its last
// 16 keys.
//
// Shared memory (41 KB): Q's 64 x 64 tile and two stages of K's and V's 64 x 64 tiles in
// wgmma's 128-byte swizzle (loadTile), aligned to 1024 bytes; the next tile's copies (cp.async)
// run while the current one is multiplied. Rows past the sequences and columns past the head
// sizes are zero-filled. The output is staged in K's first stage (rows of 72 elements) and
// stored in 16-byte pieces.
//
// Measured on an H200 (2026-12-03, bench/layer_probe.py, ms a layer; docs/benchmarks.md,
// twenty-fourth session): ViT-B/16's shape (B64 H12 S197) 0.054 against the mma.sync kernel's
// 0.061, 1024 tokens 0.094 against 0.109, BERT's masked shape 0.064 against 0.054 (so masked
// heads keep the mma.sync kernel); cuDNN's fused attention (0.046-0.064) stays faster on all of
// them and wins the layer's race there. The same kernel with unswizzled operands (core
// matrices of 8 rows x 16 bytes, 128 contiguous bytes each) ran 0.084 on ViT's shape: 1.55x
// slower, the wgmma operand reads' cost without the swizzle.
//
// This file is compiled for sm_90a only (engine/CMakeLists.txt); launchAttention runs it on
// compute capability 9.0 devices only.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/async_copy.cuh"
#include "backends/cuda/ops/attention_mask_logit.cuh"
#include "backends/cuda/ops/fused_attention_impl.h"
#include "backends/cuda/ops/mma_f16.cuh"
#include "backends/cuda/ops/wgmma_f16.cuh"
#include "backends/cuda/row_kernels.cuh"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda::flash {
namespace {

constexpr int kRows = 64;      // query rows a block: wgmma's M
constexpr int kKeys = 64;      // keys a tile
constexpr int kThreads = 128;  // one warpgroup
constexpr int kHead = 64;      // D and Dv as held in shared memory
constexpr int kTileBytes = kRows * kHead * 2;
constexpr int kStageStride = kHead + 8;  // the output's staged rows (elements)
static_assert(kRows * kStageStride * 2 <= 2 * kTileBytes, "the output fits K's stages");

// Rows [row0, row0 + 64) of one head into a tile in wgmma's 128-byte swizzle: 128-byte rows,
// 8-row atoms of 1024 bytes, row r's 16-byte chunk c stored at chunk c ^ (r % 8). Eight
// consecutive threads copy one whole row (one 128-byte global read, one conflict-free shared
// write).
template <class T>
__device__ __forceinline__ void loadTile(unsigned char* tile, const T* base, int64_t seqStride,
                                         int row0, int rows, int dim) {
#pragma unroll
  for (int pass = 0; pass < kRows * kHead / 8 / kThreads; ++pass) {
    const int c = pass * kThreads + static_cast<int>(threadIdx.x);
    const int row = c >> 3, col = (c & 7) * 8;
    const bool valid = col < dim && row0 + row < rows;
    copyAsync16(tile + row * 128 + (((c & 7) ^ (row & 7)) << 4),
                valid ? base + (row0 + row) * seqStride + col : base, valid);
  }
}

// Descriptors of the three operands (wgmma_f16.cuh), 128-byte swizzled: Q and K K-major, a k16
// step 32 bytes further inside the swizzle atom; V MN-major, a k16 step two 8-key atoms (2048
// bytes) further. Both byte offsets 1024 (the next 8 rows; the other field is unused at 64
// elements, one atom wide, so either reading of it is right).
__device__ __forceinline__ uint64_t queryKeyDescriptor(const unsigned char* tile, int kk) {
  return wgmma::descriptor(tile + kk * 32, 1024, 1024, true);
}
__device__ __forceinline__ uint64_t valueDescriptor(const unsigned char* v, int kk) {
  return wgmma::descriptor(v + kk * 2048, 1024, 1024, true);
}

// 2^x as one MUFU.EX2 (fused_attention_impl.cu's reasons).
__device__ __forceinline__ float exp2Ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// One block's view of its (batch, head): the operands' bases, its query rows, the mask.
template <class T>
struct BlockView {
  const T* q;
  const T* k;
  const T* v;
  const T* maskRows[2];  // this thread's two query rows' mask rows (a row past seqQ: the last)
  bool maskPairs;        // whole tiles read them in 4-byte pairs
  bool rawScores;        // no mask and a positive scale: the scale is applied in exp2's FMA
  int row0, t;           // the block's first query row; lane % 4
};

template <class T>
__device__ __forceinline__ BlockView<T> blockView(const AttentionArgs& a) {
  BlockView<T> w;
  const int b = blockIdx.z, h = blockIdx.y, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  w.row0 = blockIdx.x * kRows;
  w.t = lane & 3;
  w.q = static_cast<const T*>(a.q) + b * a.qs.batch + h * a.qs.head;
  w.k = static_cast<const T*>(a.k) + b * a.ks.batch + h * a.ks.head;
  w.v = static_cast<const T*>(a.v) + b * a.vs.batch + h * a.vs.head;
  const int mb = a.maskPeriod > 0 ? b % a.maskPeriod : b;
  const T* mask = a.mask ? static_cast<const T*>(a.mask) + mb * a.ms[0] + h * a.ms[1] : nullptr;
  w.maskRows[0] = w.maskRows[1] = mask;
  w.maskPairs = false;
  if (mask) {
    w.maskPairs = a.ms[3] == 1;
    for (int r = 0; r < 2; ++r) {
      const int row = w.row0 + warp * 16 + (lane >> 2) + 8 * r;
      w.maskRows[r] = mask + min(row, a.seqQ - 1) * a.ms[2];
      w.maskPairs = w.maskPairs && reinterpret_cast<uintptr_t>(w.maskRows[r]) % 4 == 0;
    }
  }
  w.rawScores = !mask && a.scaleLog2 > 0.f;
  return w;
}

// Key tile `tile` of K and V into stage buffers sK and sV.
template <class T>
__device__ __forceinline__ void loadKeyTile(unsigned char* sK, unsigned char* sV,
                                            const BlockView<T>& w, const AttentionArgs& a,
                                            int tile) {
  loadTile<T>(sK, w.k, a.ks.seq, tile * kKeys, a.seqK, a.headDim);
  loadTile<T>(sV, w.v, a.vs.seq, tile * kKeys, a.seqK, a.valueDim);
}

// S = Q K^T for one key tile into s (issued, not waited for). A partial last tile multiplies
// its zero-filled keys too: m64n16k16 blocks up to the last key wrote subsets of the
// accumulators, for which ptxas serialized every wgmma (C7511).
template <class T>
__device__ __forceinline__ void issueScores(float (&s)[32], const unsigned char* sQ,
                                            const unsigned char* sK) {
  wgmma::fence();
#pragma unroll
  for (int kk = 0; kk < kHead / 16; ++kk)
    wgmma::m64n64k16<T>(s, queryKeyDescriptor(sQ, kk), queryKeyDescriptor(sK, kk), kk);
  wgmma::commit();
}

// The online softmax of one tile's scores s (s[4 j + e]: row g (e < 2) or g + 8, key key0 + 8 j
// + 2 t + (e & 1)), first half: logits in log2 units (raw products when rawScores), keys past
// the end -inf, the running max updated, the running sum and o rescaled. Returns in `base`
// each row's subtrahend for exponentials().
template <class T>
__device__ __forceinline__ void rescaleForTile(float (&s)[32], float (&o)[32], float (&rowMax)[2],
                                               float (&rowSum)[2], float (&base)[2],
                                               const BlockView<T>& w, const AttentionArgs& a,
                                               int key0, int tileKeys) {
  const int t = w.t;
  if (w.maskRows[0]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
      for (int j = 0; j < kKeys / 8; ++j) {
        const int key = 8 * j + 2 * t;
        float m0 = 0.f, m1 = 0.f;
        if (w.maskPairs && tileKeys == kKeys) {
          const uint32_t pair = *reinterpret_cast<const uint32_t*>(w.maskRows[r] + key0 + key);
          m0 = maskLogit(reinterpret_cast<const T*>(&pair)[0]);
          m1 = maskLogit(reinterpret_cast<const T*>(&pair)[1]);
        } else {
          if (key < tileKeys) m0 = maskLogit(w.maskRows[r][(key0 + key) * a.ms[3]]);
          if (key + 1 < tileKeys) m1 = maskLogit(w.maskRows[r][(key0 + key + 1) * a.ms[3]]);
        }
        s[4 * j + 2 * r] = fmaf(m0, kLog2e, s[4 * j + 2 * r] * a.scaleLog2);
        s[4 * j + 2 * r + 1] = fmaf(m1, kLog2e, s[4 * j + 2 * r + 1] * a.scaleLog2);
      }
    }
  } else if (!w.rawScores) {
#pragma unroll
    for (int i = 0; i < 32; ++i) s[i] *= a.scaleLog2;
  }
  if (tileKeys < kKeys) {
#pragma unroll
    for (int i = 0; i < 32; ++i)
      if (8 * (i >> 2) + 2 * t + (i & 1) >= tileKeys) s[i] = -INFINITY;
  }
  float tileMax[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int i = 0; i < 32; ++i) tileMax[(i >> 1) & 1] = fmaxf(tileMax[(i >> 1) & 1], s[i]);
  if (w.rawScores) {
    tileMax[0] *= a.scaleLog2;
    tileMax[1] *= a.scaleLog2;
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    tileMax[r] = fmaxf(tileMax[r], __shfl_xor_sync(kFullMask, tileMax[r], 1));
    tileMax[r] = fmaxf(tileMax[r], __shfl_xor_sync(kFullMask, tileMax[r], 2));
    const float next = fmaxf(rowMax[r], tileMax[r]);
    // A row with no finite logit so far keeps subtracting 0, never -inf.
    base[r] = next == -INFINITY ? 0.f : next;
    const float correction = exp2f(rowMax[r] - base[r]);
    rowMax[r] = next;
    rowSum[r] *= correction;
#pragma unroll
    for (int j = 0; j < kHead / 8; ++j) {
      o[4 * j + 2 * r] *= correction;
      o[4 * j + 2 * r + 1] *= correction;
    }
  }
}

// The second half: the exponentials into the running sum, and P, the exponentials rounded in
// pairs, as wgmma's A fragments (keys 16 kk .. + 15 are 8-column blocks 2 kk and 2 kk + 1).
template <class T>
__device__ __forceinline__ void exponentials(const float (&s)[32], float (&rowSum)[2],
                                             const float (&base)[2], uint32_t (&p)[kKeys / 16][4],
                                             const BlockView<T>& w, const AttentionArgs& a) {
  const float scaleOfRaw = w.rawScores ? a.scaleLog2 : 1.f;
  float e[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    e[i] = exp2Ftz(fmaf(s[i], scaleOfRaw, -base[(i >> 1) & 1]));
    rowSum[(i >> 1) & 1] += e[i];
  }
#pragma unroll
  for (int kk = 0; kk < kKeys / 16; ++kk)
#pragma unroll
    for (int i = 0; i < 4; ++i) p[kk][i] = packPair<T>(e[8 * kk + 2 * i], e[8 * kk + 2 * i + 1]);
}

// O += P V for one key tile, 16 keys a step up to the tile's last key (issued, not waited for).
template <class T>
__device__ __forceinline__ void issueValues(float (&o)[32], const uint32_t (&p)[kKeys / 16][4],
                                            const unsigned char* sV, int tileKeys) {
  wgmma::fence();
#pragma unroll
  for (int kk = 0; kk < kKeys / 16; ++kk) {
    if (16 * kk >= tileKeys) break;
    wgmma::m64n64k16Registers<T>(o, p[kk], valueDescriptor(sV, kk));
  }
  wgmma::commit();
}

// Shared memory: Q's tile, then K's and V's two stages, and the start's alignment to 1024 bytes.
constexpr int kStages = 2;
constexpr int kSharedBytes = (1 + 2 * kStages) * kTileBytes + 1024;

// Two K/V stages; each tile's products and softmax in turn, other blocks' work filling the gaps
// (measured, 2026-12-03: overlapping tile t + 1's S = Q K^T with tile t's softmax, as
// FlashAttention-3 does within a warpgroup, took 32 more registers and a third stage, held 3
// blocks a multiprocessor instead of 4, and was 10-20% slower on every probe shape).
template <class T>
__global__ void __launch_bounds__(kThreads, 4) attentionWgmma(AttentionArgs a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(128) unsigned char shared[];
  // Swizzle atoms start on 1024-byte boundaries (the swizzle is a function of the address).
  unsigned char* const sQ =
      shared + ((1024 - (static_cast<unsigned>(__cvta_generic_to_shared(shared)) & 1023)) & 1023);
  unsigned char* const sK0 = sQ + kTileBytes;             // 2 stages
  unsigned char* const sV0 = sK0 + kStages * kTileBytes;  // 2 stages
  const BlockView<T> w = blockView<T>(a);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
  const int tiles = (a.seqK + kKeys - 1) / kKeys;
  // Q with tile 0, tile 1 in a group of its own: one memory latency before the first products.
  loadTile<T>(sQ, w.q, a.qs.seq, w.row0, a.seqQ, a.headDim);
#pragma unroll
  for (int i = 0; i < kStages; ++i) {
    if (i < tiles) loadKeyTile<T>(sK0 + i * kTileBytes, sV0 + i * kTileBytes, w, a, i);
    commitCopies();  // two groups, the second empty for a single tile
  }
  float o[32], s[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) o[i] = s[i] = 0.f;
  float rowMax[2] = {-INFINITY, -INFINITY}, rowSum[2] = {0.f, 0.f};
  uint32_t p[kKeys / 16][4];
  for (int tile = 0; tile < tiles; ++tile) {
    const int stage = tile & 1;
    const int key0 = tile * kKeys, tileKeys = min(a.seqK - key0, kKeys);
    // Tile `tile` was started one iteration ago (tiles 0 and 1 with Q): start the next into
    // the other stage, which every warp finished with before the previous closing barrier.
    if (tile > 0) {
      if (tile + 1 < tiles)
        loadKeyTile<T>(sK0 + (stage ^ 1) * kTileBytes, sV0 + (stage ^ 1) * kTileBytes, w, a,
                       tile + 1);
      commitCopies();  // possibly empty: the youngest group is always tile + 1's
    }
    waitCopies<1>();  // all but tile + 1's group: this tile's copies are in
    wgmma::fenceOperands();
    __syncthreads();  // every thread's copies of this tile are visible to the async proxy
    issueScores<T>(s, sQ, sK0 + stage * kTileBytes);
    wgmma::wait<0>();
    float base[2];
    rescaleForTile<T>(s, o, rowMax, rowSum, base, w, a, key0, tileKeys);
    exponentials<T>(s, rowSum, base, p, w, a);
    issueValues<T>(o, p, sV0 + stage * kTileBytes, tileKeys);
    wgmma::wait<0>();
    __syncthreads();  // every warp is done with this stage's tiles
  }
  // Normalize and stage the warp's 16 rows (K's stages are free), then store them.
  T* const staged = reinterpret_cast<T*>(sK0) + warp * 16 * kStageStride;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    rowSum[r] += __shfl_xor_sync(kFullMask, rowSum[r], 1);
    rowSum[r] += __shfl_xor_sync(kFullMask, rowSum[r], 2);
    // A fully masked row sums to 0: NaN as unfused, or 0 with nan_to_zero.
    const float inv = a.nanToZero && rowSum[r] == 0.f ? 0.f : 1.f / rowSum[r];
#pragma unroll
    for (int j = 0; j < kHead / 8; ++j)
      *reinterpret_cast<uint32_t*>(staged + (g + 8 * r) * kStageStride + 8 * j + 2 * t) =
          packPair<T>(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
  }
  __syncwarp();
  T* y = static_cast<T*>(a.y) + blockIdx.z * a.ys.batch + blockIdx.y * a.ys.head;
#pragma unroll
  for (int c = lane; c < 16 * kHead / 8; c += 32) {
    const int r = c / (kHead / 8), col = (c % (kHead / 8)) * 8;
    const int row = w.row0 + warp * 16 + r;
    if (row < a.seqQ && col < a.valueDim)
      *reinterpret_cast<uint4*>(y + row * a.ys.seq + col) =
          *reinterpret_cast<const uint4*>(staged + r * kStageStride + col);
  }
  waitCopies<0>();  // no copy in flight at exit
#else
  __trap();  // compiled for sm_90a only; never launched elsewhere
#endif
}

template <class Kernel>
Status launch(Kernel kernel, const AttentionLaunch& l, cudaStream_t stream) {
  const AttentionArgs& a = l.args;
  const dim3 grid(static_cast<unsigned>((static_cast<int64_t>(a.seqQ) + kRows - 1) / kRows),
                  static_cast<unsigned>(l.heads), static_cast<unsigned>(l.batch));
  KILN_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes));
  KILN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                       cudaSharedmemCarveoutMaxShared));
  kernel<<<grid, kThreads, kSharedBytes, stream>>>(a);
  KILN_CUDA_CHECK_LAUNCH("attentionWgmma");
  return Status::ok();
}

}  // namespace

Status launchAttentionWgmma(const AttentionLaunch& l, cudaStream_t stream) {
  return dispatchDeviceType<device_types::kFloat16 | device_types::kBFloat16>(
      l.type, [&](auto tag) -> Status { return launch(attentionWgmma<decltype(tag)>, l, stream); });
}

}  // namespace kiln::cuda::flash
