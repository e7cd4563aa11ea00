// Shapes as Kiln's kernels index them, for both halves of an op family (issue 23): the
// host .cpp fills a ShapeInfo, the device _impl.cu reads it (device_common.cuh's
// stridedOffset). Plain C++: g++ and nvcc include it.
//
// Contract: a ShapeInfo holds up to kMaxRank dims; broadcastStrides / packedStrides
// (device_common.cu) return rank = shape's rank (the output's for broadcastStrides).
#pragma once

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::cuda {

constexpr int kMaxRank = 8;

// Index math for up to kMaxRank dims, passed by value to kernels.
struct ShapeInfo {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};  // element strides of the tensor being read (0 = broadcast)
};

// Strides of `shape` read as if broadcast to `outShape` (right-aligned, 0 on size-1 dims).
ShapeInfo broadcastStrides(const Shape& shape, const Shape& outShape);
// Packed row-major strides of `shape`.
ShapeInfo packedStrides(const Shape& shape);

}  // namespace kiln::cuda
