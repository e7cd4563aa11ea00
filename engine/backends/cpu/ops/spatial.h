// Spatial geometry shared by Conv, ConvTranspose and the pooling kernels: the
// kernel window, strides, dilations, pads and output extent of each spatial axis.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/cpu/ops/op_utils.h"
#include "ops/spatial_params.h"

namespace kiln::cpu {

// The geometry and its parsing are shared with the CUDA kernels (ops/spatial_params.h);
// these wrappers add the node to an error.
using ops::AutoPad;
using ops::SpatialGeometry;

// Reads the auto_pad attribute (NOTSET when absent); error on an unknown value.
Status readAutoPad(const KernelContext& ctx, AutoPad* out);

// Fills input, kernel, strides, dilations and explicit pads from the node's
// attributes. `kernel` is the kernel_shape attribute, or `kernelFallback` (Conv's
// weight dims) when the attribute is absent. Checks every list's length and sign.
Status readSpatialAttributes(const KernelContext& ctx, const Shape& inputShape,
                             const std::vector<int64_t>& kernelFallback, SpatialGeometry* geometry);

// Conv and pooling: resolves auto_pad into pads and computes the output extent,
// floor((in + pads - window) / stride) + 1, or the ceiling when `ceilMode` (a
// window must still start inside the input or its leading pad).
Status computeForwardGeometry(const KernelContext& ctx, bool ceilMode, SpatialGeometry* geometry);

// Positions [lo, hi) of i in [0, count) whose i * stride + offset lies in
// [0, limit): the part of a row of windows that reads (or writes) inside a plane.
inline void validRange(int64_t offset, int64_t stride, int64_t limit, int64_t count, int64_t* lo,
                       int64_t* hi) {
  *lo = offset >= 0 ? 0 : std::min(count, (-offset + stride - 1) / stride);
  *hi = offset >= limit ? 0 : std::min(count, (limit - 1 - offset) / stride + 1);
  *hi = std::max(*hi, *lo);
}

// Output shape [N, channels, geometry.output...].
Shape spatialOutputShape(int64_t batch, int64_t channels, const SpatialGeometry& geometry);

}  // namespace kiln::cpu
