// Normalization parameters both backends run, parsed once (issue 23's op table):
// MeanVarianceNormalization's reduced axes, GroupNormalization's groups and parameter
// layout, and the unidirectional broadcast of a
// LayerNormalization-style Scale / B onto the normalized shape. Host-only, no backend
// header; errors are messages without the node's name (the kernels add it).
#pragma once

#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

struct MvnParams {
  std::vector<bool> reduced;  // per input axis: statistics are taken over it
  bool normalizeVariance = true;
};

// MeanVarianceNormalization at `opset` over an input of `rank`: opset 9+ `axes` (default
// [0, 2, 3]); opset 1 per (n, c), or per n with across_channels, and normalize_variance.
// Error: "axis 5 in 'axes' is out of range for rank 4".
Result<MvnParams> mvnParams(const Node& node, int opset, int rank);

// LayerNormalization's view of X: the normalized shape X.shape[axis:] (`cols` elements a
// row), the statistics' shape (X.shape[:axis] then 1s) and the row count. Error:
// "attribute 'axis' 3 is out of range for rank 3".
struct LayerNormGeometry {
  int64_t axis = 0;
  Shape normShape, statShape;
  int64_t rows = 0, cols = 0;
};
Result<LayerNormGeometry> layerNormGeometry(const Node& node, const Shape& x);

// The shape of parameter `name` (of shape `shape`) as it broadcasts unidirectionally onto
// `target`: leading 1s beyond target's rank dropped, then each dim equal to target's or 1.
// Error: "input 'Scale' of shape 3x5 does not broadcast to the normalized shape 4x5"
// (`targetName` names `target`: "normalized shape").
Result<Shape> paramBroadcastShape(const char* name, const Shape& shape, const Shape& target,
                                  const std::string& targetName);

// GroupNormalization over `channels` with `scaleCount` / `biasCount` parameter values:
// num_groups (positive, dividing the channels) and whether the parameters hold one value
// per group (opset 18's layout, taken before opset 21 when their size is the group count and
// not the channel count) or one per channel. Errors: "attribute 'num_groups' (3) must be
// positive and divide the channel count 8", "inputs 'scale' and 'bias' differ in size",
// "input 'scale' has 5 elements, expected 8".
struct GroupNormParams {
  int64_t groups = 0;
  bool perGroupParams = false;
};
Result<GroupNormParams> groupNormParams(const Node& node, int opset, int64_t channels,
                                        int64_t scaleCount, int64_t biasCount);

}  // namespace kiln::ops
