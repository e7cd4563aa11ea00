// Pad's parameters both backends run, checked once (issue 23's op table): the mode, and
// the begin / end pad of every input axis from `pads` given for `axes`, with the output
// shape. Each backend reads pads and axes its own way (attribute before opset 11, inputs
// after). Host-only, no backend header; errors are messages without the node's name.
#pragma once

#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

struct PadPlan {
  std::string mode;             // constant, reflect, edge, wrap (opset 19+)
  std::vector<int64_t> begins;  // per input axis; negative crops
  std::vector<int64_t> ends;    // per input axis; negative crops
  Shape outShape;
};

// `pads` ([begins..., ends...]) for `axes` of an input of shape `in`; every axis in order
// when the node gives no axes (`axesGiven` false: no opset-18 axes input). Errors: "pads has 3
// entries for 2 axes", "unsupported mode 'x'", an axis out of range, "pads are too large" (past
// 2^32 either way), "output 1x... is too large".
Result<PadPlan> planPad(const Node& node, int opset, const Shape& in,
                        const std::vector<int64_t>& pads, std::vector<int64_t> axes,
                        bool axesGiven);

}  // namespace kiln::ops
