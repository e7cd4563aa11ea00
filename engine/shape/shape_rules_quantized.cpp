// Shape rules of the INT8 layers fold_qdq makes (contract: ir/quantized_layers.h):
//   QuantizedConv(X, W, ...)   -> Y: Conv's rule on X and W
//   QuantizedMatMul(A, W, ...) -> Y: A's shape with the last dim W's N
//   Fp8MatMul(X, W, ...)       -> Y: X's shape with the last dim W's N (ir/fp8_layers.h)
// Y is float32 (float_output_type's float16/bfloat16 where set), or int8/uint8
// (y_zero_point's type) when y_scale is present;
// float8e4m3fn for an Fp8MatMul with y_scale. A QuantizedConv's residual Z (float32,
// or int8 with z_scale) changes neither; a Z whose type disagrees with z_scale leaves
// Y unknown, and the kernels say what is wrong with it (one line naming the node).
#include "ir/fp8_layers.h"
#include "ir/quantized_layers.h"
#include "shape/rule_helpers.h"

namespace kiln::shape {
namespace {

DataType quantizedOutputType(const Node& node, const Ins& in) {
  if (in.size() <= kQuantYScale || !in[kQuantYScale].present())
    return quantizedFloatOutputType(node);
  const DataType zp = typeOf(in, kQuantYZeroPoint);
  return zp == DataType::kUndefined ? DataType::kInt8 : zp;
}

// An int8 Z comes with a z_scale, and a z_scale with an int8 (or not yet known) Z.
bool residualConsistent(const Ins& in) {
  const bool zScale = in.size() > kQuantZScale && in[kQuantZScale].present();
  if (in.size() <= kQuantResidual || !in[kQuantResidual].present()) return !zScale;
  const DataType z = typeOf(in, kQuantResidual);
  if (z == DataType::kUndefined) return true;
  return zScale == (z == DataType::kInt8);
}

bool quantizedConvRule(const Node& node, const Ins& in, Outs* outs) {
  const ShapeRule conv = findShapeRule("Conv");
  if (node.domain != "ai.kiln" || !conv || in.size() < 2 || !residualConsistent(in)) return false;
  const Ins convInputs = {in[kQuantX], in[kQuantW]};
  if (!conv(node, convInputs, outs) || outs->empty()) return false;
  (*outs)[0].info.type = quantizedOutputType(node, in);
  return true;
}

bool quantizedMatMulRule(const Node& node, const Ins& in, Outs* outs) {
  if (node.domain != "ai.kiln" || !known(in, kQuantX) || !known(in, kQuantW)) return false;
  SymbolicShape y = shapeOf(in, kQuantX);
  const SymbolicShape& w = shapeOf(in, kQuantW);
  if (y.empty() || w.size() != 2) return false;
  y.back() = w[1];
  setOut(outs, 0, quantizedOutputType(node, in), y);
  return true;
}

bool fp8MatMulRule(const Node& node, const Ins& in, Outs* outs) {
  if (node.domain != "ai.kiln" || !known(in, kFp8X) || !known(in, kFp8W)) return false;
  SymbolicShape y = shapeOf(in, kFp8X);
  const SymbolicShape& w = shapeOf(in, kFp8W);
  if (y.empty() || w.size() != 2) return false;
  y.back() = w[1];
  const bool fp8Output = in.size() > kFp8YScale && in[kFp8YScale].present();
  setOut(outs, 0, fp8Output ? DataType::kFp8E4M3 : DataType::kFloat32, y);
  return true;
}

}  // namespace

void addQuantizedShapeRules(std::map<std::string, ShapeRule>& t) {
  t[kQuantizedConvOp] = &quantizedConvRule;
  t[kQuantizedMatMulOp] = &quantizedMatMulRule;
  t[kFp8MatMulOp] = &fp8MatMulRule;
}

}  // namespace kiln::shape
