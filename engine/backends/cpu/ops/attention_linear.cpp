// The recurrent-state ops of linear-attention blocks (Gated DeltaNet, Mamba), opset 27:
//
// LinearAttention keeps one (d_k x d_v) state matrix per batch and KV head and runs,
// token by token (g: log-space decay, beta: update rate):
//   linear       S = S + k v^T
//   gated        S = exp(g) S + k v^T
//   delta        S = S + k (beta (v - S^T k))^T
//   gated_delta  S = exp(g) S, then the delta update
//   o = scale * S^T q          (each KV head's state serves q_heads / kv_heads queries)
// in float32 whatever the input type, as the spec's reference does. chunk_size is a
// tuning hint for chunked GPU kernels and does not change results, so it is ignored.
//
// CausalConvWithState is a depthwise causal 1-D convolution whose left padding is the
// carried state: y = conv(concat(past_state or zeros, x)), present_state = the last
// k - 1 positions of that concatenation, with an optional fused SiLU.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/attention_common.h"

namespace kiln::cpu {
namespace {

using attention::readAll;
using attention::writeAll;

struct LinearSpec {
  int64_t batch = 0, steps = 0, qHeads = 0, kvHeads = 0, dk = 0, dv = 0, group = 1;
  bool gating = false, delta = false;
  bool decayPerKey = false;  // decay is (B, T, kv_heads * d_k), not (B, T, kv_heads)
  int64_t betaWidth = 1;     // beta's last axis: kv_heads, or 1 shared by all heads
  float scale = 1.f;
};

std::string dims(const Tensor& t) {
  return shapeToString(t.shape());
}

Status readLinearHeads(const KernelContext& ctx, LinearSpec* s) {
  const Tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  s->qHeads = ctx.node().attrInt("q_num_heads", 0);
  s->kvHeads = ctx.node().attrInt("kv_num_heads", 0);
  if (s->qHeads <= 0 || s->kvHeads <= 0 || s->qHeads % s->kvHeads != 0)
    return ctx.error("q_num_heads must be a positive multiple of a positive kv_num_heads");
  if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3)
    return ctx.error("query, key, value must be 3-D (B, T, H*D), got " + dims(q) + ", " + dims(k) +
                     ", " + dims(v));
  s->batch = q.dim(0);
  s->steps = q.dim(1);
  if (k.dim(0) != s->batch || v.dim(0) != s->batch || k.dim(1) != s->steps || v.dim(1) != s->steps)
    return ctx.error("query, key, value batch or sequence sizes differ");
  if (q.dim(2) % s->qHeads != 0 || v.dim(2) % s->kvHeads != 0)
    return ctx.error("hidden sizes are not multiples of the head counts");
  s->dk = q.dim(2) / s->qHeads;
  s->dv = v.dim(2) / s->kvHeads;
  if (k.dim(2) != s->kvHeads * s->dk)
    return ctx.error("key " + dims(k) + " must have kv_num_heads * d_k = " +
                     std::to_string(s->kvHeads * s->dk) + " features");
  s->group = s->qHeads / s->kvHeads;
  return Status::ok();
}

Status readGates(const KernelContext& ctx, LinearSpec* s) {
  const std::string rule = ctx.node().attrString("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    return ctx.error("unsupported update_rule '" + rule + "'");
  s->gating = rule == "gated" || rule == "gated_delta";
  s->delta = rule == "delta" || rule == "gated_delta";
  const Tensor* decay = ctx.inputOrNull(4);
  const Tensor* beta = ctx.inputOrNull(5);
  if (s->gating != (decay != nullptr))
    return ctx.error("update_rule '" + rule + (s->gating ? "' requires" : "' forbids") + " decay");
  if (s->delta != (beta != nullptr))
    return ctx.error("update_rule '" + rule + (s->delta ? "' requires" : "' forbids") + " beta");
  if (decay) {
    const int64_t last = decay->rank() == 3 ? decay->dim(2) : -1;
    s->decayPerKey = last == s->kvHeads * s->dk;
    if (decay->rank() != 3 || decay->dim(0) != s->batch || decay->dim(1) != s->steps ||
        (last != s->kvHeads && !s->decayPerKey))
      return ctx.error("decay " + dims(*decay) +
                       " must be (B, T, kv_heads) or (B, T, kv_heads*d_k)");
  }
  if (beta) {
    s->betaWidth = beta->rank() == 3 ? beta->dim(2) : -1;
    if (beta->rank() != 3 || beta->dim(0) != s->batch || beta->dim(1) != s->steps ||
        (s->betaWidth != s->kvHeads && s->betaWidth != 1))
      return ctx.error("beta " + dims(*beta) + " must be (B, T, kv_heads) or (B, T, 1)");
  }
  const float scale = ctx.node().attrFloat("scale", 0.f);
  s->scale = scale == 0.f ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(s->dk))) : scale;
  return Status::ok();
}

// The float32 copies of the inputs.
struct LinearInputs {
  std::vector<float> q, k, v, decay, beta, state;
};

Status readLinearInputs(const KernelContext& ctx, const LinearSpec& s, LinearInputs* in) {
  const auto load = [&](size_t i, std::vector<float>* out) -> Status {
    if (!ctx.hasInput(i)) return Status::ok();
    out->resize(static_cast<size_t>(ctx.input(i).numel()));
    return readAll(ctx.input(i), out->data());
  };
  std::vector<float>* targets[] = {&in->q, &in->k, &in->v, &in->state, &in->decay, &in->beta};
  for (size_t i = 0; i < 6; ++i)
    KILN_RETURN_IF_ERROR_CTX(load(i, targets[i]),
                             ctx.node().describe() + ": input " + std::to_string(i));
  if (!ctx.hasInput(3))
    in->state.assign(static_cast<size_t>(s.batch * s.kvHeads * s.dk * s.dv), 0.f);
  return Status::ok();
}

// Runs the recurrence of one (batch, KV head); `state` is its d_k x d_v matrix.
void recurHead(const LinearSpec& s, const LinearInputs& in, int64_t b, int64_t kh, float* state,
               float* out) {
  std::vector<float> update(static_cast<size_t>(s.dv));
  const int64_t dk = s.dk, dv = s.dv;
  for (int64_t t = 0; t < s.steps; ++t) {
    const int64_t bt = b * s.steps + t;
    const float* k = in.k.data() + (bt * s.kvHeads + kh) * dk;
    const float* v = in.v.data() + (bt * s.kvHeads + kh) * dv;
    if (s.gating) {
      for (int64_t d = 0; d < dk; ++d) {
        const int64_t g = s.decayPerKey ? (bt * s.kvHeads + kh) * dk + d : bt * s.kvHeads + kh;
        const float factor = std::exp(in.decay[g]);
        for (int64_t m = 0; m < dv; ++m) state[d * dv + m] *= factor;
      }
    }
    std::copy(v, v + dv, update.begin());
    if (s.delta) {
      const float beta = in.beta[bt * s.betaWidth + (s.betaWidth == 1 ? 0 : kh)];
      for (int64_t m = 0; m < dv; ++m) {
        float retrieved = 0.f;
        for (int64_t d = 0; d < dk; ++d) retrieved += state[d * dv + m] * k[d];
        update[m] = beta * (v[m] - retrieved);
      }
    }
    for (int64_t d = 0; d < dk; ++d)
      for (int64_t m = 0; m < dv; ++m) state[d * dv + m] += k[d] * update[m];
    for (int64_t g = 0; g < s.group; ++g) {
      const int64_t h = kh * s.group + g;
      const float* q = in.q.data() + (bt * s.qHeads + h) * dk;
      float* o = out + (bt * s.qHeads + h) * dv;
      for (int64_t m = 0; m < dv; ++m) {
        float acc = 0.f;
        for (int64_t d = 0; d < dk; ++d) acc += q[d] * state[d * dv + m];
        o[m] = s.scale * acc;
      }
    }
  }
}

Status linearAttentionKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  LinearSpec s;
  KILN_RETURN_IF_ERROR(readLinearHeads(ctx, &s));
  KILN_RETURN_IF_ERROR(readGates(ctx, &s));
  const Shape stateShape{s.batch, s.kvHeads, s.dk, s.dv};
  if (ctx.hasInput(3) && ctx.input(3).shape() != stateShape)
    return ctx.error("past_state " + dims(ctx.input(3)) + " must be " + shapeToString(stateShape));
  LinearInputs in;
  KILN_RETURN_IF_ERROR(readLinearInputs(ctx, s, &in));
  std::vector<float> out(static_cast<size_t>(s.batch * s.steps * s.qHeads * s.dv));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t kh = 0; kh < s.kvHeads; ++kh)
      recurHead(s, in, b, kh, in.state.data() + (b * s.kvHeads + kh) * s.dk * s.dv, out.data());
  const DataType type = ctx.input(0).type();
  Tensor& y = ctx.allocateOutput(0, type, {s.batch, s.steps, s.qHeads * s.dv});
  KILN_RETURN_IF_ERROR(writeAll(out.data(), y.numel(), &y));
  if (ctx.wantsOutput(1)) {
    Tensor& present =
        ctx.allocateOutput(1, ctx.hasInput(3) ? ctx.input(3).type() : type, stateShape);
    KILN_RETURN_IF_ERROR(writeAll(in.state.data(), present.numel(), &present));
  }
  return Status::ok();
}

// ---- CausalConvWithState -------------------------------------------------------------

template <class T>
void causalConvTyped(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor* past,
                     bool silu, Tensor* y, Tensor* present) {
  using C = ComputeType<T>;
  const int64_t batch = x.dim(0), channels = x.dim(1), length = x.dim(2), k = w.dim(2);
  std::vector<C> padded(static_cast<size_t>(length + k - 1));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t bc = b * channels + c;
      for (int64_t i = 0; i < k - 1; ++i)
        padded[i] = past ? static_cast<C>(past->data<T>()[bc * (k - 1) + i]) : C(0);
      const T* in = x.data<T>() + bc * length;
      for (int64_t t = 0; t < length; ++t) padded[k - 1 + t] = static_cast<C>(in[t]);
      const T* kernel = w.data<T>() + c * k;
      const C shift = bias ? static_cast<C>(bias->data<T>()[c]) : C(0);
      T* out = y->data<T>() + bc * length;
      for (int64_t t = 0; t < length; ++t) {
        C acc = shift;
        for (int64_t j = 0; j < k; ++j) acc += static_cast<C>(kernel[j]) * padded[t + j];
        // The reference rounds the convolution to T before the activation.
        const C conv = static_cast<C>(static_cast<T>(acc));
        out[t] = static_cast<T>(silu ? conv / (C(1) + std::exp(-conv)) : conv);
      }
      if (present) {
        T* state = present->data<T>() + bc * (k - 1);
        for (int64_t i = 0; i < k - 1; ++i) state[i] = static_cast<T>(padded[length + i]);
      }
    }
  }
}

Status causalConvKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* bias = ctx.inputOrNull(2);
  const Tensor* past = ctx.inputOrNull(3);
  const std::string activation = ctx.node().attrString("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish")
    return ctx.error("unsupported activation '" + activation + "'");
  if (x.rank() != 3) return ctx.error("input must be (batch, channels, length), got " + dims(x));
  const int64_t channels = x.dim(1);
  if (w.rank() != 3 || w.dim(0) != channels || w.dim(1) != 1 || w.dim(2) < 1)
    return ctx.error("weight " + dims(w) + " must be (channels, 1, k) with k >= 1");
  const int64_t k = w.dim(2);
  if (bias && bias->shape() != Shape{channels})
    return ctx.error("bias " + dims(*bias) + " must be (channels)");
  const Shape stateShape{x.dim(0), channels, k - 1};
  if (past && past->shape() != stateShape)
    return ctx.error("past_state " + dims(*past) + " must be " + shapeToString(stateShape));
  for (const Tensor* t : {&w, bias, past})
    if (t && t->type() != x.type()) return ctx.error("all inputs must share the input's type");
  Tensor& y = ctx.allocateOutput(0, x.type(), x.shape());
  Tensor* present = ctx.wantsOutput(1) ? &ctx.allocateOutput(1, x.type(), stateShape) : nullptr;
  Status status = dispatchFloatTypes(x.type(), [&](auto tag) {
    causalConvTyped<typename decltype(tag)::type>(x, w, bias, past, activation != "none", &y,
                                                  present);
    return Status::ok();
  });
  if (!status.isOk()) return ctx.unsupported("input " + status.message());
  return Status::ok();
}

}  // namespace

void registerLinearAttentionKernels(KernelRegistry& registry) {
  registry.add("LinearAttention", 27, 1000, &linearAttentionKernel);
  registry.add("CausalConvWithState", 27, 1000, &causalConvKernel);
}

}  // namespace kiln::cpu
