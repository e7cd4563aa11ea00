// Reference kernel of ai.kiln FusedAttention (contract: ir/fused_attention.h):
//   Y[b, h, i, :] = sum_j softmax_j(scale * <Q[b, h, i, :], K[b, h, j, :]> + M[b, h, i, j]) V[b, h,
//   j, :]
// Q, K, V, M and Y are read and written through the layouts' strides, so the head
// transposes the pass removed never happen here either. Storage float32, float64,
// float16 or bfloat16 (one type for every input); dot products, the softmax and the
// weighted sum run in double, and only Y is rounded to storage. For float32 this is
// the unfused MatMul, Mul, Add, Softmax, MatMul chain within float rounding.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/ops/op_utils.h"
#include "ir/fused_attention.h"
#include "kiln/passes.h"

namespace kiln::cpu {
namespace {

template <class T>
void attention(const FusedAttentionGeometry& g, const T* q, const T* k, const T* v, const T* mask,
               T* y) {
  std::vector<double> p(static_cast<size_t>(g.seqK));
  std::vector<double> acc(static_cast<size_t>(g.valueDim));
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t h = 0; h < g.heads; ++h) {
      for (int64_t i = 0; i < g.seqQ; ++i) {
        const T* qi = q + b * g.q.batch + h * g.q.head + i * g.q.seq;
        double maxValue = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < g.seqK; ++j) {
          const T* kj = k + b * g.k.batch + h * g.k.head + j * g.k.seq;
          double dot = 0.0;
          for (int64_t d = 0; d < g.headDim; ++d)
            dot += static_cast<double>(qi[d]) * static_cast<double>(kj[d]);
          double s = dot * static_cast<double>(g.scale);
          if (mask)
            s += static_cast<double>(mask[(g.maskPeriod > 0 ? b % g.maskPeriod : b) * g.mask[0] +
                                          h * g.mask[1] + i * g.mask[2] + j * g.mask[3]]);
          p[j] = s;
          maxValue = std::max(maxValue, s);
        }
        T* yi = y + b * g.y.batch + h * g.y.head + i * g.y.seq;
        if (g.nanToZero && !(maxValue > -std::numeric_limits<double>::infinity())) {
          std::fill(yi, yi + g.valueDim, static_cast<T>(0.f));  // no finite score
          continue;
        }
        double sum = 0.0;
        for (int64_t j = 0; j < g.seqK; ++j) {
          p[j] = std::exp(p[j] - maxValue);  // all -inf: NaN, as Softmax gives
          sum += p[j];
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < g.seqK; ++j) {
          const T* vj = v + b * g.v.batch + h * g.v.head + j * g.v.seq;
          for (int64_t d = 0; d < g.valueDim; ++d) acc[d] += p[j] * static_cast<double>(vj[d]);
        }
        for (int64_t d = 0; d < g.valueDim; ++d)
          yi[d] = static_cast<T>(static_cast<ComputeType<T>>(acc[d] / sum));
      }
    }
  }
}

Status fusedAttentionKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  const Tensor* mask = ctx.inputOrNull(3);
  if (k.type() != q.type() || v.type() != q.type() || (mask && mask->type() != q.type()))
    return ctx.error("Q, K, V and M must have one type (Q is " +
                     std::string(dataTypeName(q.type())) + ")");
  FusedAttentionGeometry g;
  const std::string why = fusedAttentionGeometry(ctx.node(), q.shape(), k.shape(), v.shape(),
                                                 mask ? &mask->shape() : nullptr, &g);
  if (!why.empty()) return ctx.error(why);
  Tensor& y = ctx.allocateOutput(0, q.type(), g.outputShape);
  if (y.numel() == 0) return Status::ok();
  Status status = dispatchFloatTypes(q.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    // STRIDED views start at their offsets (fusedAttentionGeometry checked they fit).
    attention<T>(g, q.data<T>() + g.q.offset, k.data<T>() + g.k.offset, v.data<T>() + g.v.offset,
                 mask ? mask->data<T>() : nullptr, y.data<T>());
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

}  // namespace

void registerFusedAttentionKernels(KernelRegistry& registry) {
  registry.add(kFusedAttentionOp, 1, 1000, &fusedAttentionKernel, kKilnDomain);
}

}  // namespace kiln::cpu
