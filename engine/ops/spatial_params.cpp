// Spatial geometry shared by the backends (contract: spatial_params.h).
#include "ops/spatial_params.h"

#include <algorithm>
#include <string>

#include "kiln/tensor_size.h"

namespace kiln::ops {
namespace {

// An ints attribute of exactly `count` entries (or `fallback` repeated when absent), each
// in [minValue, the dim limit].
Status readAxisList(const Node& node, const char* name, size_t count, int64_t fallback,
                    int64_t minValue, std::vector<int64_t>* out) {
  if (!node.hasAttr(name)) {
    out->assign(count, fallback);
    return Status::ok();
  }
  *out = node.attrInts(name);
  if (out->size() != count)
    return invalidArgument(std::string("attribute '") + name + "' has " +
                           std::to_string(out->size()) + " entries, expected " +
                           std::to_string(count));
  const int64_t maxValue = tensorLimits().maxDim;
  for (int64_t v : *out)
    if (v < minValue || v > maxValue)
      return invalidArgument(std::string("attribute '") + name + "' has invalid value " +
                             std::to_string(v));
  return Status::ok();
}

}  // namespace

int64_t SpatialGeometry::product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

Result<AutoPad> autoPadOf(const Node& node) {
  const std::string value = node.attrString("auto_pad", "NOTSET");
  if (value == "NOTSET" || value.empty()) return AutoPad::kNotSet;
  if (value == "SAME_UPPER") return AutoPad::kSameUpper;
  if (value == "SAME_LOWER") return AutoPad::kSameLower;
  if (value == "VALID") return AutoPad::kValid;
  return invalidArgument("attribute 'auto_pad' has unknown value '" + value + "'");
}

Status readSpatialAttributes(const Node& node, const Shape& inputShape,
                             const std::vector<int64_t>& kernelFallback, SpatialGeometry* g) {
  if (inputShape.size() < 3)
    return invalidArgument("input X must have rank >= 3 (N, C, spatial...), got shape " +
                           shapeToString(inputShape));
  const size_t rank = inputShape.size() - 2;
  g->input.assign(inputShape.begin() + 2, inputShape.end());
  if (node.hasAttr("kernel_shape")) {
    KILN_RETURN_IF_ERROR(readAxisList(node, "kernel_shape", rank, 1, 1, &g->kernel));
  } else if (kernelFallback.size() == rank) {
    g->kernel = kernelFallback;
  } else {
    return invalidArgument("attribute 'kernel_shape' is missing or does not match the input rank");
  }
  for (int64_t k : g->kernel)
    if (k < 1) return invalidArgument("kernel dims must be positive");
  KILN_RETURN_IF_ERROR(readAxisList(node, "strides", rank, 1, 1, &g->strides));
  KILN_RETURN_IF_ERROR(readAxisList(node, "dilations", rank, 1, 1, &g->dilations));
  for (size_t d = 0; d < rank; ++d)  // the dilated window, (k - 1) * dilation + 1, fits too
    if (g->kernel[d] - 1 > tensorLimits().maxDim / g->dilations[d])
      return invalidArgument("kernel " + std::to_string(g->kernel[d]) + " dilated by " +
                             std::to_string(g->dilations[d]) + " spans past the dim limit");
  std::vector<int64_t> pads;
  KILN_RETURN_IF_ERROR(readAxisList(node, "pads", rank * 2, 0, 0, &pads));
  g->padsBegin.assign(pads.begin(), pads.begin() + rank);
  g->padsEnd.assign(pads.begin() + rank, pads.end());
  return Status::ok();
}

Status computeForwardGeometry(const Node& node, bool ceilMode, SpatialGeometry* g) {
  KILN_ASSIGN_OR_RETURN(const AutoPad autoPad, autoPadOf(node));
  const int rank = g->rank();
  g->output.assign(rank, 0);
  for (int d = 0; d < rank; ++d) {
    const int64_t in = g->input[d];
    const int64_t stride = g->strides[d];
    const int64_t window = g->window(d);
    if (autoPad == AutoPad::kSameUpper || autoPad == AutoPad::kSameLower) {
      const int64_t out = (in + stride - 1) / stride;
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride + window - in);
      // SAME_UPPER puts the odd extra pad at the end, SAME_LOWER at the beginning.
      const int64_t small = total / 2;
      g->padsBegin[d] = autoPad == AutoPad::kSameUpper ? small : total - small;
      g->padsEnd[d] = total - g->padsBegin[d];
      g->output[d] = out;
      continue;
    }
    if (autoPad == AutoPad::kValid) g->padsBegin[d] = g->padsEnd[d] = 0;
    const int64_t span = in + g->padsBegin[d] + g->padsEnd[d] - window;
    if (span < 0)
      return invalidArgument("kernel window " + std::to_string(window) +
                             " is larger than padded input " +
                             std::to_string(in + g->padsBegin[d] + g->padsEnd[d]) +
                             " on spatial axis " + std::to_string(d));
    int64_t out = span / stride + 1;
    if (ceilMode) {
      out = (span + stride - 1) / stride + 1;
      // The last window must start inside the input or its leading pad.
      if ((out - 1) * stride >= in + g->padsBegin[d]) --out;
    }
    g->output[d] = out;
  }
  return Status::ok();
}

Result<Shape> unpoolShape(int64_t batch, int64_t channels, const SpatialGeometry& g) {
  Shape inferred = {batch, channels};
  for (int d = 0; d < g.rank(); ++d) {
    // (in - 1) * stride + kernel - pads, in checked arithmetic: the attributes are the
    // model's (fuzz_onnx_import: kernel_shape INT64_MAX overflowed here).
    int64_t extent = 0;
    if (__builtin_mul_overflow(g.input[d] - 1, g.strides[d], &extent) ||
        __builtin_add_overflow(extent, g.kernel[d], &extent) ||
        __builtin_sub_overflow(extent, g.padsBegin[d], &extent) ||
        __builtin_sub_overflow(extent, g.padsEnd[d], &extent))
      return invalidArgument("MaxUnpool output extent of axis " + std::to_string(d + 2) +
                             " overflows (kernel_shape, strides or pads too large)");
    inferred.push_back(extent);
  }
  return inferred;
}

}  // namespace kiln::ops
