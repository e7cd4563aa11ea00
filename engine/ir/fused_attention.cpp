#include "ir/fused_attention.h"

#include <cmath>
#include <vector>

namespace kiln {
namespace {

struct Dims {
  int64_t batch = 0, heads = 0, seq = 0, features = 0;
};

// The (B, H, S, D) view of a rank-4 operand in `layout`, and its strides.
std::string readOperand(const char* name, const Shape& s, bool bshd, Dims* dims,
                        AttentionStrides* strides) {
  if (s.size() != 4)
    return std::string("input '") + name + "' " + shapeToString(s) + " must have rank 4 (" +
           (bshd ? "[B, S, H, D]" : "[B, H, S, D]") + ")";
  *dims = bshd ? Dims{s[0], s[2], s[1], s[3]} : Dims{s[0], s[1], s[2], s[3]};
  *strides = bshd ? AttentionStrides{s[1] * s[2] * s[3], s[3], s[2] * s[3]}
                  : AttentionStrides{s[1] * s[2] * s[3], s[2] * s[3], s[3]};
  return "";
}

// The STRIDED view of operand `name` from attribute `attribute`, checked to lie inside the
// `s`-shaped input: every field >= 0, sizes >= 1, and the last element it reaches
// (offset + sum (size - 1) stride + D - 1, in 128-bit arithmetic) below the input's count.
std::string readView(const Node& node, const char* name, const char* attribute, const Shape& s,
                     Dims* dims, AttentionStrides* strides) {
  const std::vector<int64_t> view = node.attrInts(attribute);
  if (view.size() != kAttentionViewLength)
    return std::string("attribute ") + attribute + " must hold " +
           std::to_string(kAttentionViewLength) +
           " ints [offset, B, H, S, D, stride_b, stride_h, stride_s] (got " +
           std::to_string(view.size()) + ")";
  for (int64_t x : view)
    if (x < 0) return std::string("attribute ") + attribute + " has a negative entry";
  for (size_t i = 1; i <= 4; ++i)
    if (view[i] < 1) return std::string("attribute ") + attribute + " has a size below 1";
  __int128 count = 1;
  for (int64_t d : s) {
    if (d < 0)
      return std::string("input '") + name + "' " + shapeToString(s) + " has a negative dim";
    count *= d;
    if (count > (__int128{1} << 62)) break;
  }
  const __int128 last = __int128{view[0]} + __int128{view[1] - 1} * view[5] +
                        __int128{view[2] - 1} * view[6] + __int128{view[3] - 1} * view[7] +
                        view[4] - 1;
  if (last >= count)
    return std::string("attribute ") + attribute + " reaches element " +
           (last > (__int128{1} << 62) ? std::string("past 2^62")
                                       : std::to_string(static_cast<long long>(last))) +
           ", outside input '" + name + "' " + shapeToString(s);
  *dims = Dims{view[1], view[2], view[3], view[4]};
  *strides = AttentionStrides{view[5], view[6], view[7], view[0]};
  return "";
}

std::string readMask(const Shape& m, const FusedAttentionGeometry& g, int64_t strides[4]) {
  if (m.size() > 4)
    return "input 'M' " + shapeToString(m) + " has rank > 4 (it must broadcast to [B, H, Sq, Sk])";
  if (g.maskPeriod > 0 && (m.size() != 4 || g.batch % g.maskPeriod != 0))
    return "input 'M' " + shapeToString(m) + " with mask_batch_period " +
           std::to_string(g.maskPeriod) + " needs rank 4 and a batch (" + std::to_string(g.batch) +
           ") that is a multiple of the period";
  const int64_t full[4] = {g.maskPeriod > 0 ? g.maskPeriod : g.batch, g.heads, g.seqQ, g.seqK};
  int64_t stride = 1;
  for (int d = 3; d >= 0; --d) {
    const int at = d - (4 - static_cast<int>(m.size()));
    const int64_t dim = at < 0 ? 1 : m[at];
    if (dim != 1 && dim != full[d])
      return "input 'M' " + shapeToString(m) +
             " does not broadcast to [B, H, Sq, Sk] = " + shapeToString(Shape(full, full + 4));
    strides[d] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  return "";
}

}  // namespace

std::string fusedAttentionGeometry(const Node& node, const Shape& q, const Shape& k, const Shape& v,
                                   const Shape* mask, FusedAttentionGeometry* out) {
  const std::string qkvLayout = node.attrString("qkv_layout", "BSHD");
  const std::string outLayout = node.attrString("output_layout", "BSHD");
  const bool merge = node.attrInt("merge_heads", 0) != 0;
  if (qkvLayout != "BSHD" && qkvLayout != "BHSD" && qkvLayout != "STRIDED")
    return "attribute qkv_layout '" + qkvLayout + "' is not BSHD, BHSD or STRIDED";
  if (outLayout != "BSHD" && outLayout != "BHSD" && outLayout != "SBHD")
    return "attribute output_layout '" + outLayout + "' is not BSHD, BHSD or SBHD";
  if (merge && outLayout == "BHSD") return "merge_heads = 1 needs output_layout BSHD or SBHD";
  const bool bshd = qkvLayout == "BSHD";
  Dims dq, dk, dv;
  FusedAttentionGeometry& g = *out;
  if (qkvLayout == "STRIDED") {
    for (const std::string& e : {readView(node, "Q", kAttentionViewAttributes[0], q, &dq, &g.q),
                                 readView(node, "K", kAttentionViewAttributes[1], k, &dk, &g.k),
                                 readView(node, "V", kAttentionViewAttributes[2], v, &dv, &g.v)})
      if (!e.empty()) return e;
  } else {
    for (const std::string& e :
         {readOperand("Q", q, bshd, &dq, &g.q), readOperand("K", k, bshd, &dk, &g.k),
          readOperand("V", v, bshd, &dv, &g.v)})
      if (!e.empty()) return e;
  }
  const int64_t heads = node.attrInt("num_heads", 0);
  if (heads <= 0) return "attribute num_heads must be > 0 (got " + std::to_string(heads) + ")";
  if (dq.heads != heads || dk.heads != heads || dv.heads != heads)
    return "Q " + shapeToString(q) + ", K " + shapeToString(k) + " and V " + shapeToString(v) +
           " must have num_heads = " + std::to_string(heads) + " heads (" + qkvLayout + ")";
  if (dk.batch != dq.batch || dv.batch != dq.batch)
    return "Q, K and V must have one batch size (" + shapeToString(q) + ", " + shapeToString(k) +
           ", " + shapeToString(v) + ")";
  if (dk.features != dq.features)
    return "K " + shapeToString(k) + " must have Q's head size " + std::to_string(dq.features);
  if (dv.seq != dk.seq)
    return "V " + shapeToString(v) + " must have K's sequence length " + std::to_string(dk.seq);
  g.batch = dq.batch;
  g.heads = heads;
  g.seqQ = dq.seq;
  g.seqK = dk.seq;
  g.headDim = dq.features;
  g.valueDim = dv.features;
  g.scale = node.attrFloat("scale", g.headDim > 0 ? 1.f / std::sqrt(float(g.headDim)) : 1.f);
  g.nanToZero = node.attrInt("nan_to_zero", 0) != 0;
  const int64_t b = g.batch, h = g.heads, s = g.seqQ, d = g.valueDim;
  if (outLayout == "BSHD") {
    g.y = {s * h * d, d, h * d};
    g.outputShape = merge ? Shape{b, s, h * d} : Shape{b, s, h, d};
  } else if (outLayout == "SBHD") {
    g.y = {h * d, d, b * h * d};
    g.outputShape = merge ? Shape{s, b, h * d} : Shape{s, b, h, d};
  } else {
    g.y = {h * s * d, s * d, d};
    g.outputShape = {b, h, s, d};
  }
  g.maskPeriod = node.attrInt("mask_batch_period", 0);
  if (g.maskPeriod < 0)
    return "attribute mask_batch_period must be >= 0 (got " + std::to_string(g.maskPeriod) + ")";
  g.hasMask = mask != nullptr;
  return mask ? readMask(*mask, g, g.mask) : "";
}

}  // namespace kiln
