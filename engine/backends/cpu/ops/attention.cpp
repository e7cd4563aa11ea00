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
#include "ops/attention_params.h"

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

Status readLayouts(const KernelContext& ctx, AttentionSpec* s) {
  auto layouts = ops::attentionLayouts(ctx.node(), ctx.opset(), ctx.input(0).shape(),
                                       ctx.input(1).shape(), ctx.input(2).shape());
  if (!layouts.isOk()) return ctx.error(layouts.status().message());
  s->q = layouts->q, s->k = layouts->k, s->v = layouts->v, s->group = layouts->group;
  return Status::ok();
}

Status readCache(const KernelContext& ctx, AttentionSpec* s) {
  const Tensor* pastKey = ctx.inputOrNull(4);
  const Tensor* pastValue = ctx.inputOrNull(5);
  if (!pastKey != !pastValue) return ctx.error("past_key and past_value must be given together");
  if (pastKey) {
    auto keyLength = ops::attentionPastLength("past_key", pastKey->shape(), pastKey->type(), s->k,
                                              ctx.input(1).type());
    if (!keyLength.isOk()) return ctx.error(keyLength.status().message());
    s->pastLen = keyLength.value();
    auto valueLength = ops::attentionPastLength("past_value", pastValue->shape(), pastValue->type(),
                                                s->v, ctx.input(2).type(), s->pastLen);
    if (!valueLength.isOk()) return ctx.error(valueLength.status().message());
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
  auto a = ops::attentionAttributes(ctx.node(), ctx.opset(), s->q.headSize);
  if (!a.isOk()) return ctx.error(a.status().message());
  s->sqrtScale = std::sqrt(a->scale);
  s->softcap = a->softcap;
  s->causal = a->causal;
  s->qkMode = a->qkMode;
  if (a->softmaxPrecision != 0) s->softmaxType = static_cast<DataType>(a->softmaxPrecision);
  s->leftWindow = a->leftWindow;
  s->rightWindow = a->rightWindow;
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
