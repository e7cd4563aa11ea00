// BroadcastGatherElements' geometry (contract: broadcast_gather_params.h).
#include "ops/broadcast_gather_params.h"

#include <string>

namespace kiln::ops {

Result<BroadcastGatherGeometry> broadcastGatherGeometry(const Shape& data, const Shape& indices,
                                                        int64_t axis) {
  if (indices.size() != data.size())
    return Status(StatusCode::kInvalidArgument, "indices and data differ in rank");
  BroadcastGatherGeometry g;
  g.outShape = data;
  g.outShape[axis] = indices[axis];
  g.indexStrides.assign(indices.size(), 1);
  for (size_t d = indices.size(); d-- > 1;) g.indexStrides[d - 1] = g.indexStrides[d] * indices[d];
  for (size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int64_t>(d) == axis || indices[d] == data[d]) continue;
    if (indices[d] != 1)
      return Status(StatusCode::kInvalidArgument,
                    "indices dim " + std::to_string(d) + " is neither 1 nor the data's");
    g.indexStrides[d] = 0;
  }
  return g;
}

}  // namespace kiln::ops
