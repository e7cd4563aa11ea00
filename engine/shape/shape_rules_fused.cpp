// Shape rules of the ai.kiln ops the fusion passes create (ops of the same name in
// other domains are not these and get no rule).
//   ScaledMaskedSoftmax(X, [M])       -> Y: X and M broadcast, X's type
//   AddLayerNorm(A, B, gamma, [beta]) -> Y, [S]: A and B broadcast, A's type
//   FusedConv(X, W, [B], [Z])          -> Y: Conv's rule (B and Z do not change it)
#include <algorithm>

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

}  // namespace

void addFusedShapeRules(std::map<std::string, ShapeRule>& t) {
  t["ScaledMaskedSoftmax"] = &kilnBroadcastOfFirstTwo;
  t["AddLayerNorm"] = &kilnBroadcastOfFirstTwo;
  t["FusedConv"] = &kilnFusedConvRule;
}

}  // namespace kiln::shape
