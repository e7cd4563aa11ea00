// Resize's shared parameters (contract: resize_params.h).
#include "ops/resize_params.h"

#include <algorithm>
#include <cmath>

#include "kiln/tensor_size.h"
#include "ops/output_size.h"

namespace kiln::ops {
namespace {

// The resized axes: the `axes` attribute (Resize-18+) or every axis, in [0, rank), once each.
Status resizedAxes(const Node& node, size_t rank, std::vector<int64_t>* axes) {
  *axes = node.opType == "Resize" ? node.attrInts("axes") : std::vector<int64_t>{};
  if (axes->empty())
    for (size_t d = 0; d < rank; ++d) axes->push_back(static_cast<int64_t>(d));
  const int64_t r = static_cast<int64_t>(rank);
  std::vector<bool> seen(rank, false);
  for (int64_t& axis : *axes) {
    if (axis < -r || axis >= r)
      return invalidArgument("axis " + std::to_string(axis) + " is out of range for rank " +
                             std::to_string(rank));
    if (axis < 0) axis += r;
    if (seen[axis]) return invalidArgument("axes repeats axis " + std::to_string(axis));
    seen[axis] = true;
  }
  return Status::ok();
}

// keep_aspect_ratio_policy over sizes already resolved into p's scales and outShape.
Status keepAspectRatio(const Node& node, const Shape& in, const std::vector<int64_t>& axes,
                       ResizeParams* p) {
  const std::string policy = node.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch") return Status::ok();
  if (policy != "not_larger" && policy != "not_smaller")
    return invalidArgument("unknown keep_aspect_ratio_policy '" + policy + "'");
  double scale = p->scales[axes[0]];
  for (int64_t axis : axes)
    scale = policy == "not_larger" ? std::min(scale, p->scales[axis])
                                   : std::max(scale, p->scales[axis]);
  p->fromSizes = false;  // the kept ratio's scale, not out/in, drives the coordinates
  for (int64_t axis : axes) {
    // Checked before the cast: one axis's large scale times another's long dim passed int64.
    const double length = std::floor(scale * in[axis] + 0.5);
    if (!(length <= static_cast<double>(tensorLimits().maxDim)))
      return invalidArgument("keep_aspect_ratio_policy '" + policy + "' makes axis " +
                             std::to_string(axis) + " too long");
    p->scales[axis] = scale;
    p->outShape[axis] = static_cast<int64_t>(length);
  }
  return checkOutputElements(p->outShape, "output");
}

// Output shape and per-axis scales from scales or sizes given for `axes`.
Status resolveScales(const Node& node, const Shape& in, const ResizeInputs& inputs,
                     const std::vector<int64_t>& axes, ResizeParams* p) {
  const std::vector<double>& scales = inputs.scales;
  const std::vector<int64_t>& sizes = inputs.sizes;
  if (scales.empty() == sizes.empty())
    return invalidArgument("needs exactly one of scales and sizes");
  const size_t given = scales.empty() ? sizes.size() : scales.size();
  if (given != axes.size())
    return invalidArgument((scales.empty() ? "sizes" : "scales") + std::string(" has ") +
                           std::to_string(given) + " entries for " + std::to_string(axes.size()) +
                           " axes");
  p->scales.assign(in.size(), 1.0);
  p->outShape = in;
  p->fromSizes = !sizes.empty();
  if (!p->fromSizes) {
    for (size_t i = 0; i < axes.size(); ++i) {
      const double length = std::floor(scales[i] * in[axes[i]]);
      if (!(scales[i] > 0) || !(length < static_cast<double>(kMaxOutputElements)))
        return invalidArgument("scales[" + std::to_string(i) + "] = " + std::to_string(scales[i]) +
                               " is not a usable positive scale");
      p->scales[axes[i]] = scales[i];
      p->outShape[axes[i]] = static_cast<int64_t>(length);
    }
    return checkOutputElements(p->outShape, "output");
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    if (sizes[i] < 0) return invalidArgument("sizes must not be negative");
    if (in[axes[i]] == 0) return invalidArgument("cannot resize an empty axis");
    p->scales[axes[i]] = static_cast<double>(sizes[i]) / in[axes[i]];
    p->outShape[axes[i]] = sizes[i];
  }
  KILN_RETURN_IF_ERROR(checkOutputElements(p->outShape, "output"));
  return keepAspectRatio(node, in, axes, p);
}

}  // namespace

ResizeParams resizeAttributes(const Node& node, int opset) {
  ResizeParams p;
  p.mode = node.attrString("mode", "nearest");
  if (node.opType == "Upsample" || opset < 11) {  // Resize-10 and Upsample: asymmetric
    if (p.mode == "bilinear") p.mode = "linear";
    p.coordMode = "asymmetric";
    p.nearestMode = "simple";
    return p;
  }
  p.coordMode = node.attrString("coordinate_transformation_mode", "half_pixel");
  p.nearestMode = node.attrString("nearest_mode", "round_prefer_floor");
  p.cubicA = node.attrFloat("cubic_coeff_a", -0.75f);
  p.excludeOutside = node.attrInt("exclude_outside", 0) != 0;
  p.extrapolation = node.attrFloat("extrapolation_value", 0.f);
  p.antialias = node.attrInt("antialias", 0) != 0;
  return p;
}

Status resolveResize(const Node& node, const Shape& in, const ResizeInputs& inputs,
                     ResizeParams* p) {
  std::vector<int64_t> axes;
  KILN_RETURN_IF_ERROR(resizedAxes(node, in.size(), &axes));
  KILN_RETURN_IF_ERROR(resolveScales(node, in, inputs, axes, p));
  // roi is given for `axes` and only read by tf_crop_and_resize; others see [0..., 1...].
  const size_t rank = in.size();
  p->roi.assign(rank, 0.0);
  p->roi.resize(2 * rank, 1.0);
  if (p->coordMode != "tf_crop_and_resize") return Status::ok();
  if (inputs.roi.size() != 2 * axes.size())
    return invalidArgument("roi needs 2 entries per resized axis");
  for (size_t i = 0; i < axes.size(); ++i) {
    p->roi[axes[i]] = inputs.roi[i];
    p->roi[axes[i] + rank] = inputs.roi[i + axes.size()];
  }
  return Status::ok();
}

}  // namespace kiln::ops
