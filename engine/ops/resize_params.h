// Resize (opsets 10+) and Upsample (7-10): the parameters both backends run, parsed and
// validated once (issue 23's op table, its first row). The CPU kernel and the host half
// of the CUDA kernel read the node's scales / sizes / roi inputs their own way (the
// CUDA one copies roi to the host only for tf_crop_and_resize), then call these; the
// kernels compute from the result alone. Host-only, no backend header.
#pragma once

#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

struct ResizeParams {
  std::string mode = "nearest";          // nearest, linear, cubic
  std::string coordMode = "half_pixel";  // coordinate_transformation_mode
  std::string nearestMode = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
  bool antialias = false;
  double extrapolation = 0.0;
  std::vector<double> scales;  // per input axis
  Shape outShape;
  std::vector<double> roi;  // [starts..., ends...] per input axis
  bool fromSizes = false;   // the coordinates use out / in (sizes given, stretched)
};

// The attributes of a Resize at `opset` (Resize-10: asymmetric coordinates, "simple"
// nearest rounding) or an Upsample ("bilinear" is "linear"; asymmetric, simple).
ResizeParams resizeAttributes(const Node& node, int opset);

// The host copies of a node's inputs: roi and scales as doubles (empty when absent),
// sizes as integers (empty when absent).
struct ResizeInputs {
  std::vector<double> roi, scales;
  std::vector<int64_t> sizes;
};

// Fills p's scales, outShape, fromSizes and roi for an input of shape `in`: axes from the
// node's `axes` attribute (Resize) or every axis (Upsample), normalized and distinct;
// exactly one of scales and sizes, one entry per axis; keep_aspect_ratio_policy
// (stretch, not_larger, not_smaller); roi (2 entries per axis) read only for
// tf_crop_and_resize. Errors are messages without the node's name (the kernels add it):
// "needs exactly one of scales and sizes", "scales[0] = -1 is not a usable positive
// scale", "output 1x3x99999999999x2 is too large", ...
Status resolveResize(const Node& node, const Shape& in, const ResizeInputs& inputs,
                     ResizeParams* p);

}  // namespace kiln::ops
