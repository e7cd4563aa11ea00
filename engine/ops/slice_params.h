// Slice's parameters both backends run, parsed and clamped once (issue 23's op table).
// Each backend reads starts / ends / axes / steps its own way (attributes before opset
// 10, input tensors after); these complete and check the lists and turn them into one
// (first, count, step) per input axis with numpy's clamping. Host-only, no backend
// header; errors are messages without the node's name (the kernels add it).
#pragma once

#include <vector>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;
};

// Axes 0..n-1 when the node gives none (`axesGiven` false), steps of 1 when it gives
// none; then every list as long as starts. Errors: "starts and ends differ in length",
// "starts, ends, axes and steps differ in length".
Status completeSliceArgs(bool axesGiven, bool stepsGiven, SliceArgs* args);

// What one input axis contributes: the first index, the element count and the step
// (an axis no entry names: 0, its dim, 1).
struct SliceAxis {
  int64_t first = 0, count = 0, step = 1;
};

// One SliceAxis per axis of `in`: axes normalized ([-rank, rank)) and distinct, steps
// non-zero and held to [-max(dim, 1), max(dim, 1)] (a longer step takes one element
// as the dim's step does, and keeps stride * step and the count's arithmetic in int64),
// starts and ends clamped as numpy does. Errors: "axis 4 is out of range for rank 2",
// "axis 1 is repeated", "steps must not be 0".
Result<std::vector<SliceAxis>> planSlice(const Shape& in, const SliceArgs& args);

}  // namespace kiln::ops
