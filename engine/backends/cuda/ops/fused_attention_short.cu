// ai.kiln FusedAttention on CUDA, the short-sequence kernel (contract: fused_attention_impl.h,
// launchShortAttention; the flash kernel for everything else: fused_attention_impl.cu).
// Both sequences and both head sizes <= 32 (TNT's pixel attention: 16 pixels, heads of 6):
// the flash kernel's 64-row blocks would leave 3 of 4 warps idle and pad 6 to 32. Here a warp
// takes one (batch, head), or two when the queries fit 16 lanes: K and V in shared memory as
// float, zero-filled to the smallest of 16 / 32 keys and 8 / 16 / 32 head elements that holds
// them (TNT: 16 x 8, an eighth of the 32 x 32 work), read as float4; lane i of a problem holds
// query row i, its scores and its output row in registers (every loop fully unrolled, the
// padding zeros instead of bounds checks). Same numerics as the tensor-core kernel: products
// and sums in float, the mask through maskLogit, P rounded to T before P V, the row sum of the
// unrounded P, a row with no finite logit 0 under nan_to_zero and NaN otherwise.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/attention_mask_logit.cuh"
#include "backends/cuda/ops/fused_attention_impl.h"
#include "backends/cuda/row_kernels.cuh"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda::flash {
namespace {

constexpr int kShortWarps = 4;  // warps a block

// kKeys x kDims: the padded K / V tile of one problem; kPairs problems a warp (32 / kPairs
// lanes each, one query row a lane).
template <class T, int kKeys, int kDims, int kPairs>
__global__ void __launch_bounds__(kShortWarps * 32)
    attentionShort(AttentionArgs a, int64_t heads, int64_t problems) {
  static_assert(kDims % 4 == 0 && (kPairs == 1 || kPairs == 2));
  constexpr int kLanes = 32 / kPairs;
  constexpr int kSlots = kShortWarps * kPairs;
  __shared__ __align__(16) float sK[kSlots][kKeys][kDims];
  __shared__ __align__(16) float sV[kSlots][kKeys][kDims];
  const int slot = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int64_t problem = int64_t(blockIdx.x) * kSlots + slot;
  // A problem's lanes leave together and never meet a barrier wider than their own group.
  if (problem >= problems) return;
  const int64_t b = problem / heads, h = problem % heads;
  const T* q = static_cast<const T*>(a.q) + b * a.qs.batch + h * a.qs.head;
  const T* k = static_cast<const T*>(a.k) + b * a.ks.batch + h * a.ks.head;
  const T* v = static_cast<const T*>(a.v) + b * a.vs.batch + h * a.vs.head;
  for (int e = lane; e < kKeys * kDims; e += kLanes) {
    const int j = e / kDims, d = e % kDims;
    sK[slot][j][d] = j < a.seqK && d < a.headDim ? toFloat(k[j * a.ks.seq + d]) : 0.f;
    sV[slot][j][d] = j < a.seqK && d < a.valueDim ? toFloat(v[j * a.vs.seq + d]) : 0.f;
  }
  // This problem's lanes only: with two problems a warp, the other half may have left.
  __syncwarp(kPairs == 1 ? 0xffffffffu : 0xffffu << (threadIdx.x % 32 / 16 * 16));
  const int i = lane;
  if (i >= a.seqQ) return;
  float qv[kDims];
#pragma unroll
  for (int d = 0; d < kDims; ++d) qv[d] = d < a.headDim ? toFloat(q[i * a.qs.seq + d]) : 0.f;
  const T* maskRow = a.mask ? static_cast<const T*>(a.mask) +
                                  (a.maskPeriod > 0 ? b % a.maskPeriod : b) * a.ms[0] +
                                  h * a.ms[1] + i * a.ms[2]
                            : nullptr;
  float s[kKeys];
  float rowMax = -INFINITY;
#pragma unroll
  for (int j = 0; j < kKeys; ++j) {
    const float4* kRow = reinterpret_cast<const float4*>(sK[slot][j]);
    float dot = 0.f;
#pragma unroll
    for (int d4 = 0; d4 < kDims / 4; ++d4) {
      const float4 kk = kRow[d4];
      dot = fmaf(qv[4 * d4], kk.x, dot);
      dot = fmaf(qv[4 * d4 + 1], kk.y, dot);
      dot = fmaf(qv[4 * d4 + 2], kk.z, dot);
      dot = fmaf(qv[4 * d4 + 3], kk.w, dot);
    }
    float x = dot * a.scaleLog2;
    if (j >= a.seqK)
      x = -INFINITY;
    else if (maskRow)
      x = fmaf(maskLogit(maskRow[j * a.ms[3]]), kLog2e, x);
    s[j] = x;
    rowMax = fmaxf(rowMax, x);
  }
  const float base = rowMax == -INFINITY ? 0.f : rowMax;
  float rowSum = 0.f, o[kDims] = {};
#pragma unroll
  for (int j = 0; j < kKeys; ++j) {
    const float p = exp2f(s[j] - base);
    rowSum += p;
    const float rounded = toFloat(fromFloat<T>(p));
    const float4* vRow = reinterpret_cast<const float4*>(sV[slot][j]);
#pragma unroll
    for (int d4 = 0; d4 < kDims / 4; ++d4) {
      const float4 vv = vRow[d4];
      o[4 * d4] = fmaf(rounded, vv.x, o[4 * d4]);
      o[4 * d4 + 1] = fmaf(rounded, vv.y, o[4 * d4 + 1]);
      o[4 * d4 + 2] = fmaf(rounded, vv.z, o[4 * d4 + 2]);
      o[4 * d4 + 3] = fmaf(rounded, vv.w, o[4 * d4 + 3]);
    }
  }
  const float inv = a.nanToZero && rowSum == 0.f ? 0.f : 1.f / rowSum;
  T* y = static_cast<T*>(a.y) + b * a.ys.batch + h * a.ys.head + i * a.ys.seq;
#pragma unroll
  for (int d = 0; d < kDims; ++d)
    if (d < a.valueDim) y[d] = fromFloat<T>(o[d] * inv);
}

template <class T, int kKeys, int kDims, int kPairs>
Status launchPadded(const AttentionLaunch& launch, cudaStream_t stream) {
  const int64_t problems = launch.batch * launch.heads;  // <= 65535^2: no overflow
  constexpr int kSlots = kShortWarps * kPairs;
  const unsigned blocks = static_cast<unsigned>((problems + kSlots - 1) / kSlots);
  attentionShort<T, kKeys, kDims, kPairs>
      <<<blocks, kShortWarps * 32, 0, stream>>>(launch.args, launch.heads, problems);
  KILN_CUDA_CHECK_LAUNCH("attentionShort");
  return Status::ok();
}

template <class T, int kKeys, int kDims>
Status launchPairedOrNot(const AttentionLaunch& launch, int pairs, cudaStream_t stream) {
  if constexpr (kKeys == 32 && kDims == 32) {  // two tiles of 32 x 32 would need 64 KB a block
    return launchPadded<T, kKeys, kDims, 1>(launch, stream);
  } else {
    return pairs == 2 ? launchPadded<T, kKeys, kDims, 2>(launch, stream)
                      : launchPadded<T, kKeys, kDims, 1>(launch, stream);
  }
}

template <class T, int kKeys>
Status launchForKeys(const AttentionLaunch& launch, const ShortAttentionTile& tile,
                     cudaStream_t stream) {
  switch (tile.dims) {
    case 8:
      return launchPairedOrNot<T, kKeys, 8>(launch, tile.pairs, stream);
    case 16:
      return launchPairedOrNot<T, kKeys, 16>(launch, tile.pairs, stream);
    default:
      return launchPairedOrNot<T, kKeys, 32>(launch, tile.pairs, stream);
  }
}

}  // namespace

Status launchShortAttention(const AttentionLaunch& launch, cudaStream_t stream) {
  return dispatchDeviceType<kAttentionDeviceTypes>(launch.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    const ShortAttentionTile tile = shortAttentionTile(launch.args);
    return tile.keys == 16 ? launchForKeys<T, 16>(launch, tile, stream)
                           : launchForKeys<T, 32>(launch, tile, stream);
  });
}

}  // namespace kiln::cuda::flash
