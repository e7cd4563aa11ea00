// DepthToSpace / SpaceToDepth as one permutation of a 6-D view, decided once for both
// backends (issue 23's op table): the view of the NCHW input, the permutation and the
// output shape, with the blocksize and the channel count held to the dim limit. Host-only,
// no backend header; errors are messages without the node's name.
#pragma once

#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

struct BlockRearrange {
  Shape split;            // the input viewed as 6 dims
  std::vector<int> perm;  // output dim k is split[perm[k]]
  Shape outShape;         // 4-D
};

// DepthToSpace (`toSpace`) or SpaceToDepth of a 4-D NCHW input `in`: blocksize > 0 and
// squared within the dim limit (a blocksize of 2^32 overflowed b * b), mode DCR or CRD.
// Errors: "input must be 4-D NCHW, got 2x3", "blocksize must be positive",
// "channels are not a multiple of blocksize^2", "height and width must be multiples of
// blocksize", "unknown mode 'X'", the dim-limit refusals.
Result<BlockRearrange> blockRearrangeOf(const Node& node, const Shape& in, bool toSpace);

}  // namespace kiln::ops
