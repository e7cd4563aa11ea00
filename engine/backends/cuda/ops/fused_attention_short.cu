// ai.kiln FusedAttention on CUDA, the short-sequence kernel (contract: fused_attention_impl.h,
// launchShortAttention; the flash kernel for everything else: fused_attention_impl.cu).
// Both sequences and both head sizes <= 32 (TNT's pixel attention: 16 pixels, heads of 6):
// the flash kernel's 64-row blocks would leave 3 of 4 warps idle and pad 6 to 32. Here each warp
// takes one (batch, head): K and V (zero-filled to 32 x 32, float) in its shared rows, lane i holds
// query row i, its 32 scores and its output row in registers (every loop fully unrolled, the
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

constexpr int kShortWarps = 4;  // warps a block, one (batch, head) each

template <class T>
__global__ void __launch_bounds__(kShortWarps * 32)
    attentionShort(AttentionArgs a, int64_t heads, int64_t problems) {
  __shared__ float sK[kShortWarps][kShortLimit][kShortLimit + 1];
  __shared__ float sV[kShortWarps][kShortLimit][kShortLimit + 1];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t problem = int64_t(blockIdx.x) * kShortWarps + warp;
  if (problem >= problems) return;  // the whole warp: no block barrier below
  const int64_t b = problem / heads, h = problem % heads;
  const T* q = static_cast<const T*>(a.q) + b * a.qs.batch + h * a.qs.head;
  const T* k = static_cast<const T*>(a.k) + b * a.ks.batch + h * a.ks.head;
  const T* v = static_cast<const T*>(a.v) + b * a.vs.batch + h * a.vs.head;
  for (int e = lane; e < kShortLimit * kShortLimit; e += 32) {
    const int j = e / kShortLimit, d = e % kShortLimit;
    sK[warp][j][d] = j < a.seqK && d < a.headDim ? toFloat(k[j * a.ks.seq + d]) : 0.f;
    sV[warp][j][d] = j < a.seqK && d < a.valueDim ? toFloat(v[j * a.vs.seq + d]) : 0.f;
  }
  __syncwarp();
  const int i = lane;
  if (i >= a.seqQ) return;
  float qv[kShortLimit];
#pragma unroll
  for (int d = 0; d < kShortLimit; ++d) qv[d] = d < a.headDim ? toFloat(q[i * a.qs.seq + d]) : 0.f;
  const T* maskRow = a.mask ? static_cast<const T*>(a.mask) +
                                  (a.maskPeriod > 0 ? b % a.maskPeriod : b) * a.ms[0] +
                                  h * a.ms[1] + i * a.ms[2]
                            : nullptr;
  float s[kShortLimit];
  float rowMax = -INFINITY;
#pragma unroll
  for (int j = 0; j < kShortLimit; ++j) {
    float dot = 0.f;
#pragma unroll
    for (int d = 0; d < kShortLimit; ++d) dot = fmaf(qv[d], sK[warp][j][d], dot);
    float x = dot * a.scaleLog2;
    if (j >= a.seqK)
      x = -INFINITY;
    else if (maskRow)
      x = fmaf(maskLogit(maskRow[j * a.ms[3]]), kLog2e, x);
    s[j] = x;
    rowMax = fmaxf(rowMax, x);
  }
  const float base = rowMax == -INFINITY ? 0.f : rowMax;
  float rowSum = 0.f, o[kShortLimit] = {};
#pragma unroll
  for (int j = 0; j < kShortLimit; ++j) {
    const float p = exp2f(s[j] - base);
    rowSum += p;
    const float rounded = toFloat(fromFloat<T>(p));
#pragma unroll
    for (int d = 0; d < kShortLimit; ++d) o[d] = fmaf(rounded, sV[warp][j][d], o[d]);
  }
  const float inv = a.nanToZero && rowSum == 0.f ? 0.f : 1.f / rowSum;
  T* y = static_cast<T*>(a.y) + b * a.ys.batch + h * a.ys.head + i * a.ys.seq;
#pragma unroll
  for (int d = 0; d < kShortLimit; ++d)
    if (d < a.valueDim) y[d] = fromFloat<T>(o[d] * inv);
}

}  // namespace

Status launchShortAttention(const AttentionLaunch& launch, cudaStream_t stream) {
  const AttentionArgs& a = launch.args;
  const int64_t problems = launch.batch * launch.heads;  // <= 65535^2: no overflow
  const unsigned blocks = static_cast<unsigned>((problems + kShortWarps - 1) / kShortWarps);
  return dispatchDeviceType<kAttentionDeviceTypes>(launch.type, [&](auto tag) -> Status {
    attentionShort<decltype(tag)>
        <<<blocks, kShortWarps * 32, 0, stream>>>(a, launch.heads, problems);
    KILN_CUDA_CHECK_LAUNCH("attentionShort");
    return Status::ok();
  });
}

}  // namespace kiln::cuda::flash
