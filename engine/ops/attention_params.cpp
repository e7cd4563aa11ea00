#include "ops/attention_params.h"

#include <algorithm>
#include <cmath>

namespace kiln::ops {
namespace {

std::string dims(const Shape& s) {
  return shapeToString(s);
}

Status packedLayouts(const Node& node, const Shape& q, const Shape& k, const Shape& v,
                     AttentionLayouts* out) {
  const int64_t qHeads = node.attrInt("q_num_heads", 0);
  const int64_t kvHeads = node.attrInt("kv_num_heads", 0);
  if (qHeads <= 0 || kvHeads <= 0)
    return invalidArgument("3-D Q, K, V need positive q_num_heads and kv_num_heads attributes");
  // More heads than features only divides an empty hidden size: q_num_heads 2^62 over
  // [B, S, 0] overflowed batch * heads and looped over every head.
  if (qHeads > std::max<int64_t>(q[2], 1) || kvHeads > std::max<int64_t>(std::min(k[2], v[2]), 1))
    return invalidArgument("q_num_heads " + std::to_string(qHeads) + " / kv_num_heads " +
                           std::to_string(kvHeads) + " exceed the hidden sizes of Q " + dims(q) +
                           ", K " + dims(k) + ", V " + dims(v));
  if (q[2] % qHeads != 0 || k[2] % kvHeads != 0 || v[2] % kvHeads != 0)
    return invalidArgument("hidden sizes of Q " + dims(q) + ", K " + dims(k) + ", V " + dims(v) +
                           " are not multiples of q_num_heads " + std::to_string(qHeads) +
                           " / kv_num_heads " + std::to_string(kvHeads));
  out->q = {q[0], qHeads, q[1], q[2] / qHeads, true};
  out->k = {k[0], kvHeads, k[1], k[2] / kvHeads, true};
  out->v = {v[0], kvHeads, v[1], v[2] / kvHeads, true};
  return Status::ok();
}

}  // namespace

Result<AttentionLayouts> attentionLayouts(const Node& node, int opset, const Shape& q,
                                          const Shape& k, const Shape& v) {
  if (q.size() != k.size() || q.size() != v.size() || (q.size() != 3 && q.size() != 4))
    return invalidArgument("Q, K, V must all be 3-D or all 4-D, got " + dims(q) + ", " + dims(k) +
                           ", " + dims(v));
  AttentionLayouts s;
  if (q.size() == 3) {
    KILN_RETURN_IF_ERROR(packedLayouts(node, q, k, v, &s));
  } else {
    s.q = {q[0], q[1], q[2], q[3], false};
    s.k = {k[0], k[1], k[2], k[3], false};
    s.v = {v[0], v[1], v[2], v[3], false};
    const bool named = node.hasAttr("q_num_heads") || node.hasAttr("kv_num_heads");
    if (named && opset >= 25)
      return invalidArgument("q_num_heads / kv_num_heads must not be set for 4-D inputs");
    if (named && (node.attrInt("q_num_heads", s.q.heads) != s.q.heads ||
                  node.attrInt("kv_num_heads", s.k.heads) != s.k.heads))
      return invalidArgument("q_num_heads / kv_num_heads disagree with the 4-D input shapes");
  }
  if (s.k.batch != s.q.batch || s.v.batch != s.q.batch)
    return invalidArgument("Q, K, V batch sizes differ: " + dims(q) + ", " + dims(k) + ", " +
                           dims(v));
  if (s.k.seq != s.v.seq || s.k.heads != s.v.heads)
    return invalidArgument("K " + dims(k) + " and V " + dims(v) +
                           " differ in heads or sequence length");
  if (s.k.headSize != s.q.headSize)
    return invalidArgument("Q " + dims(q) + " and K " + dims(k) + " head sizes differ");
  if (s.k.heads <= 0 || s.q.heads % s.k.heads != 0)
    return invalidArgument("query heads (" + std::to_string(s.q.heads) +
                           ") must be a multiple of key/value heads (" + std::to_string(s.k.heads) +
                           ")");
  s.group = s.q.heads / s.k.heads;
  return s;
}

Result<int64_t> attentionPastLength(const char* name, const Shape& past, DataType pastType,
                                    const AttentionHeadLayout& current, DataType currentType,
                                    int64_t expectedLength) {
  if (past.size() != 4)
    return invalidArgument(std::string(name) + " must be 4-D, got " + dims(past));
  const int64_t length = expectedLength >= 0 ? expectedLength : past[2];
  const Shape want{current.batch, current.heads, length, current.headSize};
  if (past != want)
    return invalidArgument(std::string("input '") + name + "' has shape " + dims(past) +
                           ", expected " + dims(want));
  if (pastType != currentType)
    return invalidArgument(std::string("input '") + name + "' type differs from the current one");
  return length;
}

Result<AttentionAttributes> attentionAttributes(const Node& node, int opset, int64_t headSize) {
  AttentionAttributes a;
  a.scale = node.hasAttr("scale") ? static_cast<double>(node.attrFloat("scale", 1.f))
                                  : 1.0 / std::sqrt(static_cast<double>(headSize));
  // Q and K are each scaled by sqrt(scale), so a negative scale has no meaning here.
  if (!(a.scale >= 0.0)) return invalidArgument("attribute 'scale' must be non-negative");
  a.softcap = node.attrFloat("softcap", 0.f);
  a.causal = node.attrInt("is_causal", 0) != 0;
  a.qkMode = node.attrInt("qk_matmul_output_mode", 0);
  if (a.qkMode < 0 || a.qkMode > 3)
    return invalidArgument("attribute 'qk_matmul_output_mode' must be 0..3, got " +
                           std::to_string(a.qkMode));
  if (node.hasAttr("softmax_precision")) {
    a.softmaxPrecision = node.attrInt("softmax_precision", 1);
    if (a.softmaxPrecision != 1 && a.softmaxPrecision != 10 && a.softmaxPrecision != 11 &&
        a.softmaxPrecision != 16)
      return invalidArgument("attribute 'softmax_precision' must be 1, 10, 11 or 16, got " +
                             std::to_string(a.softmaxPrecision));
  }
  if (opset >= 25) {
    a.leftWindow = node.attrInt("left_window_size", -1);
    a.rightWindow = node.attrInt("right_window_size", -1);
    if (a.leftWindow < -1 || a.rightWindow < -1)
      return invalidArgument("window sizes must be -1 or non-negative");
  }
  return a;
}

}  // namespace kiln::ops
