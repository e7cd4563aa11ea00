// The spatial geometry of Conv, ConvTranspose and the pooling ops, read and checked once
// for both backends (issue 23's op table): kernel window, strides, dilations, pads,
// auto_pad and the output extent of each spatial axis. Host-only, no backend header;
// errors are messages without the node's name (the kernels add it).
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

// One entry per spatial axis (the axes after N and C).
struct SpatialGeometry {
  std::vector<int64_t> input, kernel, strides, dilations, padsBegin, padsEnd, output;

  int rank() const { return static_cast<int>(input.size()); }
  int64_t inputSize() const { return product(input); }
  int64_t kernelSize() const { return product(kernel); }
  int64_t outputSize() const { return product(output); }
  // Extent of the dilated window on axis d: (k - 1) * dilation + 1.
  int64_t window(int d) const { return (kernel[d] - 1) * dilations[d] + 1; }
  static int64_t product(const std::vector<int64_t>& v);
};

// The auto_pad attribute (NOTSET when absent). Error: "attribute 'auto_pad' has unknown
// value 'X'".
Result<AutoPad> autoPadOf(const Node& node);

// Fills input, kernel, strides, dilations and explicit pads from the node's attributes:
// `kernel` is kernel_shape, or `kernelFallback` (Conv's weight dims) when absent. Every
// list has its length, kernel/strides/dilations are >= 1 and pads >= 0, each held to the
// dim limit (so the geometry's sums and products stay in int64: a stride of INT64_MAX
// once overflowed `in + stride - 1`), and the dilated window fits it too.
Status readSpatialAttributes(const Node& node, const Shape& inputShape,
                             const std::vector<int64_t>& kernelFallback, SpatialGeometry* geometry);

// Conv and pooling: auto_pad resolved into pads and the output extent,
// floor((in + pads - window) / stride) + 1, or the ceiling when `ceilMode` (a window must
// still start inside the input or its leading pad). Error: the window larger than the
// padded input.
Status computeForwardGeometry(const Node& node, bool ceilMode, SpatialGeometry* geometry);

// MaxUnpool's inferred output [N, C, (in - 1) * stride + kernel - pads ...], in checked
// arithmetic. Error: "MaxUnpool output extent of axis 2 overflows (...)".
Result<Shape> unpoolShape(int64_t batch, int64_t channels, const SpatialGeometry& g);

}  // namespace kiln::ops
