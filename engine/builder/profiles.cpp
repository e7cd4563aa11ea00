// Optimization profiles: every dynamic input needs a min/opt/max range; the
// network must infer at both ends of every range. The first profile's opt
// shapes are the shapes the builder times at.
#include <optional>

#include "builder/build_steps.h"
#include "kiln/shape_inference.h"
#include "kiln/tensor_size.h"

namespace kiln::build {
namespace {

bool isDynamic(const ValueInfo& input) {
  if (!input.hasShape) return true;
  for (const DimExpr& d : input.shape)
    if (!d.isConst()) return true;
  return false;
}

Shape staticShape(const ValueInfo& input) {
  Shape shape;
  for (const DimExpr& d : input.shape) shape.push_back(d.constValue());
  return shape;
}

Status checkRange(const ValueInfo& input, const ShapeRange& r, int index) {
  const std::string where =
      "optimization profile " + std::to_string(index) + ", input '" + input.name + "'";
  if (r.min.size() != r.opt.size() || r.opt.size() != r.max.size())
    return invalidArgument(where + ": min " + shapeToString(r.min) + ", opt " +
                           shapeToString(r.opt) + " and max " + shapeToString(r.max) +
                           " have different ranks");
  if (input.hasShape && r.opt.size() != input.shape.size())
    return invalidArgument(where + ": rank " + std::to_string(r.opt.size()) +
                           " but the model declares " + symbolicShapeToString(input.shape));
  const DataType type = input.type == DataType::kUndefined ? DataType::kUInt8 : input.type;
  KILN_RETURN_IF_ERROR(checkTensorSize(type, r.max, where + ": max"));
  for (size_t d = 0; d < r.opt.size(); ++d) {
    if (r.min[d] < 0 || r.min[d] > r.opt[d] || r.opt[d] > r.max[d])
      return invalidArgument(where + ": dim " + std::to_string(d) +
                             " needs 0 <= min <= opt <= max (" + std::to_string(r.min[d]) + ", " +
                             std::to_string(r.opt[d]) + ", " + std::to_string(r.max[d]) + ")");
    if (input.hasShape && input.shape[d].isConst() &&
        (r.min[d] != input.shape[d].constValue() || r.max[d] != input.shape[d].constValue()))
      return invalidArgument(where + ": dim " + std::to_string(d) + " is fixed at " +
                             std::to_string(input.shape[d].constValue()) + " in the model");
  }
  return Status::ok();
}

Status checkInfers(const Network& network, const std::map<std::string, Shape>& shapes,
                   const std::string& which) {
  auto result = inferShapes(network, shapes);
  if (!result.isOk()) return result.status().withContext("at the profile's " + which + " shapes");
  return Status::ok();
}

// The one shape every profile pins `input` to, or nothing.
std::optional<Shape> pinnedShape(const ValueInfo& input,
                                 const std::vector<OptimizationProfile>& profiles) {
  std::optional<Shape> pinned;
  for (const OptimizationProfile& profile : profiles) {
    auto it = profile.inputs.find(input.name);
    if (it == profile.inputs.end()) return std::nullopt;
    const ShapeRange& r = it->second;
    if (r.min != r.max || r.opt != r.max || (pinned && *pinned != r.opt)) return std::nullopt;
    if (input.hasShape && input.shape.size() != r.opt.size()) return std::nullopt;
    for (size_t d = 0; d < r.opt.size(); ++d)
      if (r.opt[d] < 0 ||
          (input.hasShape && input.shape[d].isConst() && input.shape[d].constValue() != r.opt[d]))
        return std::nullopt;
    pinned = r.opt;
  }
  return pinned;
}

}  // namespace

std::vector<std::string> fixPinnedInputs(Network& network,
                                         const std::vector<OptimizationProfile>& profiles) {
  std::vector<std::string> fixed;
  if (profiles.empty()) return fixed;
  for (ValueInfo& input : network.graph.inputs) {
    if (network.graph.initializers.count(input.name) || !isDynamic(input)) continue;
    const std::optional<Shape> shape = pinnedShape(input, profiles);
    if (!shape) continue;
    input.hasShape = true;
    input.shape.clear();
    for (int64_t d : *shape) input.shape.push_back(DimExpr(d));
    fixed.push_back(input.name);
  }
  return fixed;
}

Status validateProfiles(const Network& network, const std::vector<OptimizationProfile>& profiles) {
  const Graph& graph = network.graph;
  for (size_t p = 0; p < profiles.size(); ++p) {
    for (const auto& [name, range] : profiles[p].inputs) {
      const ValueInfo* input = nullptr;
      for (const ValueInfo& in : graph.inputs)
        if (in.name == name) input = &in;
      if (!input)
        return invalidArgument("optimization profile " + std::to_string(p) + " names '" + name +
                               "', which is not an input of the model");
      // Ranges of fixed-shape inputs are checked too: they must name exactly the fixed shape.
      KILN_RETURN_IF_ERROR(checkRange(*input, range, static_cast<int>(p)));
    }
  }
  return Status::ok();
}

Result<std::map<std::string, Shape>> resolveProfiles(
    const Network& network, const std::vector<OptimizationProfile>& profiles) {
  const Graph& graph = network.graph;
  KILN_RETURN_IF_ERROR(validateProfiles(network, profiles));
  std::map<std::string, Shape> opt;
  for (const ValueInfo& input : graph.inputs) {
    if (graph.initializers.count(input.name)) continue;
    if (!isDynamic(input)) {
      opt[input.name] = staticShape(input);
      continue;
    }
    if (profiles.empty()) {
      return invalidArgument(
          "input '" + input.name + "' has dynamic shape " +
          (input.hasShape ? symbolicShapeToString(input.shape) : "(unknown)") +
          ": give an optimization profile (--min-shapes/--opt-shapes/--max-shapes)");
    }
    for (size_t p = 0; p < profiles.size(); ++p) {
      auto it = profiles[p].inputs.find(input.name);
      if (it == profiles[p].inputs.end())
        return invalidArgument("optimization profile " + std::to_string(p) +
                               " has no range for dynamic input '" + input.name + "'");
      KILN_RETURN_IF_ERROR(checkRange(input, it->second, static_cast<int>(p)));
    }
    opt[input.name] = profiles[0].inputs.at(input.name).opt;
  }
  for (size_t p = 0; p < profiles.size(); ++p) {
    std::map<std::string, Shape> mins = opt, maxs = opt, opts = opt;
    for (const auto& [name, range] : profiles[p].inputs) {
      mins[name] = range.min;
      maxs[name] = range.max;
      opts[name] = range.opt;
    }
    const std::string label = "optimization profile " + std::to_string(p);
    KILN_RETURN_IF_ERROR_CTX(checkInfers(network, mins, "min"), label);
    KILN_RETURN_IF_ERROR_CTX(checkInfers(network, opts, "opt"), label);
    KILN_RETURN_IF_ERROR_CTX(checkInfers(network, maxs, "max"), label);
  }
  return opt;
}

}  // namespace kiln::build
