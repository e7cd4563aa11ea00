// RotaryEmbedding (opset 23): rotates the first rotary_embedding_dim features of every
// head by the angles whose cosines and sines the caches hold for the token's position.
// Pairs are (x[i], x[i + dim/2]) by default and (x[2i], x[2i + 1]) when interleaved:
//   x1' = cos * x1 - sin * x2,  x2' = sin * x1 + cos * x2
// Features past rotary_embedding_dim pass through unchanged.
//
// The caches are (max_position, dim/2) rows picked by position_ids (batch, seq), or
// without position_ids (batch, seq, dim/2) directly. A batch axis of 1 broadcasts.
#include <string>
#include <vector>

#include "backends/cpu/ops/op_utils.h"

namespace kiln::cpu {
namespace {

struct RotaryPlan {
  int64_t batch = 0, heads = 0, seq = 0, headSize = 0;
  bool packed =
      false;         // 3-D (batch, seq, heads * headSize) rather than (batch, heads, seq, headSize)
  int64_t half = 0;  // rotary_embedding_dim / 2
  bool interleaved = false;
  std::vector<int64_t> cacheRow;  // per (b, s): first element of its cos/sin row

  int64_t offset(int64_t b, int64_t h, int64_t s) const {
    return packed ? (b * seq + s) * heads * headSize + h * headSize
                  : ((b * heads + h) * seq + s) * headSize;
  }
};

Status readLayout(const KernelContext& ctx, const Tensor& x, RotaryPlan* p) {
  p->batch = x.dim(0);
  if (x.rank() == 4) {
    p->heads = x.dim(1);
    p->seq = x.dim(2);
    p->headSize = x.dim(3);
    return Status::ok();
  }
  if (x.rank() != 3)
    return ctx.error("input 'X' must be 3-D or 4-D, got " + shapeToString(x.shape()));
  const int64_t heads = ctx.node().attrInt("num_heads", 0);
  if (heads <= 0 || x.dim(2) % heads != 0)
    return ctx.error("3-D input needs a num_heads attribute dividing its hidden size " +
                     std::to_string(x.dim(2)));
  p->heads = heads;
  p->seq = x.dim(1);
  p->headSize = x.dim(2) / heads;
  p->packed = true;
  return Status::ok();
}

// Resolves the cache row of every (b, s), validating shapes and position ids.
Status readCacheRows(const KernelContext& ctx, const Tensor& cosCache, const Tensor& sinCache,
                     RotaryPlan* p) {
  if (cosCache.shape() != sinCache.shape())
    return ctx.error("cos_cache " + shapeToString(cosCache.shape()) + " and sin_cache " +
                     shapeToString(sinCache.shape()) + " differ");
  if (cosCache.rank() < 2 || cosCache.dim(-1) != p->half)
    return ctx.error("cache shape " + shapeToString(cosCache.shape()) + " must end in " +
                     std::to_string(p->half) + " (rotary_embedding_dim / 2)");
  p->cacheRow.resize(static_cast<size_t>(p->batch * p->seq));
  const Tensor* ids = ctx.inputOrNull(3);
  if (!ids) {
    if (cosCache.rank() != 3 || (cosCache.dim(0) != p->batch && cosCache.dim(0) != 1) ||
        cosCache.dim(1) != p->seq)
      return ctx.error("without position_ids the caches must be (batch, seq, dim/2), got " +
                       shapeToString(cosCache.shape()));
    const int64_t batchStride = cosCache.dim(0) == 1 ? 0 : p->seq;
    for (int64_t b = 0; b < p->batch; ++b)
      for (int64_t s = 0; s < p->seq; ++s)
        p->cacheRow[b * p->seq + s] = (b * batchStride + s) * p->half;
    return Status::ok();
  }
  if (cosCache.rank() != 2)
    return ctx.error("with position_ids the caches must be 2-D, got " +
                     shapeToString(cosCache.shape()));
  if (ids->rank() != 2 || (ids->dim(0) != p->batch && ids->dim(0) != 1) || ids->dim(1) != p->seq)
    return ctx.error("position_ids must be (batch, seq), got " + shapeToString(ids->shape()));
  if (!isInteger(ids->type())) return ctx.error("position_ids must be an integer tensor");
  const int64_t batchStride = ids->dim(0) == 1 ? 0 : p->seq;
  const int64_t positions = cosCache.dim(0);
  for (int64_t b = 0; b < p->batch; ++b) {
    for (int64_t s = 0; s < p->seq; ++s) {
      const int64_t pos = ids->valueAsInt64(b * batchStride + s);
      if (pos < 0 || pos >= positions)
        return ctx.error("position id " + std::to_string(pos) + " is outside the cache of " +
                         std::to_string(positions) + " positions");
      p->cacheRow[b * p->seq + s] = pos * p->half;
    }
  }
  return Status::ok();
}

template <class T>
void rotateTyped(const T* x, const T* cosCache, const T* sinCache, T* y, const RotaryPlan& p) {
  using C = ComputeType<T>;
  const int64_t half = p.half;
  // Interleaved pairs are adjacent; split pairs are half the rotary dimension apart.
  const int64_t pairStride = p.interleaved ? 2 : 1;
  const int64_t partner = p.interleaved ? 1 : half;
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads; ++h) {
      for (int64_t s = 0; s < p.seq; ++s) {
        const int64_t base = p.offset(b, h, s);
        const T* in = x + base;
        T* out = y + base;
        const T* cosRow = cosCache + p.cacheRow[b * p.seq + s];
        const T* sinRow = sinCache + p.cacheRow[b * p.seq + s];
        for (int64_t i = 0; i < half; ++i) {
          const int64_t a = i * pairStride;
          const C x1 = static_cast<C>(in[a]), x2 = static_cast<C>(in[a + partner]);
          const C c = static_cast<C>(cosRow[i]), sn = static_cast<C>(sinRow[i]);
          out[a] = static_cast<T>(c * x1 - sn * x2);
          out[a + partner] = static_cast<T>(sn * x1 + c * x2);
        }
        for (int64_t i = 2 * half; i < p.headSize; ++i) out[i] = in[i];
      }
    }
  }
}

Status rotaryEmbeddingKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  const Tensor& x = ctx.input(0);
  RotaryPlan plan;
  KILN_RETURN_IF_ERROR(readLayout(ctx, x, &plan));
  const int64_t dim = ctx.node().attrInt("rotary_embedding_dim", 0);
  const int64_t rotary = dim == 0 ? plan.headSize : dim;
  if (rotary < 0 || rotary > plan.headSize || rotary % 2 != 0)
    return ctx.error("rotary_embedding_dim " + std::to_string(rotary) +
                     " must be even and at most the head size " + std::to_string(plan.headSize));
  plan.half = rotary / 2;
  plan.interleaved = ctx.node().attrInt("interleaved", 0) != 0;
  const Tensor& cosCache = ctx.input(1);
  const Tensor& sinCache = ctx.input(2);
  if (cosCache.type() != x.type() || sinCache.type() != x.type())
    return ctx.error("cos_cache and sin_cache must have X's data type");
  KILN_RETURN_IF_ERROR(readCacheRows(ctx, cosCache, sinCache, &plan));
  Tensor& y = ctx.allocateOutput(0, x.type(), x.shape());
  Status status = dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    rotateTyped(x.data<T>(), cosCache.data<T>(), sinCache.data<T>(), y.data<T>(), plan);
    return Status::ok();
  });
  if (!status.isOk()) return ctx.unsupported("X " + status.message());
  return Status::ok();
}

}  // namespace

void registerRotaryEmbeddingKernels(KernelRegistry& registry) {
  registry.add("RotaryEmbedding", 23, 1000, &rotaryEmbeddingKernel);
}

}  // namespace kiln::cpu
