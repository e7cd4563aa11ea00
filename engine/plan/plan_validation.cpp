// Plan fields checked on load (plan/plan_validation.h).
#include "plan/plan_validation.h"

#include "builder/build_steps.h"

namespace kiln::plan {
namespace {

// The compute precisions and output types the builder assigns (precision
// assignment, INT8/FP8 layers); no backend runs a layer in any other.
bool isLayerPrecision(DataType type) {
  switch (type) {
    case DataType::kFloat32:
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kInt8:
    case DataType::kFp8E4M3:
      return true;
    default:
      return false;
  }
}

Status checkLayers(const Plan& plan) {
  const std::vector<Node>& nodes = plan.network->graph.nodes;
  if (plan.layers.size() != nodes.size()) {
    return parseError("plan metadata is damaged: " + std::to_string(plan.layers.size()) +
                      " layer implementations for " + std::to_string(nodes.size()) + " layers");
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const LayerImplementation& layer = plan.layers[i];
    const std::string where = "layer '" + nodes[i].displayName() + "'";
    if (!isLayerPrecision(layer.precision))
      return parseError(where + ": precision " + dataTypeName(layer.precision) +
                        " is not one a backend runs layers in");
    if (!isLayerPrecision(layer.outputType))
      return parseError(where + ": output type " + dataTypeName(layer.outputType) +
                        " is not one a backend writes");
  }
  return Status::ok();
}

// The build record is what the inspector and the studio show: its numbers must be
// ones a build writes (a level 0..5, byte counts >= 0, offsets >= -1, precisions
// a backend runs), whatever the file says.
Status checkRecord(const BuildRecord& r) {
  const auto damaged = [](const std::string& why) {
    return parseError("plan record is damaged: " + why);
  };
  if (r.config.optimizationLevel < 0 || r.config.optimizationLevel > 5)
    return damaged("optimization level " + std::to_string(r.config.optimizationLevel) +
                   " is outside 0..5");
  if (r.config.workspaceLimitBytes < 0 || r.activationBytes < 0 ||
      r.activationBytesWithoutReuse < 0 || r.weightBytes < 0)
    return damaged("a byte count is negative");
  for (const LayerRecord& l : r.layers) {
    const std::string where = "layer '" + l.name + "'";
    if (!isLayerPrecision(l.precision) || !isLayerPrecision(l.outputType))
      return damaged(where + ": precision " + dataTypeName(l.precision) + ", output type " +
                     dataTypeName(l.outputType) + " is not a pair a backend runs");
    if (l.workspaceBytes < 0 || l.memoryOffset < -1)
      return damaged(where + ": workspace " + std::to_string(l.workspaceBytes) +
                     " or memory offset " + std::to_string(l.memoryOffset) + " is negative");
    // A candidate's choice is what a plan's engine takes back and shows in its
    // implementation text: printable words of bounded length, as the kernels write them.
    if (!isWellFormedChoice(l.choice))
      return damaged(where + ": the layer's choice is not printable text of at most " +
                     std::to_string(kMaxChoiceBytes) + " bytes");
    for (const TacticCandidate& c : l.candidates) {
      if (!isWellFormedChoice(c.choice))
        return damaged(where + ": a candidate's choice is not printable text of at most " +
                       std::to_string(kMaxChoiceBytes) + " bytes");
    }
  }
  return Status::ok();
}

}  // namespace

Status validatePlan(const Plan& plan) {
  if (!plan.network) return parseError("plan has no network");
  KILN_RETURN_IF_ERROR(checkLayers(plan));
  KILN_RETURN_IF_ERROR(checkRecord(plan.record));
  Status profiles = build::validateProfiles(*plan.network, plan.profiles);
  if (!profiles.isOk()) return Status(StatusCode::kParseError, profiles.message());
  return Status::ok();
}

}  // namespace kiln::plan
