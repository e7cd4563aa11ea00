// The two questions about an op that are asked before any backend is chosen: does Kiln
// know this (domain, op, opset), and what does a node compute from constant inputs
// (shape inference folds shape arithmetic with it). The reference kernels answer both,
// behind this header, so the importer's support check and shape inference include no
// backend (issue 23). Implemented in backends/cpu/reference_ops.cpp.
#pragma once

#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// A built-in kernel exists for the op at that opset (plugins are asked separately).
bool isKnownOp(const std::string& domain, const std::string& opType, int opset);

// `node` run on `inputs` (nullptr for an omitted optional input) by its reference kernel:
// one tensor per output slot (undefined where the node leaves the slot unnamed or the
// kernel writes nothing). Errors: no built-in kernel, an op with subgraphs, the kernel's
// own error.
Result<std::vector<Tensor>> evaluateOnHost(const Node& node,
                                           const std::vector<const Tensor*>& inputs);

}  // namespace kiln::ops
