// Shape inference over symbolic dimensions. Every value of the main graph gets a
// data type and, where it can be derived, a shape whose dims are DimExprs of the
// input symbols ("batch", "seq*2", "floor((h+1)/2)"). Shape-computing subgraphs
// (Shape -> Gather -> Concat -> Reshape) are followed symbolically, and when input
// shapes are bound to numbers they evaluate to concrete shapes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln {

struct InferredValue {
  DataType type = DataType::kUndefined;
  bool hasShape = false;  // false: not even the rank is known
  SymbolicShape shape;
  bool isConstant = false;  // the value itself is known (initializer or folded)
};

struct ShapeInferenceResult {
  std::map<std::string, InferredValue> values;
  // Nodes whose output shapes could not be derived ("node 'x' (#3, NonZero): data-dependent").
  std::vector<std::string> unresolved;
  // The main-graph node of each entry of `unresolved`, in the same order.
  std::vector<StatusNode> unresolvedNodes;
  // Values computed at inference time from constants and shapes (small int tensors mostly).
  std::map<std::string, Tensor> folded;
};

// Infers shapes of `network`'s main graph. `inputShapes` binds named graph inputs to
// concrete shapes (others keep their declared symbolic shapes); a binding that
// contradicts a declared static dim or rank is an error naming the input.
Result<ShapeInferenceResult> inferShapes(const Network& network,
                                         const std::map<std::string, Shape>& inputShapes = {});

}  // namespace kiln
