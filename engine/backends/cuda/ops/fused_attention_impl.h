// The contract between fused_attention.cpp (host: the checks, the geometry, the output, the
// implementation text, the race with cuDNN and the registration) and fused_attention_impl.cu
// (device: Kiln's flash-attention kernels, their shared-memory sizes and launch geometry).
// Plain C++, included by both compilers.
//
// launchAttention enqueues Kiln's kernel for one FusedAttention on `stream`: short sequences
// (shortSequences) a warp per (batch, head); otherwise a grid of ceil(seqQ / 64) x heads x batch
// blocks, the kernel picked by the element type (float32: SIMT, float16 / bfloat16: mma.sync), the
// head sizes padded to 32, 64, 128 or 256 (paddedHeadSizes) and, on the tensor cores, 16-byte
// loads when vectorizable(args). It assumes the host half checked: the type is in
// kAttentionDeviceTypes (another gives kUnsupported "data type X"), the geometry fits
// fusedAttentionGpuLimits (head sizes 1..256, the wide kernel's shared memory on this device,
// heads and batches <= 65535, sequences <= 2^30), Y is allocated and holds at least one
// element, and every pointer already has its STRIDED view's offset applied. Returns the
// status of cudaFuncSetAttribute or of the launch (by kernel name).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>

#include "backends/cuda/device_type_sets.h"
#include "ir/fused_attention.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::flash {

// Q, K, V, the mask and Y: one float storage type.
constexpr uint32_t kAttentionDeviceTypes = device_types::kStorageFloats;

constexpr float kLog2e = 1.4426950408889634f;

// The kernels' only parameter, passed by value: pointers, sizes and element strides of
// one FusedAttention.
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

// A head size as the kernels hold it in shared memory: 32, 64, 128 or 256.
inline int paddedHeadSize(int64_t d) {
  return d <= 32 ? 32 : d <= 64 ? 64 : d <= 128 ? 128 : 256;
}

// The padded head sizes (D, Dv) the 64-row kernels run: each its own paddedHeadSize up to
// 128; when either is over 128 both are 256 (one wide kernel a type rather than seven).
struct PaddedHeadSizes {
  int d = 32, dv = 32;
};
inline PaddedHeadSizes paddedHeadSizes(int64_t headDim, int64_t valueDim) {
  PaddedHeadSizes p{paddedHeadSize(headDim), paddedHeadSize(valueDim)};
  if (p.d == 256 || p.dv == 256) p = {256, 256};
  return p;
}

// 16-byte loads and stores: D and Dv multiples of 8, every base pointer 16-byte aligned
// and every stride a multiple of 8 elements (a STRIDED view's may not be).
inline bool vectorizable(const AttentionArgs& a) {
  if (a.headDim % 8 != 0 || a.valueDim % 8 != 0) return false;
  for (const AttentionStrides* s : {&a.qs, &a.ks, &a.vs, &a.ys})
    if (s->batch % 8 != 0 || s->head % 8 != 0 || s->seq % 8 != 0) return false;
  for (const void* p : {a.q, a.k, a.v, static_cast<const void*>(a.y)})
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

// Both sequences and both head sizes at most kShortLimit: launchAttention runs the
// short-sequence kernel, a warp per (batch, head) with every row in registers, instead of
// 64-row blocks (TNT's 16-pixel attention with heads of 6: 3 of 4 warps idle, 6 padded to 32).
constexpr int kShortLimit = 32;
inline bool shortSequences(const AttentionArgs& a) {
  return a.seqQ <= kShortLimit && a.seqK <= kShortLimit && a.headDim <= kShortLimit &&
         a.valueDim <= kShortLimit;
}

// The short-sequence kernel's shape for a launch that passes shortSequences: K and V
// zero-filled to `keys` (16 or 32) x `dims` (8, 16 or 32, the larger head size's), and
// `pairs` (batch, head) problems a warp: 2 when the queries fit 16 lanes, except at 32 x 32.
struct ShortAttentionTile {
  int keys = 32, dims = 32, pairs = 1;
};
inline ShortAttentionTile shortAttentionTile(const AttentionArgs& a) {
  ShortAttentionTile t;
  t.keys = a.seqK <= 16 ? 16 : 32;
  const int d = a.headDim > a.valueDim ? a.headDim : a.valueDim;
  t.dims = d <= 8 ? 8 : d <= 16 ? 16 : 32;
  t.pairs = a.seqQ <= 16 && !(t.keys == 32 && t.dims == 32) ? 2 : 1;
  return t;
}

// One FusedAttention run: the kernels' arguments, the element type and the grid's heads
// (y) and batches (z).
struct AttentionLaunch {
  AttentionArgs args;
  DataType type = DataType::kUndefined;
  int64_t heads = 0, batch = 0;
};
Status launchAttention(const AttentionLaunch& launch, cudaStream_t stream);
// Whether launchAttention runs Hopper's warpgroup kernel (fused_attention_wgmma.cu) for
// `launch`: float16 / bfloat16, both head sizes padded to 64 (33..64: BERT's, ViT's, GPT-2's),
// vectorizable(args), not shortSequences, at least one key, on a compute capability 9.0
// device of a build with sm_90a code (sm90a_device.h), no mask and at least 64 queries (fewer
// fill part of the warpgroup's 64 rows, where the mma.sync kernel's idle warps skip theirs;
// not measured); with a mask (BERT's padding rows) the mma.sync kernel measured faster (H200,
// 2026-12-03: 0.0536 against 0.0640 ms; unmasked, the warpgroup kernel 0.054 against 0.061 ms on
// ViT-B/16's shape, 0.094 against 0.109 at 1024 tokens; docs/benchmarks.md, twenty-fourth session).
// KILN_ATTENTION_KERNEL=mma keeps the mma.sync kernel everywhere, =wgmma takes the warpgroup one
// with a mask too (A/B runs and tests).
bool runsWgmmaAttention(const AttentionLaunch& launch);
// The warpgroup kernel alone, for a launch that passes runsWgmmaAttention. Returns the
// launch's status.
Status launchAttentionWgmma(const AttentionLaunch& launch, cudaStream_t stream);
// The short-sequence kernel alone (fused_attention_short.cu), for a launch that passes
// shortSequences: a warp per (batch, head). Returns the launch's status.
Status launchShortAttention(const AttentionLaunch& launch, cudaStream_t stream);

// Y's rows whose every key the mask sets to -inf become NaN, the unfused Softmax's value
// there, after a candidate that writes 0 in such a row (cuDNN's graph; a layer with
// nan_to_zero wants the 0 and does not call this). The mask is [B, H, Sq, Sk] through
// `maskStrides` (0 on a broadcast dim, 1 for the keys): each distinct mask row is read once
// (a [B, 1, 1, Sk] padding mask: B rows) and, when fully masked, writes NaN into every Y
// row it covers. Assumes `mask` and `y` have their offsets applied, the type is a 16-bit
// float of kAttentionDeviceTypes and every size is positive. Returns the launch's status.
struct FullyMaskedRowsLaunch {
  DataType type = DataType::kUndefined;
  const void* mask = nullptr;
  void* y = nullptr;
  int64_t batch = 0, heads = 0, seqQ = 0, seqK = 0, valueDim = 0;
  int64_t maskStrides[4] = {};  // (b, h, i, j)
  AttentionStrides ys;
};
Status launchNanForFullyMaskedRows(const FullyMaskedRowsLaunch& launch, cudaStream_t stream);

}  // namespace kiln::cuda::flash
