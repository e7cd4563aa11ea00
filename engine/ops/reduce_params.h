// The reduced axes of a Reduce* op (and ArgMax-style ops that share the rule), decided once
// for both backends (issue 23's op table). Host-only, no backend header; errors are
// messages without the node's name (the kernels add it).
#pragma once

#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// One flag per axis of a rank-`rank` input: the axes come from the `axes` attribute, or
// (`axesFromInput`, the opsets that moved them) from `axesInput` (a host copy of input 1,
// nullptr when absent; int64 or int32, at most 1-D), falling back to the attribute that
// some converters keep. Empty axes reduce every axis, or none under noop_with_empty_axes.
// Errors: "input 'axes' must be int64, got float32", "input 'axes' must be 1-D",
// "axis 3 is out of range for rank 3", "axis -1 is repeated in 'axes'".
Result<std::vector<bool>> reducedAxes(const Node& node, bool axesFromInput, int rank,
                                      const Tensor* axesInput);

}  // namespace kiln::ops
