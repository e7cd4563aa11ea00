// ai.kiln BroadcastGatherElements(data, indices; axis)'s geometry, decided once for both
// backends: the output is data's shape but for the axis, whose size is the indices'; the
// indices (data's rank) broadcast over every other dim where they have size 1 and must equal
// data's dim elsewhere. Host-only, no backend header; errors are messages without the
// node's name (the kernels add it).
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

struct BroadcastGatherGeometry {
  Shape outShape;
  // The indices' element steps along each output dim: contiguous, 0 where they broadcast.
  std::vector<int64_t> indexStrides;
};

// `axis` already normalized to [0, rank).
Result<BroadcastGatherGeometry> broadcastGatherGeometry(const Shape& data, const Shape& indices,
                                                        int64_t axis);

}  // namespace kiln::ops
