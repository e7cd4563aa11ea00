// QuantizeLinear / DequantizeLinear parameters both backends run, decided once (issue 23's
// op table): which scale (and zero point) each element of x uses, per tensor, per axis
// or per block, and the integer range of a quantized type. Host-only, no backend header;
// errors are messages without the node's name (the kernels add it).
#pragma once

#include <cstdint>

#include "kiln/data_type.h"
#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// Element i of x uses scale index 0 (kTensor), (i / inner) % axisDim (kAxis), or its
// block's index (kBlocked: blocks of blockSize along the axis, scaleAxisDim of them).
// Each backend's kernels compute that index from these fields.
struct QuantLayout {
  enum Kind : int { kTensor = 0, kAxis = 1, kBlocked = 2 };
  int kind = kTensor;
  int64_t axisDim = 1, inner = 1, blockSize = 0, scaleAxisDim = 1;
};

// The layout of a scale of shape `scale` (and a zero point of shape `*zeroPoint`, nullptr
// when absent) over x of shape `x`: one element (and no block_size) is per tensor; else
// the node's `axis` (default 1) with a 1-D scale of x's dim there, or with `block_size`
// a scale of x's shape with that dim ceil(dim / block_size) (computed without adding:
// block_size INT64_MAX once wrapped it). Errors: "zero point shape 3 differs from scale
// shape 4", "attribute 'axis': axis 2 is out of range for rank 2", "scale 5 must be a
// scalar or 1-D of size 4 (x dim 1)", "blocked scale must have shape 2x2, got 2x3".
Result<QuantLayout> quantLayout(const Node& node, const Shape& x, const Shape& scale,
                                const Shape* zeroPoint);

// The range of an integer quantized type (int4/uint4/int2/uint2 held in a byte); false
// for any other type.
bool integerRange(DataType type, double* lo, double* hi);

}  // namespace kiln::ops
