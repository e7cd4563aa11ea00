#include "backends/cpu/ops/spatial.h"

#include <algorithm>
#include <string>

#include "kiln/tensor_size.h"

namespace kiln::cpu {
namespace {

// Reads an ints attribute of exactly `count` entries (or `fallback` repeated when
// absent), each at least `minValue`.
Status readAxisList(const KernelContext& ctx, const char* name, size_t count, int64_t fallback,
                    int64_t minValue, std::vector<int64_t>* out) {
  if (!ctx.node().hasAttr(name)) {
    out->assign(count, fallback);
    return Status::ok();
  }
  *out = ctx.node().attrInts(name);
  if (out->size() != count) {
    return ctx.error(std::string("attribute '") + name + "' has " + std::to_string(out->size()) +
                     " entries, expected " + std::to_string(count));
  }
  // Held to the dim limit as well, so the geometry's sums and products stay in int64
  // (a stride of INT64_MAX overflowed `in + stride - 1`: UBSan, found by fuzz_onnx_import).
  const int64_t maxValue = tensorLimits().maxDim;
  for (int64_t v : *out) {
    if (v < minValue || v > maxValue) {
      return ctx.error(std::string("attribute '") + name + "' has invalid value " +
                       std::to_string(v));
    }
  }
  return Status::ok();
}

}  // namespace

int64_t SpatialGeometry::product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

Status readAutoPad(const KernelContext& ctx, AutoPad* out) {
  const std::string value = ctx.node().attrString("auto_pad", "NOTSET");
  if (value == "NOTSET" || value.empty()) {
    *out = AutoPad::kNotSet;
  } else if (value == "SAME_UPPER") {
    *out = AutoPad::kSameUpper;
  } else if (value == "SAME_LOWER") {
    *out = AutoPad::kSameLower;
  } else if (value == "VALID") {
    *out = AutoPad::kValid;
  } else {
    return ctx.error("attribute 'auto_pad' has unknown value '" + value + "'");
  }
  return Status::ok();
}

Status readSpatialAttributes(const KernelContext& ctx, const Shape& inputShape,
                             const std::vector<int64_t>& kernelFallback,
                             SpatialGeometry* geometry) {
  if (inputShape.size() < 3) {
    return ctx.error("input X must have rank >= 3 (N, C, spatial...), got shape " +
                     shapeToString(inputShape));
  }
  const size_t rank = inputShape.size() - 2;
  geometry->input.assign(inputShape.begin() + 2, inputShape.end());
  if (ctx.node().hasAttr("kernel_shape")) {
    KILN_RETURN_IF_ERROR(readAxisList(ctx, "kernel_shape", rank, 1, 1, &geometry->kernel));
  } else if (kernelFallback.size() == rank) {
    geometry->kernel = kernelFallback;
  } else {
    return ctx.error("attribute 'kernel_shape' is missing or does not match the input rank");
  }
  for (int64_t k : geometry->kernel) {
    if (k < 1) return ctx.error("kernel dims must be positive");
  }
  KILN_RETURN_IF_ERROR(readAxisList(ctx, "strides", rank, 1, 1, &geometry->strides));
  KILN_RETURN_IF_ERROR(readAxisList(ctx, "dilations", rank, 1, 1, &geometry->dilations));
  for (size_t d = 0; d < rank; ++d)  // the dilated window, (k - 1) * dilation + 1, fits too
    if (geometry->kernel[d] - 1 > tensorLimits().maxDim / geometry->dilations[d])
      return ctx.error("kernel " + std::to_string(geometry->kernel[d]) + " dilated by " +
                       std::to_string(geometry->dilations[d]) + " spans past the dim limit");
  std::vector<int64_t> pads;
  KILN_RETURN_IF_ERROR(readAxisList(ctx, "pads", rank * 2, 0, 0, &pads));
  geometry->padsBegin.assign(pads.begin(), pads.begin() + rank);
  geometry->padsEnd.assign(pads.begin() + rank, pads.end());
  return Status::ok();
}

Status computeForwardGeometry(const KernelContext& ctx, bool ceilMode, SpatialGeometry* g) {
  AutoPad autoPad;
  KILN_RETURN_IF_ERROR(readAutoPad(ctx, &autoPad));
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
    if (span < 0) {
      return ctx.error("kernel window " + std::to_string(window) + " is larger than padded input " +
                       std::to_string(in + g->padsBegin[d] + g->padsEnd[d]) + " on spatial axis " +
                       std::to_string(d));
    }
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

Shape spatialOutputShape(int64_t batch, int64_t channels, const SpatialGeometry& geometry) {
  Shape shape = {batch, channels};
  shape.insert(shape.end(), geometry.output.begin(), geometry.output.end());
  return shape;
}

}  // namespace kiln::cpu
