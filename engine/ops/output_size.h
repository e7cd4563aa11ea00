// The output-size check every op's kernels share (issue 23's op table): a shape an op
// computes from its inputs and attributes is refused before anything is allocated.
// Host-only, no backend header; the error is a message without the node's name.
#pragma once

#include <cstdint>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// Outputs past this many elements are refused: allocating them would be a crash, not an
// error (the same bound for every op and both backends).
constexpr int64_t kMaxOutputElements = int64_t{1} << 32;

// Error naming `what` when `shape` has a negative dim or more than kMaxOutputElements
// elements (checked without overflow): "output has a negative dim: 2x-1",
// "output 65536x65536x2 is too large".
Status checkOutputElements(const Shape& shape, const char* what);

}  // namespace kiln::ops
