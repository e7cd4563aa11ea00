// RotaryEmbedding (opset 23) on the GPU, with the attributes, defaults and error messages
// of the CPU kernel (backends/cpu/ops/rotary_embedding.cpp).
//
// Contract: 3-D (num_heads) and 4-D input, interleaved or split pairs,
// rotary_embedding_dim, caches indexed by position_ids or (batch, seq, dim/2); float32,
// float16 and bfloat16, computed in float. position_ids stay on the device and are never
// waited on: a position outside the cache cannot raise the CPU's error, so its rotated
// features come out as zeros.
#include <string>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/op_common.cuh"

namespace kiln::cuda {
namespace {

struct RotaryParams {
  int64_t batch = 0, heads = 0, seq = 0, headSize = 0, half = 0;
  bool packed = false, interleaved = false;
  const void* ids = nullptr;  // position_ids or nullptr
  bool ids64 = true;
  int64_t idsBatchStride = 0;    // 0 when position_ids has batch 1
  int64_t cacheBatchStride = 0;  // rows; without position_ids
  int64_t positions = 0;         // cache rows with position_ids
};

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

template <class T>
Status launchRotary(GpuKernelContext& ctx, const DeviceTensor& x, const DeviceTensor& cosCache,
                    const DeviceTensor& sinCache, const DeviceTensor& y, const RotaryParams& p) {
  const int64_t n = x.numel();
  rotaryKernel<T><<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(x.as<T>(), cosCache.as<T>(),
                                                               sinCache.as<T>(), y.as<T>(), p, n);
  KILN_CUDA_CHECK_LAUNCH("RotaryEmbedding");
  return Status::ok();
}

Status rotaryEmbeddingKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DeviceTensor& x = ctx.input(0);
  RotaryParams p;
  if (x.rank() == 4) {
    p.batch = x.shape[0];
    p.heads = x.shape[1];
    p.seq = x.shape[2];
    p.headSize = x.shape[3];
  } else if (x.rank() == 3) {
    p.batch = x.shape[0];
    const int64_t heads = ctx.node().attrInt("num_heads", 0);
    if (heads <= 0 || x.shape[2] % heads != 0)
      return ctx.error("3-D input needs a num_heads attribute dividing its hidden size " +
                       std::to_string(x.shape[2]));
    p.heads = heads;
    p.seq = x.shape[1];
    p.headSize = x.shape[2] / heads;
    p.packed = true;
  } else {
    return ctx.error("input 'X' must be 3-D or 4-D, got " + dims(x));
  }
  const int64_t dim = ctx.node().attrInt("rotary_embedding_dim", 0);
  const int64_t rotary = dim == 0 ? p.headSize : dim;
  if (rotary < 0 || rotary > p.headSize || rotary % 2 != 0)
    return ctx.error("rotary_embedding_dim " + std::to_string(rotary) +
                     " must be even and at most the head size " + std::to_string(p.headSize));
  p.half = rotary / 2;
  p.interleaved = ctx.node().attrInt("interleaved", 0) != 0;
  const DeviceTensor& cosCache = ctx.input(1);
  const DeviceTensor& sinCache = ctx.input(2);
  if (cosCache.type != x.type || sinCache.type != x.type)
    return ctx.error("cos_cache and sin_cache must have X's data type");
  if (cosCache.shape != sinCache.shape)
    return ctx.error("cos_cache " + dims(cosCache) + " and sin_cache " + dims(sinCache) +
                     " differ");
  if (cosCache.rank() < 2 || cosCache.shape.back() != p.half)
    return ctx.error("cache shape " + dims(cosCache) + " must end in " + std::to_string(p.half) +
                     " (rotary_embedding_dim / 2)");
  if (!ctx.hasInput(3)) {
    if (cosCache.rank() != 3 || (cosCache.shape[0] != p.batch && cosCache.shape[0] != 1) ||
        cosCache.shape[1] != p.seq)
      return ctx.error("without position_ids the caches must be (batch, seq, dim/2), got " +
                       dims(cosCache));
    p.cacheBatchStride = cosCache.shape[0] == 1 ? 0 : p.seq;
  } else {
    const DeviceTensor& ids = ctx.input(3);
    if (cosCache.rank() != 2)
      return ctx.error("with position_ids the caches must be 2-D, got " + dims(cosCache));
    if (ids.rank() != 2 || (ids.shape[0] != p.batch && ids.shape[0] != 1) || ids.shape[1] != p.seq)
      return ctx.error("position_ids must be (batch, seq), got " + dims(ids));
    if (!isInteger(ids.type)) return ctx.error("position_ids must be an integer tensor");
    if (!isIndexType(ids.type))
      return ctx.unsupported(std::string("position_ids of type ") + dataTypeName(ids.type));
    p.ids = ids.data;
    p.ids64 = ids.type == DataType::kInt64;
    p.idsBatchStride = ids.shape[0] == 1 ? 0 : p.seq;
    p.positions = cosCache.shape[0];
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (x.numel() == 0) return Status::ok();
  switch (x.type) {
    case DataType::kFloat32:
      return launchRotary<float>(ctx, x, cosCache, sinCache, y, p);
    case DataType::kFloat16:
      return launchRotary<__half>(ctx, x, cosCache, sinCache, y, p);
    case DataType::kBFloat16:
      return launchRotary<__nv_bfloat16>(ctx, x, cosCache, sinCache, y, p);
    default:
      return ctx.unsupported(std::string("X data type ") + dataTypeName(x.type));
  }
}

std::string supportsRotary(const Node&, const std::vector<DataType>& types) {
  for (size_t i = 0; i < 3; ++i) {
    const DataType t = typeAt(types, i);
    if (t != DataType::kUndefined && !isFloatStorage(t))
      return std::string("no GPU kernel for ") + dataTypeName(t) + " inputs";
  }
  const DataType ids = typeAt(types, 3);
  if (ids != DataType::kUndefined && !isIndexType(ids))
    return std::string("no GPU kernel for position_ids of type ") + dataTypeName(ids);
  return "";
}

}  // namespace

void registerRotaryEmbeddingGpuKernel(GpuKernelRegistry& registry) {
  registry.add("RotaryEmbedding", 23, 1000, rotaryEmbeddingKernel, supportsRotary);
}

}  // namespace kiln::cuda
