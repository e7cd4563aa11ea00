// Channels-last (NHWC) layers: nodes the channels_last_layout pass rewrote carry the
// attribute kiln_channels_last = 1. Such a node keeps its ONNX (or ai.kiln) meaning
// with its 4-D activations stored [N, H, W, C] instead of [N, C, H, W], and a
// FusedConv's or QuantizedConv's filter stored [K, R, S, C/group] instead of
// [K, C/group, R, S] (and their residual Z NHWC like X and Y); every
// other input (bias, scalars) is unchanged. A FusedConvMaxPool (ir/conv_max_pool.h)
// stores only its Y NHWC: its X and W keep their channels-first layouts. The CPU
// reference and shape inference run such a node by permuting to channels-first,
// applying the ordinary kernel or rule, and permuting the outputs back; the CUDA
// kernels read the layout natively.
#pragma once

#include <vector>

#include "kiln/graph.h"
#include "kiln/tensor.h"

namespace kiln {

constexpr const char* kChannelsLastAttribute = "kiln_channels_last";

// True when `node` carries kiln_channels_last = 1.
bool isChannelsLast(const Node& node);

// Which inputs and outputs of a channels-last node are stored NHWC, and which input
// is a filter stored KRSC (-1 when none). activationInputs may be empty (a
// FusedConvMaxPool reads its X channels-first).
struct ChannelsLastRoles {
  std::vector<size_t> activationInputs;
  std::vector<size_t> activationOutputs;
  int filterInput = -1;
};
ChannelsLastRoles channelsLastRoles(const Node& node);

// Permutations of a 4-D shape: [N, C, H, W] -> [N, H, W, C] and back.
Shape toChannelsLastShape(const Shape& nchw);
Shape toChannelsFirstShape(const Shape& nhwc);

// A copy of the 4-D tensor `t` with its axes permuted by `perm` (ONNX Transpose
// semantics: output axis i is input axis perm[i]). Any element type but strings.
Tensor permute4d(const Tensor& t, const int (&perm)[4]);

constexpr int kToChannelsLast[4] = {0, 2, 3, 1};   // NCHW -> NHWC, KCRS -> KRSC
constexpr int kToChannelsFirst[4] = {0, 3, 1, 2};  // NHWC -> NCHW, KRSC -> KCRS

}  // namespace kiln
