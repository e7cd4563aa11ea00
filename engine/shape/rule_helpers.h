// Helpers the shape rule files share (shape_rules.cpp, shape_rules_tensor.cpp,
// shape_rules_spatial.cpp, ...).
// Internal to shape inference.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "shape/shape_rules.h"

namespace kiln::shape {

using Outs = std::vector<RuleOutput>;
using Ins = std::vector<RuleInput>;

inline bool known(const Ins& in, size_t i) {
  return i < in.size() && in[i].present() && in[i].info->hasShape;
}
inline const SymbolicShape& shapeOf(const Ins& in, size_t i) {
  return in[i].info->shape;
}
inline DataType typeOf(const Ins& in, size_t i) {
  return i < in.size() && in[i].present() ? in[i].info->type : DataType::kUndefined;
}

inline void setOut(Outs* outs, size_t i, DataType type, SymbolicShape shape) {
  if (outs->size() <= i) outs->resize(i + 1);
  (*outs)[i].info.type = type;
  (*outs)[i].info.hasShape = true;
  (*outs)[i].info.shape = std::move(shape);
}

inline int64_t normAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

// Contents of input i as numbers, when all of them are constants.
inline std::optional<std::vector<int64_t>> constInts(const Ins& in, size_t i) {
  if (i >= in.size() || !in[i].symbolicValue) return std::nullopt;
  std::vector<int64_t> v;
  for (const DimExpr& d : *in[i].symbolicValue) {
    if (!d.isConst()) return std::nullopt;
    v.push_back(d.constValue());
  }
  return v;
}

// Registers the rules of the ops that move or index tensors (shape_rules_tensor.cpp).
void addTensorShapeRules(std::map<std::string, ShapeRule>& table);
// Registers the convolution, pooling, resize, pad and depth/space rules.
void addSpatialShapeRules(std::map<std::string, ShapeRule>& table);
// Registers the rules of the ai.kiln fused ops (shape_rules_fused.cpp).
void addFusedShapeRules(std::map<std::string, ShapeRule>& table);
// Registers the rules of the INT8 layers fold_qdq makes (shape_rules_quantized.cpp).
void addQuantizedShapeRules(std::map<std::string, ShapeRule>& table);

}  // namespace kiln::shape
