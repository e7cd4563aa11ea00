// Per-op symbolic shape rules used by shape inference. One explicit table;
// each rule derives output types and shapes from input InferredValues and, for
// shape-computing ops, from the symbolic contents of small int64 tensors.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/shape_inference.h"

namespace kiln::shape {

// What a rule sees of one input: its inferred type/shape and, for 1-D/scalar int
// tensors whose contents are known as expressions, those expressions.
struct RuleInput {
  const InferredValue* info = nullptr;                  // nullptr: omitted optional input
  const std::vector<DimExpr>* symbolicValue = nullptr;  // contents, when known
  const Tensor* constant = nullptr;                     // the value itself, when folded
  bool present() const { return info != nullptr; }
};

struct RuleOutput {
  InferredValue info;
  std::optional<std::vector<DimExpr>> symbolicValue;
};

using ShapeRule = bool (*)(const Node& node, const std::vector<RuleInput>& inputs,
                           std::vector<RuleOutput>* outputs);

// The rule for an op type, or nullptr when Kiln has none.
ShapeRule findShapeRule(const std::string& opType);

// Numpy broadcasting of symbolic shapes (equal dims stay, 1 gives way, else max()).
SymbolicShape broadcastSymbolic(const SymbolicShape& a, const SymbolicShape& b);

}  // namespace kiln::shape
