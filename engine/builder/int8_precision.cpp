// Precision assignment for INT8: the layers fold_qdq made run in int8 (their Q/DQ
// nodes or the calibration cache decided it); every other float layer of an INT8
// build records why it is not INT8, and a cache entry pinned to fp16/fp32 pins the
// layers reading it.
#include "builder/build_steps.h"
#include "ir/quantized_layers.h"
#include "kiln/passes.h"

namespace kiln::build {
namespace {

// A rule that names this INT8 layer with another precision cannot hold: the Q/DQ
// nodes (the model's or the cache's) fixed its arithmetic.
Status checkInt8Rule(const Node& node, const BuilderConfig& config,
                     std::vector<std::string>* warnings) {
  if (config.precisionConstraints == ConstraintMode::kNone) return Status::ok();
  const LayerPrecisionRule* rule = findLayerRule(config.layerPrecisions, layerNamesOf(node));
  if (!rule || rule->pattern == "*" || rule->precision == DataType::kInt8) return Status::ok();
  const std::string text = "layer '" + node.displayName() + "': layer precision '" + rule->pattern +
                           ":" + precisionSpelling(rule->precision) +
                           "' cannot hold (its QuantizeLinear/DequantizeLinear nodes make it int8)";
  if (config.precisionConstraints == ConstraintMode::kObey)
    return invalidArgument(text + "; precision constraints are obeyed");
  warnings->push_back(text + "; it stays int8 (constraints are preferred)");
  return Status::ok();
}

template <class T>
const T* findByNames(const std::map<std::string, T>& map, const std::vector<std::string>& names) {
  for (const std::string& name : names)
    if (auto it = map.find(name); it != map.end()) return &it->second;
  return nullptr;
}

}  // namespace

Status applyInt8Precision(const Node& node, const BuilderConfig& config, bool reducible,
                          const Int8Decisions& decisions, PrecisionChoice* choice,
                          std::vector<std::string>* warnings) {
  if (isQuantizedLayer(node)) {
    KILN_RETURN_IF_ERROR(checkInt8Rule(node, config, warnings));
    choice->precisions = {DataType::kInt8};
    choice->reason = "int8 (" + node.attrString(kInt8OriginAttribute, "explicit Q/DQ") + ")";
    if (node.hasInput(kQuantYScale)) {
      choice->outputType = DataType::kInt8;
      choice->outputReason = "int8 output (the QuantizeLinear after it folded in)";
    } else {
      choice->outputReason = "float output";
    }
    return Status::ok();
  }
  const std::vector<std::string> names = layerNamesOf(node);
  if (const DataType* pin = findByNames(decisions.pins, names); pin && reducible) {
    choice->precisions = {*pin};
    choice->reason = precisionSpelling(*pin) + ": its input is pinned in the calibration cache";
    return Status::ok();
  }
  if (!reducible) return Status::ok();
  std::string why = node.attrString(kInt8FallbackAttribute, "");
  if (const std::string* fallback = findByNames(decisions.fallbacks, names);
      why.empty() && fallback)
    why = *fallback;
  if (why.empty() && config.int8) why = "no INT8 implementation for " + node.opType;
  if (!why.empty()) choice->reason += "; not int8: " + why;
  return Status::ok();
}

}  // namespace kiln::build
