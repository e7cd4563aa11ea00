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
#include "ops/rotary_params.h"

namespace kiln::cpu {
namespace {

// The node's geometry (ops/rotary_params.h) and where each token's cache row starts.
struct RotaryPlan : ops::RotaryGeometry {
  std::vector<int64_t> cacheRow;  // per (b, s): first element of its cos/sin row

  int64_t offset(int64_t b, int64_t h, int64_t s) const {
    return packed ? (b * seq + s) * heads * headSize + h * headSize
                  : ((b * heads + h) * seq + s) * headSize;
  }
};

// The cache row of every (b, s): by position_ids (each checked against the cache) or by
// the caches' own (batch, seq) rows.
Status readCacheRows(const KernelContext& ctx, RotaryPlan* p) {
  p->cacheRow.resize(static_cast<size_t>(p->batch * p->seq));
  const Tensor* ids = ctx.inputOrNull(3);
  for (int64_t b = 0; b < p->batch; ++b) {
    for (int64_t s = 0; s < p->seq; ++s) {
      int64_t row = (b * p->cacheBatchStride + s) * p->half;
      if (p->byPositionIds) {
        const int64_t pos = ids->valueAsInt64(b * p->idsBatchStride + s);
        if (pos < 0 || pos >= p->positions)
          return ctx.error("position id " + std::to_string(pos) + " is outside the cache of " +
                           std::to_string(p->positions) + " positions");
        row = pos * p->half;
      }
      p->cacheRow[b * p->seq + s] = row;
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
  const Tensor& cosCache = ctx.input(1);
  const Tensor& sinCache = ctx.input(2);
  const Tensor* ids = ctx.inputOrNull(3);
  auto geometry = ops::rotaryGeometry(
      ctx.node(), x.shape(), x.type(), cosCache.shape(), cosCache.type(), sinCache.shape(),
      sinCache.type(), ids ? &ids->shape() : nullptr, ids ? ids->type() : DataType::kUndefined);
  if (!geometry.isOk()) return ctx.error(geometry.status().message());
  RotaryPlan plan;
  static_cast<ops::RotaryGeometry&>(plan) = geometry.value();
  KILN_RETURN_IF_ERROR(readCacheRows(ctx, &plan));
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
