// FlexAttention (domain ai.onnx.preview, opset 1): attention over rank-4 Q, K, V
// whose scores and probabilities user subgraphs may rewrite:
//   S = (Q*sqrt(scale)) (K*sqrt(scale))^T;  S = score_mod(S);  P = softmax(S);
//   P = prob_mod(P);  Y = P V
// Query head h reads KV head h / (q_heads / kv_heads). The subgraphs see the whole
// (B, Hq, L, S) tensor in softmax_precision (default float32, double for double
// inputs), so scores are materialized rather than streamed per head.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/ops/attention_common.h"

namespace kiln::cpu {
namespace {

using attention::HeadLayout;

struct FlexSpec {
  HeadLayout q, k, v;
  int64_t group = 1;
  double sqrtScale = 1.0;
  DataType softmaxType = DataType::kFloat32;
};

std::string dims(const Tensor& t) {
  return shapeToString(t.shape());
}

Status readFlexSpec(const KernelContext& ctx, FlexSpec* s) {
  const Tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
    return ctx.error("Q, K, V must be 4-D, got " + dims(q) + ", " + dims(k) + ", " + dims(v));
  if (k.type() != q.type() || v.type() != q.type())
    return ctx.error("Q, K, V must share one data type");
  s->q = {q.dim(0), q.dim(1), q.dim(2), q.dim(3), false};
  s->k = {k.dim(0), k.dim(1), k.dim(2), k.dim(3), false};
  s->v = {v.dim(0), v.dim(1), v.dim(2), v.dim(3), false};
  if (k.dim(0) != q.dim(0) || v.dim(0) != q.dim(0) || k.dim(1) != v.dim(1) ||
      k.dim(2) != v.dim(2) || k.dim(3) != q.dim(3))
    return ctx.error("incompatible Q " + dims(q) + ", K " + dims(k) + ", V " + dims(v));
  if (s->k.heads <= 0 || s->q.heads % s->k.heads != 0)
    return ctx.error("query heads must be a multiple of key/value heads");
  s->group = s->q.heads / s->k.heads;
  const Node& node = ctx.node();
  const double scale = node.hasAttr("scale") ? static_cast<double>(node.attrFloat("scale", 1.f))
                                             : 1.0 / std::sqrt(static_cast<double>(s->q.headSize));
  if (!(scale >= 0.0)) return ctx.error("attribute 'scale' must be non-negative");
  // The reference takes sqrt(scale) in float32 whatever the input type.
  s->sqrtScale = static_cast<double>(std::sqrt(static_cast<float>(scale)));
  s->softmaxType = q.type() == DataType::kFloat64 ? DataType::kFloat64 : DataType::kFloat32;
  if (node.hasAttr("softmax_precision")) {
    const int64_t p = node.attrInt("softmax_precision", 1);
    if (p != 1 && p != 10 && p != 11 && p != 16)
      return ctx.error("attribute 'softmax_precision' must be 1, 10, 11 or 16");
    s->softmaxType = static_cast<DataType>(p);
  }
  return Status::ok();
}

// Runs a modifier subgraph over `values` (shape `shape`, element type `type`) in place.
template <class C>
Status applyModifier(KernelContext& ctx, const char* name, const Shape& shape, DataType type,
                     std::vector<C>* values) {
  const Graph* graph = ctx.node().attrGraph(name);
  if (!graph) return Status::ok();
  Tensor in(type, shape);
  KILN_RETURN_IF_ERROR(attention::writeAll(values->data(), in.numel(), &in));
  std::vector<Tensor> out;
  KILN_RETURN_IF_ERROR_CTX(ctx.runSubgraph(*graph, {in}, &out),
                           ctx.node().describe() + ": " + name);
  if (out.size() != 1 || out[0].shape() != shape)
    return ctx.error(std::string(name) + " must return one tensor of shape " +
                     shapeToString(shape));
  Status status = attention::readAll(out[0], values->data());
  if (!status.isOk()) return ctx.error(std::string(name) + " output: " + status.message());
  return Status::ok();
}

// T: the input type; C: the compute type, double when T or the softmax precision is.
template <class T, class C>
Status runFlex(KernelContext& ctx, const FlexSpec& s) {
  const int64_t batch = s.q.batch, qHeads = s.q.heads, qSeq = s.q.seq, d = s.q.headSize;
  const int64_t kvHeads = s.k.heads, kvSeq = s.k.seq, dv = s.v.headSize;
  std::vector<C> q(static_cast<size_t>(ctx.input(0).numel()));
  std::vector<C> k(static_cast<size_t>(ctx.input(1).numel()));
  std::vector<C> v(static_cast<size_t>(ctx.input(2).numel()));
  KILN_RETURN_IF_ERROR(attention::gatherHeads(ctx.input(0), s.q, s.sqrtScale, q.data()));
  KILN_RETURN_IF_ERROR(attention::gatherHeads(ctx.input(1), s.k, s.sqrtScale, k.data()));
  KILN_RETURN_IF_ERROR(attention::gatherHeads(ctx.input(2), s.v, 1.0, v.data()));
  // P V runs in softmax precision: V is cast to it first.
  attention::roundBuffer(v.data(), static_cast<int64_t>(v.size()), s.softmaxType);

  const Shape scoreShape{batch, qHeads, qSeq, kvSeq};
  std::vector<C> scores(static_cast<size_t>(shapeNumel(scoreShape)));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < qHeads; ++h) {
      const int64_t kv = b * kvHeads + h / s.group;
      gemm(false, true, qSeq, kvSeq, d, C(1), q.data() + (b * qHeads + h) * qSeq * d, d,
           k.data() + kv * kvSeq * d, d, C(0), scores.data() + (b * qHeads + h) * qSeq * kvSeq,
           kvSeq);
    }
  }
  // The product is formed in the input type, then cast to softmax precision.
  for (C& x : scores) x = attention::roundThrough<T>(x);
  attention::roundBuffer(scores.data(), static_cast<int64_t>(scores.size()), s.softmaxType);
  KILN_RETURN_IF_ERROR(applyModifier(ctx, "score_mod", scoreShape, s.softmaxType, &scores));
  const C nan = std::numeric_limits<C>::quiet_NaN();
  for (int64_t r = 0; r < batch * qHeads * qSeq; ++r)
    attention::softmaxRow<C>(scores.data() + r * kvSeq, kvSeq, nan);
  attention::roundBuffer(scores.data(), static_cast<int64_t>(scores.size()), s.softmaxType);
  KILN_RETURN_IF_ERROR(applyModifier(ctx, "prob_mod", scoreShape, s.softmaxType, &scores));

  std::vector<C> y(static_cast<size_t>(batch * qHeads * qSeq * dv));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < qHeads; ++h) {
      const int64_t kv = b * kvHeads + h / s.group;
      gemm(false, false, qSeq, dv, kvSeq, C(1), scores.data() + (b * qHeads + h) * qSeq * kvSeq,
           kvSeq, v.data() + kv * kvSeq * dv, dv, C(0), y.data() + (b * qHeads + h) * qSeq * dv,
           dv);
    }
  }
  attention::roundBuffer(y.data(), static_cast<int64_t>(y.size()), s.softmaxType);
  Tensor& out = ctx.allocateOutput(0, ctx.input(0).type(), {batch, qHeads, qSeq, dv});
  convertFromBuffer(y.data(), out.numel(), out.data<T>());
  return Status::ok();
}

Status flexAttentionKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  FlexSpec spec;
  KILN_RETURN_IF_ERROR(readFlexSpec(ctx, &spec));
  return dispatchFloatTypes(ctx.input(0).type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (spec.softmaxType == DataType::kFloat64) return runFlex<T, double>(ctx, spec);
    return runFlex<T, BlasType<T>>(ctx, spec);
  });
}

}  // namespace

void registerFlexAttentionKernels(KernelRegistry& registry) {
  registry.add("FlexAttention", 1, 1000, &flexAttentionKernel, "ai.onnx.preview");
}

}  // namespace kiln::cpu
