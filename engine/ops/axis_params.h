// An op's `axis` attribute and the (outer, n, inner) view around it, decided once for both
// backends (issue 23's op table): Softmax/LogSoftmax/Hardmax (with the pre-13 2-D form),
// ArgMax/ArgMin, LpNormalization. Host-only, no backend header; errors are messages
// without the node's name (the kernels add it).
#pragma once

#include <cstdint>

#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// The node's `axis` attribute (`fallback` when absent) for an input of rank `rank`,
// accepted in [-rank, upper] and made non-negative. `upper` is the op's: rank - 1 for most,
// max(rank - 1, 0) where a scalar's axis 0 is allowed (ArgMax), rank for Softmax before
// opset 13. Error: "attribute 'axis' 3 is out of range for rank 3".
Result<int64_t> axisAttribute(const Node& node, int64_t fallback, int64_t rank, int64_t upper);

// `shape` seen as [outer, n, inner] around `axis`: outer the dims before it, n the axis
// (and, with `through`, every dim after it: Softmax's pre-13 2-D form), inner the rest.
// A scalar (or an axis past the last dim) gives 1, 1, 1.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit splitAround(const Shape& shape, int64_t axis, bool through = false);

// `shape` without `axis`, or with it as 1 when `keepDims` (ArgMax's output).
Shape shapeWithoutAxis(const Shape& shape, int64_t axis, bool keepDims);

}  // namespace kiln::ops
