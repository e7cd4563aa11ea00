// ONNX multidirectional (numpy) broadcasting of two shapes, the one rule both backends'
// kernels follow (CPU: backends/cpu/ops/op_utils, elementwise; CUDA: elementwise_common.cuh,
// slice_pad_tile.cpp's Expand). Host-only, no backend header.
#pragma once

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// Right-aligned dims, each pair equal or one of them 1; `out` gets the broadcast shape.
// An incompatible pair is an error "shapes A and B cannot broadcast".
Status broadcastShapes(const Shape& a, const Shape& b, Shape* out);

}  // namespace kiln::ops
