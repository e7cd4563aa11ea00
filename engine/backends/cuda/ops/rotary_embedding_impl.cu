// The device half of RotaryEmbedding (host half: rotary_embedding.cpp; contract:
// rotary_embedding_impl.h): one thread per element of X, interleaved or split pairs,
// the cache row picked by position_ids (read here, never waited on by the host) or by
// (batch, seq); features past the rotated 2 * half are copied.
#include <cstdint>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/op_common.cuh"
#include "backends/cuda/ops/rotary_embedding_impl.h"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda {
namespace {

template <class T>
__global__ void rotaryKernel(const T* __restrict__ x, const T* __restrict__ cosCache,
                             const T* __restrict__ sinCache, T* __restrict__ y, RotaryParams p,
                             int64_t n) {
  KILN_GRID_LOOP(idx, n) {
    const int64_t i = idx % p.headSize;
    const int64_t rest = idx / p.headSize;
    int64_t b, s;
    if (p.packed) {  // (batch, seq, heads, headSize)
      const int64_t bs = rest / p.heads;
      s = bs % p.seq;
      b = bs / p.seq;
    } else {  // (batch, heads, seq, headSize)
      s = rest % p.seq;
      b = rest / p.seq / p.heads;
    }
    if (i >= 2 * p.half) {
      y[idx] = x[idx];
      continue;
    }
    int64_t row;
    if (p.ids) {
      const int64_t at = b * p.idsBatchStride + s;
      const int64_t pos =
          p.ids64 ? static_cast<const int64_t*>(p.ids)[at] : static_cast<const int32_t*>(p.ids)[at];
      row = pos >= 0 && pos < p.positions ? pos * p.half : -1;
    } else {
      row = (b * p.cacheBatchStride + s) * p.half;
    }
    int64_t pair, partner;
    bool first;
    if (p.interleaved) {
      pair = i / 2;
      first = (i % 2) == 0;
      partner = first ? idx + 1 : idx - 1;
    } else {
      first = i < p.half;
      pair = first ? i : i - p.half;
      partner = first ? idx + p.half : idx - p.half;
    }
    if (row < 0) {
      y[idx] = fromFloat<T>(0.f);
      continue;
    }
    const float c = toFloat(cosCache[row + pair]), sn = toFloat(sinCache[row + pair]);
    const float self = toFloat(x[idx]), other = toFloat(x[partner]);
    // first: x1' = c x1 - s x2; second: x2' = s x1 + c x2 (x1 = other).
    y[idx] = fromFloat<T>(first ? c * self - sn * other : sn * other + c * self);
  }
}

}  // namespace

Status launchRotaryEmbedding(const RotaryLaunch& args, cudaStream_t stream) {
  return dispatchDeviceType<kRotaryDeviceTypes>(args.type, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = args.n;
    rotaryKernel<T><<<gridFor(n), kBlockSize, 0, stream>>>(
        static_cast<const T*>(args.x), static_cast<const T*>(args.cosCache),
        static_cast<const T*>(args.sinCache), static_cast<T*>(args.y), args.params, n);
    KILN_CUDA_CHECK_LAUNCH("RotaryEmbedding");
    return Status::ok();
  });
}

}  // namespace kiln::cuda
