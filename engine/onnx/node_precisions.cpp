// Per-node precision decisions for the strongly typed export, from a built plan's
// record or from a constraints file (kiln/typed_onnx_export.h).
#include <set>

#include "kiln/typed_onnx_export.h"

namespace kiln {
namespace {

bool isReduced(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16;
}

bool isQuantized(DataType t) {
  return t == DataType::kInt8 || t == DataType::kFp8E4M3;
}

// An output type as the export stores it: a reduced type becomes `reduced` when one is
// forced (kUndefined keeps it).
DataType storedType(DataType outputType, DataType reduced) {
  return isReduced(outputType) && reduced != DataType::kUndefined ? reduced : outputType;
}

std::set<std::string> nodeNames(const Network& network) {
  std::set<std::string> names;
  for (const Node& node : network.graph.nodes) names.insert(node.displayName());
  return names;
}

// The float precision an INT8/FP8 layer is written in: the build's reduced type.
DataType buildFloatPrecision(const BuildRecord& record, DataType reduced) {
  if (reduced != DataType::kUndefined) return reduced;
  if (record.config.fp16) return DataType::kFloat16;
  if (record.config.bf16) return DataType::kBFloat16;
  return DataType::kFloat32;
}

}  // namespace

Result<NodePrecisions> nodePrecisionsFromPlan(const BuildRecord& record, const Network& network,
                                              const std::string& planName, DataType reduced,
                                              QuantizedLayers quantized) {
  if (record.layers.empty())
    return invalidArgument(planName +
                           ": the plan records no layers (built with --profiling-verbosity "
                           "none?); rebuild it with layer_names_only or detailed");
  NodePrecisions out;
  out.source = "plan '" + planName + "'";
  const std::set<std::string> names = nodeNames(network);
  int matched = 0;
  std::set<std::string> quantizedLayers;
  for (const LayerRecord& layer : record.layers) {
    DataType type = layer.precision;
    std::string reason = "layer '" + layer.name + "' runs in " + precisionSpelling(type);
    if (isQuantized(type) && quantized == QuantizedLayers::kAsQdqFloat32) {
      type = DataType::kFloat32;
      reason += ", written as float32 between the calibration cache's Q/DQ pairs";
    } else if (isQuantized(type)) {
      quantizedLayers.insert(layer.name);
      type = buildFloatPrecision(record, reduced);
      reason += ", written as " + precisionSpelling(type) + " (no Q/DQ export from a plan)";
    } else if (isReduced(type) && reduced != DataType::kUndefined) {
      type = reduced;
    } else if (!isReduced(type)) {
      type = DataType::kFloat32;
    }
    for (const std::string& node : layer.sourceNodes) {
      if (!names.count(node)) continue;
      ++matched;
      out.byNode[node] = type;
      out.reasons[node] = reason;
    }
    if (layer.outputType != layer.precision && !isQuantized(layer.precision) &&
        isFloatingPoint(layer.outputType) && !isQuantized(layer.outputType))
      for (const TensorRecord& output : layer.outputs)
        out.storedTypes[output.name] = storedType(layer.outputType, reduced);
  }
  if (matched == 0)
    return invalidArgument(planName + ": none of the plan's layers comes from a node of '" +
                           network.sourcePath + "' (was the plan built from another model?)");
  if (!quantizedLayers.empty())
    out.warnings.push_back(
        std::to_string(quantizedLayers.size()) + " INT8/FP8 layers are written in float (e.g. '" +
        *quantizedLayers.begin() + "'); give --calib-cache too for them as Q/DQ pairs");
  return out;
}

NodePrecisions nodePrecisionsFromConstraints(const PrecisionConstraints& constraints,
                                             const Network& network,
                                             const std::string& constraintsName, DataType reduced) {
  const bool explicitReduced = reduced != DataType::kUndefined;
  if (!explicitReduced) {
    reduced = DataType::kFloat16;
    for (const LayerPrecisionRule& rule : constraints.layerPrecisions)
      if (rule.precision == DataType::kBFloat16) reduced = DataType::kBFloat16;
  }
  NodePrecisions out;
  out.source = "constraints '" + constraintsName + "'";
  const bool rulesApply = constraints.mode != ConstraintMode::kNone;
  if (!rulesApply)
    out.warnings.push_back(constraintsName +
                           ": precision_constraints is 'none': its rules are ignored");
  for (const Node& node : network.graph.nodes) {
    const std::string name = node.displayName();
    const LayerPrecisionRule* rule =
        rulesApply ? findLayerRule(constraints.layerPrecisions, name) : nullptr;
    DataType type = reduced;
    std::string reason = "free (no rule names it): " + precisionSpelling(reduced);
    if (rule) {
      type = rule->precision == DataType::kFloat32            ? DataType::kFloat32
             : isReduced(rule->precision) && !explicitReduced ? rule->precision
                                                              : reduced;
      reason = "rule '" + rule->pattern + ":" + precisionSpelling(rule->precision) + "'";
    }
    out.byNode[name] = type;
    out.reasons[name] = reason;
    const LayerPrecisionRule* outputRule =
        rulesApply ? findLayerRule(constraints.layerOutputTypes, name) : nullptr;
    if (outputRule && isFloatingPoint(outputRule->precision) && !isQuantized(outputRule->precision))
      for (const std::string& output : node.outputs)
        if (!output.empty())
          out.storedTypes[output] =
              storedType(outputRule->precision, explicitReduced ? reduced : DataType::kUndefined);
  }
  return out;
}

}  // namespace kiln
