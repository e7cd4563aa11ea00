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
#include "backends/cuda/type_dispatch.cuh"
#include "ops/rotary_params.h"

namespace kiln::cuda {
namespace {

// The node's geometry (ops/rotary_params.h) and the position ids on the device.
struct RotaryParams : ops::RotaryGeometry {
  const void* ids = nullptr;  // position_ids or nullptr
  bool ids64 = true;
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
  const DeviceTensor& cosCache = ctx.input(1);
  const DeviceTensor& sinCache = ctx.input(2);
  const DeviceTensor* ids = ctx.hasInput(3) ? &ctx.input(3) : nullptr;
  auto geometry = ops::rotaryGeometry(ctx.node(), x.shape, x.type, cosCache.shape, cosCache.type,
                                      sinCache.shape, sinCache.type, ids ? &ids->shape : nullptr,
                                      ids ? ids->type : DataType::kUndefined);
  if (!geometry.isOk()) return ctx.error(geometry.status().message());
  RotaryParams p;
  static_cast<ops::RotaryGeometry&>(p) = geometry.value();
  if (ids) {
    if (!isIndexType(ids->type))
      return ctx.unsupported(std::string("position_ids of type ") + dataTypeName(ids->type));
    p.ids = ids->data;
    p.ids64 = ids->type == DataType::kInt64;
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (x.numel() == 0) return Status::ok();
  return dispatchDeviceType(ctx, x.type, device_types::kStorageFloats, [&](auto tag) {
    return launchRotary<decltype(tag)>(ctx, x, cosCache, sinCache, y, p);
  });
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
