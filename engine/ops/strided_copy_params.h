// ai.kiln StridedCopy(X; shape, strides, offset) -> Y: a strided read of X into a contiguous Y,
// its geometry read and checked once for the shape rule and both backends.
//   Y[i_0, ..., i_n] = X_flat[offset + sum_k i_k * strides[k]]
// X is read as the contiguous row-major array of its elements, whatever its shape; Y has
// dims `shape` and X's type. fold_split_views makes it: a Split's output and the view chain
// after it (Reshape, Transpose, ...) read from the Split's input in one copy.
// Checks: `shape` and `strides` of one length (Y's rank, 0 for a scalar), no dim and no stride
// negative, `offset` not negative, Y's element count within kMaxOutputElements, and, unless Y is
// empty, the largest index reached (offset + sum_k (shape[k] - 1) * strides[k], every product
// and sum checked for int64 overflow) inside X's elements. Host-only, no backend header; errors
// are messages without the node's name (the kernels add it).
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

constexpr const char* kStridedCopyOp = "StridedCopy";

struct StridedCopyGeometry {
  Shape shape;                   // Y's dims
  std::vector<int64_t> strides;  // element steps into X's storage, one per Y dim
  int64_t offset = 0;            // X's element Y[0, ..., 0] reads
};

// X's element count when only the attributes can be checked (a symbolic input shape).
constexpr int64_t kUnknownInputElements = -1;

// The node's geometry, checked (above) against X's `inputElements` elements (or only the
// attributes, with kUnknownInputElements).
Result<StridedCopyGeometry> stridedCopyGeometry(const Node& node, int64_t inputElements);

// True when `g` reads one contiguous run of X: Y is X_flat[offset, offset + numel(Y)) in
// order (dims of extent 1 aside, each stride is the product of the dims after it), so Y can be
// a view of X's bytes at element `offset` instead of a copy. An empty Y is not a view.
bool stridedCopyIsContiguousRun(const StridedCopyGeometry& g);

}  // namespace kiln::ops
