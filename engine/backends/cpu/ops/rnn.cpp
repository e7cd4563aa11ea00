// RNN, GRU and LSTM (forward, reverse, bidirectional; sequence_lens, initial
// states, LSTM peepholes and input_forget, clip, activations with alpha/beta,
// and layout = 1 (batch-major) from opset 14).
//
// Per direction, one GEMM projects every time step's input at once
// (X W^T + biases); each step then does H_prev R^T with one GEMM and applies
// the cell elementwise. Batch entries with a shorter sequence_lens stop
// updating (their state is carried to Y_h) and their Y rows stay zero; in the
// reverse direction each entry starts at its own last valid step.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cpu/ops/nn_common.h"
#include "backends/cpu/ops/rnn_common.h"
#include "kiln/tensor_size.h"

namespace kiln::cpu {
namespace {

// Views of one direction's weights and states, in compute type C.
template <class C>
struct DirectionData {
  const C* w;  // [gates * H, input]
  const C* r;  // [gates * H, H]
  const C* b;  // [2 * gates * H] or null
  const C* p;  // LSTM peepholes [3 * H] or null
  C* h;        // state [batch, H], initialized from initial_h
  C* c;        // LSTM cell state [batch, H]
  const Activation* acts;
};

template <class C>
class DirectionRunner {
 public:
  DirectionRunner(const RnnConfig& cfg, const DirectionData<C>& data, const C* x, bool reverse)
      : m_cfg(cfg), m_d(data), m_reverse(reverse) {
    const int64_t gh = cfg.gates * cfg.hidden, rows = cfg.seq * cfg.batch;
    m_xproj.assign(static_cast<size_t>(rows * gh), C(0));
    if (m_d.b) {
      // Wb always joins the input projection; Rb too, except GRU's h gate with
      // linear_before_reset, where r scales (H R_h^T + Rb_h).
      for (int64_t row = 0; row < rows; ++row) {
        C* dst = m_xproj.data() + row * gh;
        for (int64_t j = 0; j < gh; ++j)
          dst[j] = m_d.b[j] + (keepsRecurrentBias(j) ? C(0) : m_d.b[gh + j]);
      }
    }
    gemm(false, true, rows, gh, cfg.input, C(1), x, cfg.input, m_d.w, cfg.input, C(m_d.b ? 1 : 0),
         m_xproj.data(), gh);
    m_hproj.assign(static_cast<size_t>(cfg.batch * gh), C(0));
    if (cfg.kind == CellKind::kGru && !cfg.linearBeforeReset) m_rh.resize(cfg.batch * cfg.hidden);
  }

  // Runs every step; y is [seq, dirs, batch, H] at this direction's offset, or null.
  void run(C* y, int64_t yStepStride) {
    for (int64_t s = 0; s < m_cfg.seq; ++s) {
      recurrentProjection(s);
      for (int64_t b = 0; b < m_cfg.batch; ++b) {
        const int64_t len = m_cfg.lengths[b];
        if (s >= len) continue;
        const int64_t t = m_reverse ? len - 1 - s : s;
        const C* xp = m_xproj.data() + (t * m_cfg.batch + b) * m_cfg.gates * m_cfg.hidden;
        updateCell(b, xp);
        if (y) std::copy(hRow(b), hRow(b) + m_cfg.hidden, y + t * yStepStride + b * m_cfg.hidden);
      }
    }
  }

 private:
  bool keepsRecurrentBias(int64_t j) const {
    return m_cfg.kind == CellKind::kGru && m_cfg.linearBeforeReset && j >= 2 * m_cfg.hidden;
  }
  C* hRow(int64_t b) { return m_d.h + b * m_cfg.hidden; }
  C clip(C v) const { return m_cfg.clip > 0 ? std::clamp(v, C(-m_cfg.clip), C(m_cfg.clip)) : v; }
  C act(int k, C v) const { return static_cast<C>(applyActivation(m_d.acts[k], clip(v))); }

  // H_prev R^T into m_hproj. GRU without linear_before_reset gets only its z
  // and r columns here; the h column needs r first (see gruResetProjection).
  void recurrentProjection(int64_t s) {
    const int64_t hsz = m_cfg.hidden, gh = m_cfg.gates * hsz;
    const int64_t cols = m_rh.empty() ? gh : 2 * hsz;
    gemm(false, true, m_cfg.batch, cols, hsz, C(1), m_d.h, hsz, m_d.r, hsz, C(0), m_hproj.data(),
         gh);
    if (!m_rh.empty()) gruResetProjection(s);
  }

  // (r ⊙ H_prev) R_h^T for all batch entries, r from this step's z/r gates.
  void gruResetProjection(int64_t s) {
    const int64_t hsz = m_cfg.hidden, gh = 3 * hsz;
    for (int64_t b = 0; b < m_cfg.batch; ++b) {
      const int64_t len = m_cfg.lengths[b];
      const int64_t t = s < len ? (m_reverse ? len - 1 - s : s) : 0;
      const C* xp = m_xproj.data() + (t * m_cfg.batch + b) * gh;
      for (int64_t j = 0; j < hsz; ++j) {
        const C r = act(0, xp[hsz + j] + m_hproj[b * gh + hsz + j]);
        m_rh[b * hsz + j] = r * m_d.h[b * hsz + j];
      }
    }
    gemm(false, true, m_cfg.batch, hsz, hsz, C(1), m_rh.data(), hsz, m_d.r + 2 * hsz * hsz, hsz,
         C(0), m_hproj.data() + 2 * hsz, gh);
  }

  void updateCell(int64_t b, const C* xp) {
    const int64_t hsz = m_cfg.hidden, gh = m_cfg.gates * hsz;
    const C* hp = m_hproj.data() + b * gh;
    C* h = hRow(b);
    if (m_cfg.kind == CellKind::kRnn) {
      for (int64_t j = 0; j < hsz; ++j) h[j] = act(0, xp[j] + hp[j]);
    } else if (m_cfg.kind == CellKind::kGru) {
      const C* rbh = m_d.b ? m_d.b + gh + 2 * hsz : nullptr;
      for (int64_t j = 0; j < hsz; ++j) {
        const C z = act(0, xp[j] + hp[j]);
        C candidate;
        if (m_cfg.linearBeforeReset) {
          const C r = act(0, xp[hsz + j] + hp[hsz + j]);
          candidate = act(1, xp[2 * hsz + j] + r * (hp[2 * hsz + j] + (rbh ? rbh[j] : C(0))));
        } else {
          candidate = act(1, xp[2 * hsz + j] + hp[2 * hsz + j]);
        }
        h[j] = (C(1) - z) * candidate + z * h[j];
      }
    } else {
      updateLstm(b, xp, hp, h);
    }
  }

  // Gate order i, o, f, c; peepholes P = [p_i, p_o, p_f].
  void updateLstm(int64_t b, const C* xp, const C* hp, C* h) {
    const int64_t hsz = m_cfg.hidden;
    C* c = m_d.c + b * hsz;
    const C* p = m_d.p;
    for (int64_t j = 0; j < hsz; ++j) {
      const C cPrev = c[j];
      const C i = act(0, xp[j] + hp[j] + (p ? p[j] * cPrev : C(0)));
      const C f =
          m_cfg.inputForget
              ? C(1) - i
              : act(0, xp[2 * hsz + j] + hp[2 * hsz + j] + (p ? p[2 * hsz + j] * cPrev : C(0)));
      const C candidate = act(1, xp[3 * hsz + j] + hp[3 * hsz + j]);
      const C cNew = f * cPrev + i * candidate;
      const C o = act(0, xp[hsz + j] + hp[hsz + j] + (p ? p[hsz + j] * cNew : C(0)));
      c[j] = cNew;
      h[j] = o * static_cast<C>(applyActivation(m_d.acts[2], cNew));
    }
  }

  const RnnConfig& m_cfg;
  DirectionData<C> m_d;
  bool m_reverse;
  std::vector<C> m_xproj, m_hproj, m_rh;
};

// Copies src (shape srcShape) into dst laid out as srcShape permuted by `perm`,
// converting element types.
template <class Dst, class Src>
void permuteConvert(const Src* src, const Shape& srcShape, const std::vector<int>& perm, Dst* dst) {
  const std::vector<int64_t> own = contiguousStrides(srcShape);
  Shape shape;
  std::vector<int64_t> strides;
  for (int axis : perm) {
    shape.push_back(srcShape[axis]);
    strides.push_back(own[axis]);
  }
  forEachBroadcast(shape, {strides}, [&](int64_t i, const std::vector<int64_t>& off) {
    dst[i] = static_cast<Dst>(static_cast<ComputeType<Src>>(src[off[0]]));
  });
}

const std::vector<int> kSwap01 = {1, 0, 2};

struct RnnInputs {
  const Tensor *x, *w, *r, *b, *h0, *c0, *p;
  int layout = 0;
  bool reverseOnly = false;
};

template <class T>
Status rnnTyped(KernelContext& ctx, const RnnConfig& cfg, const RnnInputs& in) {
  using C = BlasType<T>;
  const int64_t seq = cfg.seq, batch = cfg.batch, hsz = cfg.hidden, dirs = cfg.dirs;
  std::vector<C> x(static_cast<size_t>(in.x->numel()));
  if (in.layout == 0) {
    convertToBuffer(in.x->data<T>(), in.x->numel(), x.data());
  } else {
    permuteConvert(in.x->data<T>(), in.x->shape(), kSwap01, x.data());
  }
  const auto loadState = [&](const Tensor* t, std::vector<C>* state) {
    state->assign(static_cast<size_t>(dirs * batch * hsz), C(0));
    if (!t) return;
    if (in.layout == 0) {
      convertToBuffer(t->data<T>(), t->numel(), state->data());
    } else {
      permuteConvert(t->data<T>(), t->shape(), kSwap01, state->data());
    }
  };
  std::vector<C> h, c;
  loadState(in.h0, &h);
  loadState(in.c0, &c);
  ComputeView<C> w(in.w->data<T>(), in.w->numel()), r(in.r->data<T>(), in.r->numel());
  const auto loadVector = [](const Tensor* t, std::vector<C>* out) {
    if (!t) return;
    out->resize(static_cast<size_t>(t->numel()));
    convertToBuffer(t->data<T>(), t->numel(), out->data());
  };
  std::vector<C> b, p;
  loadVector(in.b, &b);
  loadVector(in.p, &p);
  const int64_t gh = cfg.gates * hsz;
  const bool wantY = ctx.wantsOutput(0);
  std::vector<C> y(wantY ? static_cast<size_t>(seq * dirs * batch * hsz) : 0, C(0));
  const int acts = cellActivationCount(cfg.kind);
  for (int64_t d = 0; d < dirs; ++d) {
    DirectionData<C> data{w.data() + d * gh * cfg.input,
                          r.data() + d * gh * hsz,
                          in.b ? b.data() + d * 2 * gh : nullptr,
                          in.p ? p.data() + d * 3 * hsz : nullptr,
                          h.data() + d * batch * hsz,
                          c.data() + d * batch * hsz,
                          cfg.activations.data() + d * acts};
    DirectionRunner<C> runner(cfg, data, x.data(), d == 1 || in.reverseOnly);
    runner.run(wantY ? y.data() + d * batch * hsz : nullptr, dirs * batch * hsz);
  }
  const Shape stateShape = {dirs, batch, hsz};
  const auto writeOut = [&](size_t index, const std::vector<C>& src, const Shape& shape,
                            const std::vector<int>& perm) {
    if (!ctx.wantsOutput(index)) return;
    Shape outShape;
    for (int axis : perm) outShape.push_back(shape[axis]);
    Tensor& out = ctx.allocateOutput(index, in.x->type(), outShape);
    permuteConvert(src.data(), shape, perm, out.data<T>());
  };
  const bool batchFirst = in.layout != 0;
  writeOut(0, y, {seq, dirs, batch, hsz},
           batchFirst ? std::vector<int>{2, 0, 1, 3} : std::vector<int>{0, 1, 2, 3});
  writeOut(1, h, stateShape, batchFirst ? kSwap01 : std::vector<int>{0, 1, 2});
  if (cfg.kind == CellKind::kLstm)
    writeOut(2, c, stateShape, batchFirst ? kSwap01 : std::vector<int>{0, 1, 2});
  return Status::ok();
}

// Checks an optional input's shape; `what` names it in the error.
Status expectShape(const KernelContext& ctx, const Tensor* t, const Shape& shape,
                   const char* what) {
  if (t && t->shape() != shape) {
    return ctx.error(std::string("input ") + what + " has shape " + shapeToString(t->shape()) +
                     ", expected " + shapeToString(shape));
  }
  return Status::ok();
}

Status readDirection(const KernelContext& ctx, RnnConfig* cfg, bool* reverseOnly) {
  const std::string direction = ctx.node().attrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return ctx.error("attribute 'direction' has unknown value '" + direction + "'");
  }
  cfg->dirs = direction == "bidirectional" ? 2 : 1;
  *reverseOnly = direction == "reverse";
  return Status::ok();
}

Status readLengths(const KernelContext& ctx, const Tensor* lens, RnnConfig* cfg) {
  cfg->lengths.assign(static_cast<size_t>(cfg->batch), cfg->seq);
  if (!lens) return Status::ok();
  KILN_RETURN_IF_ERROR(expectShape(ctx, lens, {cfg->batch}, "sequence_lens"));
  const std::vector<int64_t> values = lens->toInt64Vector();
  for (int64_t b = 0; b < cfg->batch; ++b) {
    if (values[b] < 0 || values[b] > cfg->seq) {
      return ctx.error("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(values[b]) +
                       " is outside [0, " + std::to_string(cfg->seq) + "]");
    }
    cfg->lengths[b] = values[b];
  }
  return Status::ok();
}

template <CellKind kKind>
Status recurrentKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  RnnInputs in{&ctx.input(0),
               &ctx.input(1),
               &ctx.input(2),
               ctx.inputOrNull(3),
               ctx.inputOrNull(5),
               kKind == CellKind::kLstm ? ctx.inputOrNull(6) : nullptr,
               kKind == CellKind::kLstm ? ctx.inputOrNull(7) : nullptr};
  RnnConfig cfg;
  cfg.kind = kKind;
  cfg.gates = kKind == CellKind::kRnn ? 1 : kKind == CellKind::kGru ? 3 : 4;
  in.layout = ctx.opset() >= 14 ? static_cast<int>(ctx.node().attrInt("layout", 0)) : 0;
  KILN_RETURN_IF_ERROR(readDirection(ctx, &cfg, &in.reverseOnly));
  if (in.x->rank() != 3 || in.w->rank() != 3 || in.r->rank() != 3) {
    return ctx.error("inputs X, W and R must be 3-D");
  }
  cfg.seq = in.x->dim(in.layout == 0 ? 0 : 1);
  cfg.batch = in.x->dim(in.layout == 0 ? 1 : 0);
  cfg.input = in.x->dim(2);
  cfg.hidden = in.r->dim(2);
  if (ctx.node().hasAttr("hidden_size") && ctx.node().attrInt("hidden_size", 0) != cfg.hidden) {
    return ctx.error("attribute 'hidden_size' does not match R");
  }
  const int64_t gh = cfg.gates * cfg.hidden;
  const Shape stateShape = in.layout == 0 ? Shape{cfg.dirs, cfg.batch, cfg.hidden}
                                          : Shape{cfg.batch, cfg.dirs, cfg.hidden};
  KILN_RETURN_IF_ERROR(expectShape(ctx, in.w, {cfg.dirs, gh, cfg.input}, "W"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in.r, {cfg.dirs, gh, cfg.hidden}, "R"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in.b, {cfg.dirs, 2 * gh}, "B"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in.h0, stateShape, "initial_h"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in.c0, stateShape, "initial_c"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in.p, {cfg.dirs, 3 * cfg.hidden}, "P"));
  for (const Tensor* t : {in.w, in.r, in.b, in.h0, in.c0, in.p}) {
    if (t && t->type() != in.x->type()) return ctx.error("inputs must share X's type");
  }
  KILN_RETURN_IF_ERROR(readLengths(ctx, ctx.inputOrNull(4), &cfg));
  // The per-step input projection [seq * batch, gates * H] and Y [seq, dirs, batch, H] are
  // products of dims taken from different inputs (a long X with 1 input feature and a wide
  // R): held to the tensor cap before either is allocated.
  KILN_RETURN_IF_ERROR(checkTensorSize(in.x->type(), {cfg.seq, cfg.batch, gh},
                                       ctx.node().describe() + " input projection"));
  KILN_RETURN_IF_ERROR(checkTensorSize(in.x->type(), {cfg.seq, cfg.dirs, cfg.batch, cfg.hidden},
                                       ctx.node().describe() + " output Y"));
  auto activations = ops::rnnActivations(ctx.node(), kKind, cfg.dirs);
  if (!activations.isOk())
    return activations.status().code() == StatusCode::kUnsupported
               ? ctx.unsupported(activations.status().message())
               : ctx.error(activations.status().message());
  cfg.activations = std::move(activations.value());
  cfg.clip = ctx.node().attrFloat("clip", 0.f);
  cfg.linearBeforeReset = ctx.node().attrInt("linear_before_reset", 0) != 0;
  cfg.inputForget = ctx.node().attrInt("input_forget", 0) != 0;
  Status status = dispatchFloatTypes(in.x->type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return rnnTyped<T>(ctx, cfg, in);
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

}  // namespace

void registerRnnKernels(KernelRegistry& registry) {
  // layout (batch-major) exists from opset 14; earlier versions ignore it.
  registry.add("RNN", 1, 1000, &recurrentKernel<CellKind::kRnn>);
  registry.add("GRU", 1, 1000, &recurrentKernel<CellKind::kGru>);
  registry.add("LSTM", 1, 1000, &recurrentKernel<CellKind::kLstm>);
}

}  // namespace kiln::cpu
