#include "flops.h"

#include <set>

namespace kiln::inspector {
namespace {

std::optional<double> numel(const ShapeInferenceResult& shapes, const std::string& name) {
  auto it = shapes.values.find(name);
  if (it == shapes.values.end() || !it->second.hasShape) return std::nullopt;
  double n = 1;
  for (const DimExpr& d : it->second.shape) {
    if (!d.isConst()) return std::nullopt;
    n *= static_cast<double>(d.constValue());
  }
  return n;
}

std::optional<std::vector<int64_t>> dims(const ShapeInferenceResult& shapes,
                                         const std::string& name) {
  auto it = shapes.values.find(name);
  if (it == shapes.values.end() || !it->second.hasShape) return std::nullopt;
  std::vector<int64_t> out;
  for (const DimExpr& d : it->second.shape) {
    if (!d.isConst()) return std::nullopt;
    out.push_back(d.constValue());
  }
  return out;
}

}  // namespace

std::optional<double> nodeFlops(const Node& node, const ShapeInferenceResult& shapes) {
  if (node.outputs.empty()) return 0.0;
  const std::string& op = node.opType;
  if (op == "Conv" || op == "ConvTranspose") {
    auto w = dims(shapes, node.inputs.size() > 1 ? node.inputs[1] : "");
    auto out = numel(shapes, node.outputs[0]);
    auto in = numel(shapes, node.inputs[0]);
    if (!w || !out || !in || w->size() < 2) return std::nullopt;
    double perOutput = 1;
    for (size_t d = 1; d < w->size(); ++d) perOutput *= static_cast<double>((*w)[d]);
    // Conv: each output element is a dot product over (Cin/group) x kernel, w = [Cout, Cin/g,
    // k...]. ConvTranspose scatters each input element through (Cout/group) x kernel, w = [Cin,
    // Cout/g, k...].
    return 2.0 * (op == "Conv" ? *out : *in) * perOutput;
  }
  if (op == "MatMul" || op == "Gemm") {
    auto a = dims(shapes, node.inputs[0]);
    auto out = numel(shapes, node.outputs[0]);
    if (!a || !out || a->empty()) return std::nullopt;
    int64_t k = op == "Gemm" && node.attrInt("transA", 0) ? (*a)[0] : a->back();
    return 2.0 * *out * static_cast<double>(k);
  }
  static const std::set<std::string> kFree = {
      "Reshape",  "Flatten",         "Squeeze",   "Unsqueeze", "Shape", "Size",  "Identity",
      "Constant", "ConstantOfShape", "Transpose", "Concat",    "Split", "Slice", "Gather",
      "Cast",     "Expand",          "Range",     "Dropout",   "Pad",   "Tile"};
  if (kFree.count(op)) return 0.0;
  return numel(shapes, node.outputs[0]);
}

}  // namespace kiln::inspector
