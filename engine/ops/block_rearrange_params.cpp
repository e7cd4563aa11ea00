// DepthToSpace / SpaceToDepth shared by the backends (contract: block_rearrange_params.h).
#include "ops/block_rearrange_params.h"

#include <string>

#include "kiln/tensor_size.h"

namespace kiln::ops {

Result<BlockRearrange> blockRearrangeOf(const Node& node, const Shape& s, bool toSpace) {
  if (s.size() != 4) return invalidArgument("input must be 4-D NCHW, got " + shapeToString(s));
  const int64_t b = node.attrInt("blocksize", 0);
  if (b <= 0) return invalidArgument("blocksize must be positive");
  // blocksize^2 is a channel count, so it is held to the dim limit: a blocksize of 2^32
  // overflowed `b * b` and the output dims (UB before any size check).
  const int64_t maxDim = tensorLimits().maxDim;
  if (b > maxDim / b)
    return invalidArgument("attribute 'blocksize' " + std::to_string(b) +
                           " squared passes the dim limit " + std::to_string(maxDim));
  const std::string mode = node.attrString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return invalidArgument("unknown mode '" + mode + "'");
  const bool dcr = mode == "DCR";
  BlockRearrange r;
  if (toSpace) {
    if (s[1] % (b * b) != 0) return invalidArgument("channels are not a multiple of blocksize^2");
    const int64_t c = s[1] / (b * b);
    r.outShape = {s[0], c, s[2] * b, s[3] * b};
    r.split = dcr ? Shape{s[0], b, b, c, s[2], s[3]} : Shape{s[0], c, b, b, s[2], s[3]};
    r.perm = dcr ? std::vector<int>{0, 3, 4, 1, 5, 2} : std::vector<int>{0, 1, 4, 2, 5, 3};
    return r;
  }
  if (s[2] % b != 0 || s[3] % b != 0)
    return invalidArgument("height and width must be multiples of blocksize");
  if (s[1] > maxDim / (b * b))  // s[1] * b * b below must fit int64
    return invalidArgument("channels times blocksize^2 pass the dim limit");
  // `mode` arrived in opset 28; before it the layout was always DCR (depth is the slowest
  // of block-row, block-column, channel), CRD keeps channel slowest.
  r.split = {s[0], s[1], s[2] / b, b, s[3] / b, b};
  r.outShape = {s[0], s[1] * b * b, s[2] / b, s[3] / b};
  r.perm = dcr ? std::vector<int>{0, 3, 5, 1, 2, 4} : std::vector<int>{0, 1, 3, 5, 2, 4};
  return r;
}

}  // namespace kiln::ops
