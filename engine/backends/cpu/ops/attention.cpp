// Attention (opsets 23-25): scaled dot-product attention in its multi-head,
// grouped-query and multi-query forms, with a boolean or additive mask, causal and
// sliding-window masking, an internal KV cache (past/present inputs and outputs) and
// an external one (nonpad_kv_seqlen). Also the family's registration function.
//
// Per (batch, query head): S = (Q*sqrt(scale)) (K*sqrt(scale))^T by one GEMM, then
// softcap, + bias, row softmax, and Y = P V by a second GEMM. The bias of each query
// row is built on the fly from the mask, the causal frontier, the window and the
// padding, so no (B, H, Sq, Skv) bias tensor is materialized.
//
// Opset differences: 24 adds the nonpad_kv_seqlen input; 25 adds left_window_size /
// right_window_size and rejects q_num_heads / kv_num_heads with 4-D inputs.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/ops/attention_common.h"

namespace kiln::cpu {

void registerRmsNormKernels(KernelRegistry& registry);          // rms_norm.cpp
void registerRotaryEmbeddingKernels(KernelRegistry& registry);  // rotary_embedding.cpp
void registerLinearAttentionKernels(KernelRegistry& registry);  // attention_linear.cpp
void registerFlexAttentionKernels(KernelRegistry& registry);    // attention_flex.cpp

namespace {

using attention::HeadLayout;

// Everything the computation needs, validated against the inputs.
struct AttentionSpec {
  HeadLayout q, k, v;  // the Q, K, V inputs (K and V without the past)
  int64_t pastLen = 0;
  int64_t totalLen = 0;  // keys attended: past + current
  int64_t group = 1;     // query heads per KV head
  double sqrtScale = 1.0;
  float softcap = 0.f;
  int64_t qkMode = 0;
  DataType softmaxType = DataType::kUndefined;  // softmax_precision; undefined: T1's
  bool causal = false;
  int64_t leftWindow = -1;  // -1: unbounded
  int64_t rightWindow = -1;
  std::vector<int64_t> nonpad;  // valid keys per batch; empty without nonpad_kv_seqlen
};

std::string dims(const Tensor& t) {
  return shapeToString(t.shape());
}

Status readPackedLayouts(const KernelContext& ctx, AttentionSpec* s) {
  const Tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  const int64_t qHeads = ctx.node().attrInt("q_num_heads", 0);
  const int64_t kvHeads = ctx.node().attrInt("kv_num_heads", 0);
  if (qHeads <= 0 || kvHeads <= 0)
    return ctx.error("3-D Q, K, V need positive q_num_heads and kv_num_heads attributes");
  // More heads than features only divides an empty hidden size: q_num_heads 2^62 over
  // [B, S, 0] overflowed batch * heads and looped over every head.
  if (qHeads > std::max<int64_t>(q.dim(2), 1) ||
      kvHeads > std::max<int64_t>(std::min(k.dim(2), v.dim(2)), 1))
    return ctx.error("q_num_heads " + std::to_string(qHeads) + " / kv_num_heads " +
                     std::to_string(kvHeads) + " exceed the hidden sizes of Q " + dims(q) + ", K " +
                     dims(k) + ", V " + dims(v));
  if (q.dim(2) % qHeads != 0 || k.dim(2) % kvHeads != 0 || v.dim(2) % kvHeads != 0)
    return ctx.error("hidden sizes of Q " + dims(q) + ", K " + dims(k) + ", V " + dims(v) +
                     " are not multiples of q_num_heads " + std::to_string(qHeads) +
                     " / kv_num_heads " + std::to_string(kvHeads));
  s->q = {q.dim(0), qHeads, q.dim(1), q.dim(2) / qHeads, true};
  s->k = {k.dim(0), kvHeads, k.dim(1), k.dim(2) / kvHeads, true};
  s->v = {v.dim(0), kvHeads, v.dim(1), v.dim(2) / kvHeads, true};
  return Status::ok();
}

Status readLayouts(const KernelContext& ctx, AttentionSpec* s) {
  const Tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  if (q.rank() != k.rank() || q.rank() != v.rank() || (q.rank() != 3 && q.rank() != 4))
    return ctx.error("Q, K, V must all be 3-D or all 4-D, got " + dims(q) + ", " + dims(k) + ", " +
                     dims(v));
  if (q.rank() == 3) {
    KILN_RETURN_IF_ERROR(readPackedLayouts(ctx, s));
  } else {
    s->q = {q.dim(0), q.dim(1), q.dim(2), q.dim(3), false};
    s->k = {k.dim(0), k.dim(1), k.dim(2), k.dim(3), false};
    s->v = {v.dim(0), v.dim(1), v.dim(2), v.dim(3), false};
    const Node& node = ctx.node();
    const bool named = node.hasAttr("q_num_heads") || node.hasAttr("kv_num_heads");
    if (named && ctx.opset() >= 25)
      return ctx.error("q_num_heads / kv_num_heads must not be set for 4-D inputs");
    if (named && (node.attrInt("q_num_heads", s->q.heads) != s->q.heads ||
                  node.attrInt("kv_num_heads", s->k.heads) != s->k.heads))
      return ctx.error("q_num_heads / kv_num_heads disagree with the 4-D input shapes");
  }
  if (s->k.batch != s->q.batch || s->v.batch != s->q.batch)
    return ctx.error("Q, K, V batch sizes differ: " + dims(q) + ", " + dims(k) + ", " + dims(v));
  if (s->k.seq != s->v.seq || s->k.heads != s->v.heads)
    return ctx.error("K " + dims(k) + " and V " + dims(v) + " differ in heads or sequence length");
  if (s->k.headSize != s->q.headSize)
    return ctx.error("Q " + dims(q) + " and K " + dims(k) + " head sizes differ");
  if (s->k.heads <= 0 || s->q.heads % s->k.heads != 0)
    return ctx.error("query heads (" + std::to_string(s->q.heads) +
                     ") must be a multiple of key/value heads (" + std::to_string(s->k.heads) +
                     ")");
  s->group = s->q.heads / s->k.heads;
  return Status::ok();
}

Status checkPast(const KernelContext& ctx, const Tensor& past, const Tensor& cur,
                 const HeadLayout& l, int64_t pastLen, const char* name) {
  const Shape want{l.batch, l.heads, pastLen, l.headSize};
  if (past.shape() != want)
    return ctx.error(std::string("input '") + name + "' has shape " + dims(past) + ", expected " +
                     shapeToString(want));
  if (past.type() != cur.type())
    return ctx.error(std::string("input '") + name + "' type differs from the current one");
  return Status::ok();
}

Status readCache(const KernelContext& ctx, AttentionSpec* s) {
  const Tensor* pastKey = ctx.inputOrNull(4);
  const Tensor* pastValue = ctx.inputOrNull(5);
  if (!pastKey != !pastValue) return ctx.error("past_key and past_value must be given together");
  if (pastKey) {
    if (pastKey->rank() != 4) return ctx.error("past_key must be 4-D, got " + dims(*pastKey));
    s->pastLen = pastKey->dim(2);
    KILN_RETURN_IF_ERROR(checkPast(ctx, *pastKey, ctx.input(1), s->k, s->pastLen, "past_key"));
    KILN_RETURN_IF_ERROR(checkPast(ctx, *pastValue, ctx.input(2), s->v, s->pastLen, "past_value"));
  }
  s->totalLen = s->pastLen + s->k.seq;
  const Tensor* nonpad = ctx.opset() >= 24 ? ctx.inputOrNull(6) : nullptr;
  if (!nonpad) return Status::ok();
  if (pastKey) return ctx.error("nonpad_kv_seqlen cannot be combined with past_key/past_value");
  if (nonpad->rank() != 1 || nonpad->dim(0) != s->q.batch ||
      (nonpad->type() != DataType::kInt64 && nonpad->type() != DataType::kInt32))
    return ctx.error("nonpad_kv_seqlen must be an int64 vector of batch size, got " +
                     dims(*nonpad));
  s->nonpad = readInt64s(*nonpad);
  // Counts of valid keys: outside [0, keys] they overflowed the query offset
  // `nonpad - q_seq` (INT64_MIN).
  for (int64_t n : s->nonpad)
    if (n < 0 || n > s->totalLen)
      return ctx.error("nonpad_kv_seqlen " + std::to_string(n) + " is not in [0, " +
                       std::to_string(s->totalLen) + "]");
  return Status::ok();
}

Status readAttributes(const KernelContext& ctx, AttentionSpec* s) {
  const Node& node = ctx.node();
  const double scale = node.hasAttr("scale") ? static_cast<double>(node.attrFloat("scale", 1.f))
                                             : 1.0 / std::sqrt(static_cast<double>(s->q.headSize));
  // Q and K are each scaled by sqrt(scale), so a negative scale has no meaning here.
  if (!(scale >= 0.0)) return ctx.error("attribute 'scale' must be non-negative");
  s->sqrtScale = std::sqrt(scale);
  s->softcap = node.attrFloat("softcap", 0.f);
  s->causal = node.attrInt("is_causal", 0) != 0;
  s->qkMode = node.attrInt("qk_matmul_output_mode", 0);
  if (s->qkMode < 0 || s->qkMode > 3)
    return ctx.error("attribute 'qk_matmul_output_mode' must be 0..3, got " +
                     std::to_string(s->qkMode));
  if (node.hasAttr("softmax_precision")) {
    const int64_t p = node.attrInt("softmax_precision", 1);
    if (p != 1 && p != 10 && p != 11 && p != 16)
      return ctx.error("attribute 'softmax_precision' must be 1, 10, 11 or 16, got " +
                       std::to_string(p));
    s->softmaxType = static_cast<DataType>(p);
  }
  if (ctx.opset() >= 25) {
    s->leftWindow = node.attrInt("left_window_size", -1);
    s->rightWindow = node.attrInt("right_window_size", -1);
    if (s->leftWindow < -1 || s->rightWindow < -1)
      return ctx.error("window sizes must be -1 or non-negative");
  }
  return Status::ok();
}

// ---- Bias ------------------------------------------------------------------------

// attn_mask as additive values (a boolean mask becomes 0 / -inf), read right-aligned
// against (batch, q_heads, q_seq, keys). A last axis shorter than the key count is
// padded with -inf (spec text of opset 25, and the reference at every opset).
template <class C>
struct MaskRows {
  bool present = false;
  std::vector<C> values;
  int64_t strideB = 0, strideH = 0, strideI = 0, length = 0;
  const C* row(int64_t b, int64_t h, int64_t i) const {
    return values.data() + b * strideB + h * strideH + i * strideI;
  }
};

template <class C>
Status readMaskValues(const Tensor& m, std::vector<C>* out) {
  out->resize(static_cast<size_t>(m.numel()));
  if (m.type() == DataType::kBool) {
    const bool* p = m.data<bool>();
    for (int64_t i = 0; i < m.numel(); ++i)
      (*out)[i] = p[i] ? C(0) : -std::numeric_limits<C>::infinity();
    return Status::ok();
  }
  return dispatchAllTypes(m.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = m.data<T>();
    for (int64_t i = 0; i < m.numel(); ++i)
      (*out)[i] = static_cast<C>(static_cast<ComputeType<T>>(p[i]));
    return Status::ok();
  });
}

template <class C>
Status readMask(const KernelContext& ctx, const AttentionSpec& s, MaskRows<C>* mask) {
  const Tensor& m = ctx.input(3);
  const int rank = m.rank();
  if (rank < 1 || rank > 4) return ctx.error("attn_mask must have rank 1..4, got " + dims(m));
  mask->length = m.dim(-1);
  if (mask->length > s.totalLen)
    return ctx.error("attn_mask " + dims(m) + " has more keys than " + std::to_string(s.totalLen));
  const int64_t target[3] = {s.q.batch, s.q.heads, s.q.seq};
  int64_t* strides[3] = {&mask->strideB, &mask->strideH, &mask->strideI};
  const std::vector<int64_t> contiguous = contiguousStrides(m.shape());
  for (int d = 0; d < rank - 1; ++d) {
    const int t = 3 - (rank - 1) + d;  // the target axis this mask axis aligns with
    if (m.dim(d) != 1 && m.dim(d) != target[t])
      return ctx.error("attn_mask " + dims(m) + " does not broadcast to (" +
                       std::to_string(target[0]) + ", " + std::to_string(target[1]) + ", " +
                       std::to_string(target[2]) + ", keys)");
    *strides[t] = m.dim(d) == 1 ? 0 : contiguous[d];
  }
  KILN_RETURN_IF_ERROR_CTX(readMaskValues(m, &mask->values), ctx.node().describe() + ": attn_mask");
  mask->present = true;
  return Status::ok();
}

// Fills bias[0, totalLen) for query row i of (b, h); returns false when every key is
// masked. Causal, window and padding masks allow one contiguous key range around the
// query's absolute position i + offset (offset: keys preceding the query block).
template <class C>
bool biasRow(const AttentionSpec& s, const MaskRows<C>& mask, int64_t b, int64_t h, int64_t i,
             C* bias) {
  const C negInf = -std::numeric_limits<C>::infinity();
  const int64_t total = s.totalLen;
  if (mask.present) {
    const int64_t n = std::min(mask.length, total);
    std::memcpy(bias, mask.row(b, h, i), static_cast<size_t>(n) * sizeof(C));
    std::fill(bias + n, bias + total, negInf);
  } else {
    std::fill(bias, bias + total, C(0));
  }
  const int64_t offset = s.nonpad.empty() ? s.pastLen : s.nonpad[b] - s.q.seq;
  const int64_t pos = i + offset;
  int64_t lo = 0, hi = total;  // allowed keys: [lo, hi)
  if (s.causal) hi = std::min(hi, pos + 1);
  // Window edges past int64 bound nothing (right_window_size INT64_MAX overflowed the sum).
  int64_t edge = 0;
  if (s.rightWindow >= 0 && !__builtin_add_overflow(pos, s.rightWindow, &edge) && edge < hi)
    hi = edge + 1;
  if (s.leftWindow >= 0 && !__builtin_sub_overflow(pos, s.leftWindow, &edge))
    lo = std::max(lo, edge);
  if (!s.nonpad.empty()) hi = std::min(hi, s.nonpad[b]);
  hi = std::max(hi, int64_t{0});
  lo = std::min(lo, hi);
  std::fill(bias, bias + lo, negInf);
  std::fill(bias + hi, bias + total, negInf);
  for (int64_t j = lo; j < hi; ++j) {
    if (bias[j] != negInf) return true;
  }
  return false;
}

// ---- Computation -----------------------------------------------------------------

// (B, H, past + S, D) = concat(past, current) along the sequence: output `index` when
// the node wants it, else a scratch tensor (or the input itself when nothing changes).
Status makePresent(KernelContext& ctx, size_t index, const Tensor* past, const Tensor& cur,
                   const HeadLayout& l, int64_t pastLen, Tensor* out) {
  const Shape shape{l.batch, l.heads, pastLen + l.seq, l.headSize};
  if (!ctx.wantsOutput(index) && !past && !l.packed) {
    *out = cur;
    return Status::ok();
  }
  *out = ctx.wantsOutput(index) ? ctx.allocateOutput(index, cur.type(), shape)
                                : Tensor(cur.type(), shape);
  const size_t es = dataTypeSize(cur.type());
  const size_t rowBytes = static_cast<size_t>(l.headSize) * es;
  auto* dst = static_cast<unsigned char*>(out->rawData());
  const auto* src = static_cast<const unsigned char*>(cur.rawData());
  for (int64_t b = 0; b < l.batch; ++b) {
    for (int64_t h = 0; h < l.heads; ++h) {
      if (past && pastLen > 0) {
        const size_t bytes = static_cast<size_t>(pastLen) * rowBytes;
        const auto* p = static_cast<const unsigned char*>(past->rawData());
        std::memcpy(dst, p + static_cast<size_t>(b * l.heads + h) * bytes, bytes);
        dst += bytes;
      }
      for (int64_t s = 0; s < l.seq; ++s, dst += rowBytes)
        std::memcpy(dst, src + static_cast<size_t>(l.offset(b, h, s)) * es, rowBytes);
    }
  }
  return Status::ok();
}

template <class T, class C>
void storeRow(const C* row, int64_t n, T* out) {
  for (int64_t j = 0; j < n; ++j) out[j] = static_cast<T>(row[j]);
}

// Turns one row of scaled scores into probabilities, writing the 4th output at the
// stage qk_matmul_output_mode selects.
template <class T, class C>
void scoresToProbabilities(const AttentionSpec& s, C* row, const C* bias, bool anyAllowed,
                           T* qkRow) {
  const int64_t n = s.totalLen;
  if (qkRow && s.qkMode == 0) storeRow(row, n, qkRow);
  if (s.softcap > 0.f) {
    const C cap = static_cast<C>(s.softcap);
    for (int64_t j = 0; j < n; ++j) row[j] = cap * std::tanh(row[j] / cap);
  }
  if (qkRow && s.qkMode == 1) storeRow(row, n, qkRow);
  for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
  if (qkRow && s.qkMode == 2) storeRow(row, n, qkRow);
  attention::roundBuffer(row, n, s.softmaxType);
  if (std::is_same_v<C, double> || s.softmaxType == DataType::kFloat64) {
    attention::softmaxRow<double>(row, n);
  } else {
    attention::softmaxRow<float>(row, n);
  }
  // Fully masked rows are decided on the bias, not the scores: a +inf score plus a
  // -inf bias is NaN, yet the row must still come out as zeros.
  if (!anyAllowed) std::fill(row, row + n, C(0));
  attention::roundBuffer(row, n, s.softmaxType);
  for (int64_t j = 0; j < n; ++j) row[j] = attention::roundThrough<T>(row[j]);
  if (qkRow && s.qkMode == 3) storeRow(row, n, qkRow);
}

template <class T>
Status runAttention(KernelContext& ctx, const AttentionSpec& s) {
  using C = BlasType<T>;
  const int64_t batch = s.q.batch, qHeads = s.q.heads, qSeq = s.q.seq, d = s.q.headSize;
  const int64_t kvHeads = s.k.heads, total = s.totalLen, dv = s.v.headSize;
  Tensor presentKey, presentValue;
  KILN_RETURN_IF_ERROR(
      makePresent(ctx, 1, ctx.inputOrNull(4), ctx.input(1), s.k, s.pastLen, &presentKey));
  KILN_RETURN_IF_ERROR(
      makePresent(ctx, 2, ctx.inputOrNull(5), ctx.input(2), s.v, s.pastLen, &presentValue));

  std::vector<C> q(static_cast<size_t>(batch * qHeads * qSeq * d));
  std::vector<C> k(static_cast<size_t>(batch * kvHeads * total * d));
  std::vector<C> v(static_cast<size_t>(batch * kvHeads * total * dv));
  KILN_RETURN_IF_ERROR(attention::gatherHeads(ctx.input(0), s.q, s.sqrtScale, q.data()));
  KILN_RETURN_IF_ERROR(
      attention::gatherHeads(presentKey, {batch, kvHeads, total, d, false}, s.sqrtScale, k.data()));
  KILN_RETURN_IF_ERROR(
      attention::gatherHeads(presentValue, {batch, kvHeads, total, dv, false}, 1.0, v.data()));
  MaskRows<C> mask;
  if (ctx.hasInput(3)) KILN_RETURN_IF_ERROR(readMask(ctx, s, &mask));

  const DataType type = ctx.input(0).type();
  const Shape yShape =
      s.q.packed ? Shape{batch, qSeq, qHeads * dv} : Shape{batch, qHeads, qSeq, dv};
  Tensor& y = ctx.allocateOutput(0, type, yShape);
  T* qk = ctx.wantsOutput(3) ? ctx.allocateOutput(3, type, {batch, qHeads, qSeq, total}).data<T>()
                             : nullptr;
  std::vector<C> yScratch(std::is_same_v<T, C> ? 0 : static_cast<size_t>(y.numel()));
  C* yData = std::is_same_v<T, C> ? reinterpret_cast<C*>(y.data<T>()) : yScratch.data();
  const int64_t ldy = s.q.packed ? qHeads * dv : dv;

  std::vector<C> scores(static_cast<size_t>(qSeq * total)), bias(static_cast<size_t>(total));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < qHeads; ++h) {
      const int64_t kvHead = h / s.group;  // KV heads repeat interleaved: h0 h0 h1 h1 ...
      const C* qHead = q.data() + (b * qHeads + h) * qSeq * d;
      const int64_t kvBase = (b * kvHeads + kvHead) * total;
      gemm(false, true, qSeq, total, d, C(1), qHead, d, k.data() + kvBase * d, d, C(0),
           scores.data(), total);
      for (int64_t i = 0; i < qSeq; ++i) {
        const bool anyAllowed = biasRow(s, mask, b, h, i, bias.data());
        T* qkRow = qk ? qk + ((b * qHeads + h) * qSeq + i) * total : nullptr;
        scoresToProbabilities<T>(s, scores.data() + i * total, bias.data(), anyAllowed, qkRow);
      }
      C* yHead = yData + (s.q.packed ? b * qSeq * ldy + h * dv : (b * qHeads + h) * qSeq * dv);
      gemm(false, false, qSeq, dv, total, C(1), scores.data(), total, v.data() + kvBase * dv, dv,
           C(0), yHead, ldy);
    }
  }
  if constexpr (!std::is_same_v<T, C>) convertFromBuffer(yScratch.data(), y.numel(), y.data<T>());
  return Status::ok();
}

Status attentionKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  AttentionSpec spec;
  KILN_RETURN_IF_ERROR(readLayouts(ctx, &spec));
  KILN_RETURN_IF_ERROR(readCache(ctx, &spec));
  KILN_RETURN_IF_ERROR(readAttributes(ctx, &spec));
  if (ctx.input(1).type() != ctx.input(0).type()) return ctx.error("K type differs from Q type");
  const DataType vType = ctx.input(2).type();
  if (vType != DataType::kFloat32 && vType != DataType::kFloat64 && vType != DataType::kFloat16 &&
      vType != DataType::kBFloat16)
    return ctx.unsupported(std::string("V data type ") + dataTypeName(vType));
  Status status = dispatchFloatTypes(ctx.input(0).type(), [&](auto tag) {
    return runAttention<typename decltype(tag)::type>(ctx, spec);
  });
  if (status.code() == StatusCode::kUnsupported && status.message().rfind("data type", 0) == 0)
    return ctx.unsupported("Q " + status.message());
  return status;
}

}  // namespace

void registerTransformerKernels(KernelRegistry& registry) {
  registry.add("Attention", 23, 1000, &attentionKernel);  // branches on opsets 24 and 25
  registerRmsNormKernels(registry);
  registerRotaryEmbeddingKernels(registry);
  registerLinearAttentionKernels(registry);
  registerFlexAttentionKernels(registry);
}

}  // namespace kiln::cpu
