// Shape rules of the ai.kiln ops the fusion passes create (ops of the same name in
// other domains are not these and get no rule).
//   ScaledMaskedSoftmax(X, [M])       -> Y: X and M broadcast, X's type
//   AddLayerNorm(A, B, gamma, [beta]) -> Y, [S]: A and B broadcast, A's type
//   FusedConv(X, W, [B], [Z])          -> Y: Conv's rule (B and Z do not change it)
//   FusedConvMaxPool(X, W, [B], [y_scale], [y_zero_point]) -> Y: MaxPool's rule (the pool_*
//     attributes) on Conv's output; y_zero_point's type, int8 with y_scale alone, else
//     X's type (contract: ir/conv_max_pool.h)
//   FusedAttention(Q, K, V, [M])       -> Y: Q's batch, sequence and heads with V's head
//     size, in output_layout ([B, Sq, H, Dv], [B, H, Sq, Dv]) or [B, Sq, H * Dv] when
//     merge_heads (contract: ir/fused_attention.h)
//   PointwiseChain(X0, X1, ...)        -> Y: every input broadcast, the program's output type
//   BroadcastGatherElements(D, I; axis) -> Y: D's shape with I's axis dim, D's type
//   StridedCopy(X; shape, strides, offset) -> Y: `shape`, X's type, the reads inside X
//     (contract: ops/strided_copy_params.h)
#include <algorithm>

#include "ir/conv_max_pool.h"
#include "ir/fused_attention.h"
#include "ops/strided_copy_params.h"
#include "shape/rule_helpers.h"

namespace kiln::shape {
namespace {

// Outputs 0..count-1 get the broadcast shape of inputs 0 and (when present) 1.
bool kilnBroadcastOfFirstTwo(const Node& node, const Ins& in, Outs* outs) {
  if (node.domain != "ai.kiln" || !known(in, 0)) return false;
  SymbolicShape shape = shapeOf(in, 0);
  if (in.size() > 1 && in[1].present()) {
    if (!known(in, 1)) return false;
    shape = broadcastSymbolic(shape, shapeOf(in, 1));
  }
  for (size_t i = 0; i < std::max<size_t>(outs->size(), 1); ++i)
    setOut(outs, i, typeOf(in, 0), shape);
  return true;
}

bool kilnFusedConvRule(const Node& node, const Ins& in, Outs* outs) {
  const ShapeRule conv = findShapeRule("Conv");
  return node.domain == "ai.kiln" && conv && conv(node, in, outs);
}

bool kilnFusedConvMaxPoolRule(const Node& node, const Ins& in, Outs* outs) {
  const ShapeRule conv = findShapeRule("Conv");
  const ShapeRule pool = findShapeRule("MaxPool");
  if (node.domain != "ai.kiln" || !conv || !pool || in.size() < 2) return false;
  Outs convOut(1);
  if (!conv(convPartOf(node), {in[kConvPoolX], in[kConvPoolW]}, &convOut)) return false;
  RuleInput pooled;
  pooled.info = &convOut[0].info;
  if (!pool(poolPartOf(node), {pooled}, outs) || outs->empty()) return false;
  const bool quantized = in.size() > kConvPoolYScale && in[kConvPoolYScale].present();
  const DataType zeroPoint = typeOf(in, kConvPoolYZeroPoint);
  (*outs)[0].info.type = !quantized                          ? typeOf(in, kConvPoolX)
                         : zeroPoint != DataType::kUndefined ? zeroPoint
                                                             : DataType::kInt8;
  return true;
}

// Q and V of rank 4 in qkv_layout (STRIDED: the sizes in q_view and v_view); the rest is
// checked by the kernels at run time.
bool kilnFusedAttentionRule(const Node& node, const Ins& in, Outs* outs) {
  if (node.domain != "ai.kiln" || !known(in, 0) || !known(in, 2)) return false;
  DimExpr batch, heads, seq, valueDim;
  if (node.attrString("qkv_layout", "BSHD") == "STRIDED") {
    const std::vector<int64_t> q = node.attrInts(kAttentionViewAttributes[0]);
    const std::vector<int64_t> v = node.attrInts(kAttentionViewAttributes[2]);
    if (q.size() != kAttentionViewLength || v.size() != kAttentionViewLength) return false;
    batch = DimExpr(q[1]), heads = DimExpr(q[2]), seq = DimExpr(q[3]), valueDim = DimExpr(v[4]);
  } else {
    const SymbolicShape& q = shapeOf(in, 0);
    const SymbolicShape& v = shapeOf(in, 2);
    if (q.size() != 4 || v.size() != 4) return false;
    const bool bshd = node.attrString("qkv_layout", "BSHD") == "BSHD";
    batch = q[0], heads = bshd ? q[2] : q[1], seq = bshd ? q[1] : q[2], valueDim = v[3];
  }
  const std::string layout = node.attrString("output_layout", "BSHD");
  const bool merge = node.attrInt("merge_heads", 0) != 0;
  SymbolicShape y;
  if (layout == "BHSD")
    y = {batch, heads, seq, valueDim};
  else if (layout == "SBHD")
    y = merge ? SymbolicShape{seq, batch, heads * valueDim}
              : SymbolicShape{seq, batch, heads, valueDim};
  else
    y = merge ? SymbolicShape{batch, seq, heads * valueDim}
              : SymbolicShape{batch, seq, heads, valueDim};
  setOut(outs, 0, typeOf(in, 0), y);
  return true;
}

// Every input broadcast (numpy); the type is the last step's (ir/pointwise_program.h).
bool kilnPointwiseChainRule(const Node& node, const Ins& in, Outs* outs) {
  const std::vector<int64_t> types = node.attrInts("types");
  if (node.domain != "ai.kiln" || in.empty() || types.empty()) return false;
  SymbolicShape shape;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!known(in, i)) return false;
    shape = i == 0 ? shapeOf(in, 0) : broadcastSymbolic(shape, shapeOf(in, i));
  }
  setOut(outs, 0, static_cast<DataType>(types.back()), shape);
  return true;
}

// Data's shape but for the axis, whose size is the indices' (same rank).
bool kilnBroadcastGatherElementsRule(const Node& node, const Ins& in, Outs* outs) {
  if (node.domain != "ai.kiln" || !known(in, 0) || !known(in, 1)) return false;
  SymbolicShape shape = shapeOf(in, 0);
  const SymbolicShape& indices = shapeOf(in, 1);
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = node.attrInt("axis", 0);
  if (axis < 0) axis += rank;
  if (indices.size() != shape.size() || axis < 0 || axis >= rank) return false;
  for (int64_t d = 0; d < rank; ++d)  // off the axis: broadcast (1) or the data's
    if (d != axis && indices[d] != DimExpr(1) && indices[d] != shape[d]) return false;
  shape[axis] = indices[axis];
  setOut(outs, 0, typeOf(in, 0), shape);
  return true;
}

// `shape`, checked against X's element count when X's shape is static (else the attributes
// alone; the kernels check the count at run time).
bool kilnStridedCopyRule(const Node& node, const Ins& in, Outs* outs) {
  if (node.domain != "ai.kiln" || !known(in, 0)) return false;
  int64_t elements = 1;
  for (const DimExpr& d : shapeOf(in, 0)) {
    if (!d.isConst() || d.constValue() < 0 ||
        __builtin_mul_overflow(elements, d.constValue(), &elements)) {
      elements = ops::kUnknownInputElements;
      break;
    }
  }
  auto geometry = ops::stridedCopyGeometry(node, elements);
  if (!geometry.isOk()) return false;
  SymbolicShape shape;
  for (int64_t d : geometry->shape) shape.push_back(DimExpr(d));
  setOut(outs, 0, typeOf(in, 0), shape);
  return true;
}

}  // namespace

void addFusedShapeRules(std::map<std::string, ShapeRule>& t) {
  t["ScaledMaskedSoftmax"] = &kilnBroadcastOfFirstTwo;
  t["AddLayerNorm"] = &kilnBroadcastOfFirstTwo;
  t["FusedConv"] = &kilnFusedConvRule;
  t[kFusedConvMaxPoolOp] = &kilnFusedConvMaxPoolRule;
  t["FusedAttention"] = &kilnFusedAttentionRule;
  t["PointwiseChain"] = &kilnPointwiseChainRule;
  t["BroadcastGatherElements"] = &kilnBroadcastGatherElementsRule;
  t[ops::kStridedCopyOp] = &kilnStridedCopyRule;
}

}  // namespace kiln::shape
