// maskLogit: an additive attention mask value as Kiln's attention kernels add it to a logit
// (fused_attention_impl.cu, fused_attention_short.cu). Device code, included by .cu files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <type_traits>

#include "backends/cuda/row_kernels.cuh"

namespace kiln::cuda::flash {

// A mask value ready to be scaled by log2(e). Float32's and bfloat16's lowest values (the
// fill of transformers' masks and of masked_fill) times log2(e) overflow to -inf, so a row
// every key of which they hide turned NaN where the unfused graph gives a uniform row (its
// s + lowest rounds to lowest on every key): finite values below -2^126 are held there,
// still ~1e38 below any score, and then every such key of a row scores the same. In float16
// the same fill arrives as -65504 (an FP16 plan stores it saturating, castTensorSaturating):
// held at -2^126 too, for the same uniform row. -inf stays -inf (a row it hides entirely is
// NaN, as unfused) and NaN stays NaN (a comparison with NaN is false).
template <class T>
__device__ __forceinline__ float maskLogit(T m) {
  const float x = toFloat(m);
  constexpr float kFloor = std::is_same_v<T, __half> ? -65504.f : -0x1p126f;
  return x <= kFloor && x != -INFINITY ? -0x1p126f : x;
}

}  // namespace kiln::cuda::flash
