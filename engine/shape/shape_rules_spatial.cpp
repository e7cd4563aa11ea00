// Shape rules of the spatial ops: convolution and its transpose, pooling, resize,
// pad, depth/space rearrangement, Col2Im.
#include <algorithm>
#include <cmath>

#include "ops/resize_params.h"
#include "shape/rule_helpers.h"

namespace kiln::shape {
namespace {

// Spatial output size of conv/pool: floor or ceil((in + pads - dil*(k-1) - 1) / stride) + 1.
bool windowRule(const Node& node, const Ins& in, Outs* outs, bool isConv) {
  if (!known(in, 0)) return false;
  const SymbolicShape& x = shapeOf(in, 0);
  if (x.size() < 3) return false;
  const size_t spatial = x.size() - 2;
  std::vector<int64_t> kernel = node.attrInts("kernel_shape");
  DimExpr channels = x[1];
  if (isConv) {
    if (!known(in, 1) || shapeOf(in, 1).size() != x.size()) return false;
    channels = shapeOf(in, 1)[0];
    if (kernel.empty()) {
      for (size_t d = 2; d < shapeOf(in, 1).size(); ++d) {
        if (!shapeOf(in, 1)[d].isConst()) return false;
        kernel.push_back(shapeOf(in, 1)[d].constValue());
      }
    }
  }
  if (kernel.size() != spatial) return false;
  auto strides = node.attrInts("strides", std::vector<int64_t>(spatial, 1));
  auto dilations = node.attrInts("dilations", std::vector<int64_t>(spatial, 1));
  auto pads = node.attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
  const std::string autoPad = node.attrString("auto_pad", "NOTSET");
  const bool ceilMode = node.attrInt("ceil_mode", 0) != 0;
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial)
    return false;
  SymbolicShape out{x[0], channels};
  for (size_t d = 0; d < spatial; ++d) {
    const DimExpr in_ = x[2 + d];
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      out.push_back(DimExpr::ceilDiv(in_, strides[d]));
    } else {
      // Attribute values come from the model: DimExpr arithmetic saturates where
      // int64 arithmetic would overflow (and the sizes' caps then refuse the result).
      const DimExpr padTotal =
          autoPad == "VALID" ? DimExpr(0) : DimExpr(pads[d]) + DimExpr(pads[d + spatial]);
      DimExpr span = in_ + (padTotal - DimExpr(dilations[d]) * (DimExpr(kernel[d]) - 1) - 1);
      DimExpr size =
          (ceilMode ? DimExpr::ceilDiv(span, strides[d]) : DimExpr::floorDiv(span, strides[d])) + 1;
      // With ceil_mode a last window that would start inside the end padding is dropped.
      if (ceilMode && size.isConst() && in_.isConst() && autoPad != "VALID" &&
          ((size - 1) * DimExpr(strides[d])).constValue() >=
              (in_ + DimExpr(pads[d])).constValue()) {
        size = size.constValue() - 1;
      }
      out.push_back(size);
    }
  }
  setOut(outs, 0, typeOf(in, 0), out);
  if (outs->size() > 1) setOut(outs, 1, DataType::kInt64, out);
  return true;
}

bool convRule(const Node& n, const Ins& in, Outs* outs) {
  return windowRule(n, in, outs, true);
}

bool poolRule(const Node& n, const Ins& in, Outs* outs) {
  return windowRule(n, in, outs, false);
}

bool globalPoolRule(const Node&, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  SymbolicShape s = shapeOf(in, 0);
  for (size_t d = 2; d < s.size(); ++d) s[d] = 1;
  setOut(outs, 0, typeOf(in, 0), s);
  return true;
}

// A static X with constant scales or sizes: the kernels' own geometry (ops/resize_params.h,
// keep_aspect_ratio_policy and axes included); false when some of it is not a number.
bool staticResize(const Node& node, const Ins& in, size_t scalesAt, size_t sizesAt, Outs* outs) {
  Shape x;
  for (const DimExpr& d : shapeOf(in, 0)) {
    if (!d.isConst()) return false;
    x.push_back(d.constValue());
  }
  ops::ResizeInputs inputs;
  if (scalesAt < in.size() && in[scalesAt].constant)
    for (int64_t k = 0; k < in[scalesAt].constant->numel(); ++k)
      inputs.scales.push_back(in[scalesAt].constant->valueAsDouble(k));
  if (sizesAt < in.size() && in[sizesAt].symbolicValue)
    for (const DimExpr& d : *in[sizesAt].symbolicValue) {
      if (!d.isConst()) return false;
      inputs.sizes.push_back(d.constValue());
    }
  if (node.opType == "Upsample" && node.opset < 9)
    for (float scale : node.attrFloats("scales")) inputs.scales.push_back(scale);
  ops::ResizeParams p = ops::resizeAttributes(node, node.opset);
  p.coordMode = "half_pixel";  // the roi matters to the values only, not to the shape
  if (!ops::resolveResize(node, x, inputs, &p).isOk()) return false;
  SymbolicShape out;
  for (int64_t d : p.outShape) out.push_back(DimExpr(d));
  setOut(outs, 0, typeOf(in, 0), out);
  return true;
}

// Resize/Upsample: the kernels' geometry for a static X; else from `sizes` when known,
// else floor(dim * scale) for known scales.
bool resizeRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  const size_t scalesAtFirst = node.opType == "Upsample" ? 1 : node.opset >= 11 ? 2 : 1;
  if (staticResize(node, in, scalesAtFirst, node.opType == "Upsample" ? 99 : 3, outs)) return true;
  const SymbolicShape& x = shapeOf(in, 0);
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes = node.attrInts("axes");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  SymbolicShape out = x;
  const size_t sizesAt = node.opType == "Upsample" ? 99 : 3;
  if (sizesAt < in.size() && in[sizesAt].symbolicValue && !in[sizesAt].symbolicValue->empty()) {
    const auto& sizes = *in[sizesAt].symbolicValue;
    if (sizes.size() != axes.size() ||
        node.attrString("keep_aspect_ratio_policy", "stretch") != "stretch")
      return false;
    for (size_t k = 0; k < axes.size(); ++k) out[normAxis(axes[k], rank)] = sizes[k];
    setOut(outs, 0, typeOf(in, 0), out);
    return true;
  }
  const size_t scalesAt = node.opType == "Upsample" ? 1 : node.opset >= 11 ? 2 : 1;
  if (scalesAt >= in.size() || !in[scalesAt].constant ||
      in[scalesAt].constant->numel() != static_cast<int64_t>(axes.size())) {
    return false;
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    const double scale = in[scalesAt].constant->valueAsDouble(static_cast<int64_t>(k));
    DimExpr& dim = out[normAxis(axes[k], rank)];
    if (scale == 1.0) continue;
    if (!dim.isConst()) {
      const double rounded = std::round(scale);
      if (rounded != scale || scale < 1) return false;  // keep integer upsampling symbolic
      dim = dim * static_cast<int64_t>(rounded);
    } else {
      dim = static_cast<int64_t>(std::floor(static_cast<double>(dim.constValue()) * scale));
    }
  }
  setOut(outs, 0, typeOf(in, 0), out);
  return true;
}

bool convTransposeRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0) || !known(in, 1)) return false;
  const SymbolicShape& x = shapeOf(in, 0);
  const SymbolicShape& w = shapeOf(in, 1);
  if (x.size() < 3 || w.size() != x.size()) return false;
  const size_t spatial = x.size() - 2;
  const int64_t group = node.attrInt("group", 1);
  SymbolicShape out{x[0], w[1] * group};
  auto strides = node.attrInts("strides", std::vector<int64_t>(spatial, 1));
  auto dilations = node.attrInts("dilations", std::vector<int64_t>(spatial, 1));
  auto pads = node.attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
  auto outputPadding = node.attrInts("output_padding", std::vector<int64_t>(spatial, 0));
  auto outputShape = node.attrInts("output_shape");
  const std::string autoPad = node.attrString("auto_pad", "NOTSET");
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial ||
      outputPadding.size() != spatial)
    return false;
  for (size_t d = 0; d < spatial; ++d) {
    if (!outputShape.empty()) {
      if (outputShape.size() != spatial) return false;
      out.push_back(outputShape[d]);
    } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      out.push_back(x[2 + d] * strides[d]);
    } else {
      // (in - 1) * stride + output_padding + (k - 1) * dilation + 1 - pads
      if (!w[2 + d].isConst()) return false;
      const int64_t k = w[2 + d].constValue();
      out.push_back((x[2 + d] - 1) * strides[d] +
                    (DimExpr(outputPadding[d]) + (DimExpr(k) - 1) * DimExpr(dilations[d]) + 1 -
                     DimExpr(pads[d]) - DimExpr(pads[d + spatial])));
    }
  }
  setOut(outs, 0, typeOf(in, 0), out);
  return true;
}

bool padRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  SymbolicShape out = shapeOf(in, 0);
  const int64_t rank = static_cast<int64_t>(out.size());
  std::optional<std::vector<int64_t>> pads =
      node.opset < 11 ? std::optional(node.attrInts("pads")) : constInts(in, 1);
  if (!pads) return false;
  std::vector<int64_t> axes;
  if (in.size() > 3 && in[3].present()) {
    auto a = constInts(in, 3);
    if (!a) return false;
    axes = *a;
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (pads->size() != 2 * axes.size()) return false;
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t axis = normAxis(axes[k], rank);
    if (axis < 0 || axis >= rank) return false;
    out[axis] = out[axis] + (DimExpr((*pads)[k]) + DimExpr((*pads)[k + axes.size()]));
  }
  setOut(outs, 0, typeOf(in, 0), out);
  return true;
}

bool depthSpaceRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0) || shapeOf(in, 0).size() != 4) return false;
  SymbolicShape s = shapeOf(in, 0);
  const int64_t b = node.attrInt("blocksize", 1);
  if (b <= 0) return false;
  const DimExpr area = DimExpr(b) * DimExpr(b);  // saturates for a hostile blocksize
  if (node.opType == "DepthToSpace")
    s = {s[0], DimExpr::floorDiv(s[1], area), s[2] * b, s[3] * b};
  else
    s = {s[0], s[1] * area, DimExpr::floorDiv(s[2], b), DimExpr::floorDiv(s[3], b)};
  setOut(outs, 0, typeOf(in, 0), s);
  return true;
}

// Col2Im (opset 18): [N, C * prod(block_shape), L] with constant image_shape and block_shape
// -> [N, C, image_shape...]. Without it every value after a Col2Im (VOLO's outlook attention)
// had no shape, and a Shape read downstream stayed a run-time layer.
bool col2ImRule(const Node&, const Ins& in, Outs* outs) {
  if (!known(in, 0) || shapeOf(in, 0).size() != 3) return false;
  const auto image = constInts(in, 1);
  const auto block = constInts(in, 2);
  if (!image || !block || image->empty() || image->size() != block->size()) return false;
  DimExpr blockArea(1);
  for (int64_t b : *block) {
    if (b <= 0) return false;
    blockArea = blockArea * DimExpr(b);
  }
  const SymbolicShape& x = shapeOf(in, 0);
  SymbolicShape out{x[0], DimExpr::floorDiv(x[1], blockArea)};
  for (int64_t d : *image) {
    if (d < 0) return false;
    out.push_back(DimExpr(d));
  }
  setOut(outs, 0, typeOf(in, 0), out);
  return true;
}

}  // namespace

void addSpatialShapeRules(std::map<std::string, ShapeRule>& t) {
  t["Conv"] = &convRule;
  t["ConvTranspose"] = &convTransposeRule;
  t["MaxPool"] = t["AveragePool"] = t["LpPool"] = &poolRule;
  t["GlobalAveragePool"] = t["GlobalMaxPool"] = t["GlobalLpPool"] = &globalPoolRule;
  t["Resize"] = t["Upsample"] = &resizeRule;
  t["Pad"] = &padRule;
  t["DepthToSpace"] = t["SpaceToDepth"] = &depthSpaceRule;
  t["Col2Im"] = &col2ImRule;
}

}  // namespace kiln::shape
