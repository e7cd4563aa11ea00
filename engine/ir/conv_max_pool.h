// ai.kiln FusedConvMaxPool: a network's stem (a convolution of few input channels,
// its bias and activation, the MaxPool after it and, in an INT8 build, the
// QuantizeLinear after that) as one layer, made by the fuse_conv_max_pool pass.
//
//   Y = quant(MaxPool(act(Conv(X, W) + B)))
//
// Inputs:
//   0 X            float, [N, C, H, W] (channels-first, also in a channels-last engine)
//   1 W            float filter [M, C, R, S] (group 1)
//   2 B            optional float bias [M]
//   3 y_scale      optional float32 scalar: present, Y is quantized (round half to even,
//                  saturate) to y_zero_point's type, int8 when absent; absent, Y is X's type
//   4 y_zero_point optional int8 / uint8 scalar
// Attributes: Conv's (kernel_shape, strides, pads, dilations, group; auto_pad NOTSET),
// FusedConv's activation (activation, activation_alpha, activation_beta), and the
// MaxPool's with a "pool_" prefix (pool_kernel_shape, pool_strides, pool_pads,
// pool_dilations, pool_ceil_mode).
// Layout: with kiln_channels_last = 1 (ir/channels_last.h) only Y is stored NHWC
// ([N, P, Q, M]); X and W keep their channels-first layouts. The conv's result is
// rounded to X's type before the pool (as a FusedConv's output would be), so the layer
// computes what FusedConv -> MaxPool -> QuantizeLinear computes for finite values.
// NaN: the CUDA kernel's pool skips a NaN tap (MaxPool keeps one in the window's first
// tap) and quantizes a NaN to the zero point; its padding taps multiply zero weights,
// so an infinite input there gives NaN where the unfused conv does not.
#pragma once

#include "kiln/graph.h"

namespace kiln {

constexpr const char* kFusedConvMaxPoolOp = "FusedConvMaxPool";

enum ConvMaxPoolSlot : size_t {
  kConvPoolX = 0,
  kConvPoolW = 1,
  kConvPoolBias = 2,
  kConvPoolYScale = 3,
  kConvPoolYZeroPoint = 4,
  kConvPoolSlots = 5,
};

// True for an ai.kiln FusedConvMaxPool node.
inline bool isFusedConvMaxPool(const Node& node) {
  return node.domain == "ai.kiln" && node.opType == kFusedConvMaxPoolOp;
}

// The prefix of the MaxPool's attributes on the fused node ("pool_kernel_shape").
constexpr const char* kPoolAttributePrefix = "pool_";

// The node's two halves, for the rules and kernels of the ops they stand for (shape
// inference, the CPU reference). Each keeps the node's name, op type and index, so an
// error still names the fused layer.
// The convolution: the attributes without the "pool_" ones (Conv's and the activation),
// inputs X, W, [B]; what the FusedConv kernel and Conv's shape rule read.
Node convPartOf(const Node& node);
// The MaxPool: only the "pool_" attributes, without the prefix (kernel_shape, strides,
// pads, dilations, ceil_mode), no inputs; what the MaxPool kernel and shape rule read.
Node poolPartOf(const Node& node);

}  // namespace kiln
