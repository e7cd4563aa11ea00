// Which precisions a layer may run in. Flags enable precisions (FP32 always);
// rules pin one per layer under kPrefer/kObey (TensorRT guide 6.5.2). A layer
// whose values are not all float32 (integer/shape layers, casts, control flow)
// runs in its own types.
#include "builder/build_steps.h"
#include "ir/fp8_layers.h"
#include "ir/quantized_layers.h"
#include "kiln/passes.h"

namespace kiln::build {
namespace {

bool isReducedFloat(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16 || t == DataType::kFloat32;
}

// A rule's outcome when the layer cannot follow it: an error under kObey, a
// warning and the flag-based choice under kPrefer.
Status unmetRule(const BuilderConfig& config, const Node& node, const LayerPrecisionRule& rule,
                 const char* what, const std::string& why, std::vector<std::string>* warnings) {
  const std::string text = "layer '" + node.displayName() + "': " + what + " '" + rule.pattern +
                           ":" + precisionSpelling(rule.precision) + "' cannot hold (" + why + ")";
  if (config.precisionConstraints == ConstraintMode::kObey)
    return invalidArgument(text + "; precision constraints are obeyed");
  warnings->push_back(text + "; falling back (constraints are preferred)");
  return Status::ok();
}

std::string ruleCannotHold(const LayerPrecisionRule& rule, bool reducible,
                           const std::string& whyNot, const Node* node = nullptr) {
  // A layer fold_qdq made INT8 (FP8) already is what the rule asks.
  if (node && ((rule.precision == DataType::kInt8 && isQuantizedLayer(*node)) ||
               (rule.precision == DataType::kFp8E4M3 && isFp8Layer(*node))))
    return "";
  if (rule.precision == DataType::kInt8 || rule.precision == DataType::kFp8E4M3)
    return precisionSpelling(rule.precision) +
           " layers need quantization, which this build does not have";
  if (rule.precision != DataType::kFloat32 && !reducible) return whyNot;
  return "";
}

}  // namespace

std::vector<std::string> layerNamesOf(const Node& node) {
  std::vector<std::string> names = node.attrStrings(kSourceNodesAttribute);
  names.push_back(node.displayName());
  return names;
}

bool canReducePrecision(const Node& node, const ValueMetas& values, std::string* why) {
  if (node.opType == "Cast" || node.opType == "CastLike") {
    *why = "a cast keeps the types it names";
    return false;
  }
  if (node.hasSubgraphs()) {
    *why = "control flow runs its bodies in their own types";
    return false;
  }
  bool anyFloat = false;
  auto visit = [&](const std::string& name) {
    auto it = values.find(name);
    if (name.empty() || it == values.end()) return true;
    const DataType t = it->second.type;
    if (!isFloatingPoint(t)) return true;
    anyFloat = true;
    return t == DataType::kFloat32;
  };
  for (const std::string& in : node.inputs) {
    if (!visit(in)) {
      *why = "input '" + in + "' is not float32";
      return false;
    }
  }
  for (const std::string& out : node.outputs) {
    if (!visit(out)) {
      *why = "output '" + out + "' is not float32";
      return false;
    }
  }
  if (!anyFloat) *why = "no floating-point values (an integer or shape layer)";
  return anyFloat;
}

StronglyTypedChoice stronglyTypedPrecision(const Node& node, const ValueMetas& values) {
  for (const auto* list : {&node.inputs, &node.outputs}) {
    for (const std::string& name : *list) {
      auto it = name.empty() ? values.end() : values.find(name);
      if (it == values.end() || !isReducedFloat(it->second.type)) continue;
      return {it->second.type, std::string("strongly typed: ") +
                                   (list == &node.inputs ? "input '" : "output '") + name +
                                   "' is " + dataTypeName(it->second.type)};
    }
  }
  return {DataType::kFloat32, "strongly typed: no float16/bfloat16/float32 values"};
}

Result<PrecisionChoice> choosePrecisions(const Node& node, const BuilderConfig& config,
                                         bool reducible, const std::string& whyNot,
                                         std::vector<std::string>* warnings) {
  PrecisionChoice choice;
  if (!reducible) {
    choice.precisions = {DataType::kFloat32};
    choice.reason = "runs in its own types: " + whyNot;
  } else {
    if (config.fp16) choice.precisions.push_back(DataType::kFloat16);
    if (config.bf16) choice.precisions.push_back(DataType::kBFloat16);
    choice.precisions.push_back(DataType::kFloat32);
    choice.reason = choice.precisions.size() == 1 ? "fp32 (no reduced precision enabled)"
                                                  : "fastest of the enabled precisions";
  }
  if (config.precisionConstraints == ConstraintMode::kNone) return choice;

  const std::string mode = constraintModeName(config.precisionConstraints);
  // "*" speaks for the float layers; integer and shape layers keep their types silently.
  auto applies = [&](const LayerPrecisionRule* rule) {
    return rule && (reducible || rule->pattern != "*");
  };
  if (const LayerPrecisionRule* rule = findLayerRule(config.layerPrecisions, layerNamesOf(node));
      applies(rule)) {
    const std::string why = ruleCannotHold(*rule, reducible, whyNot, &node);
    if (!why.empty()) {
      KILN_RETURN_IF_ERROR(unmetRule(config, node, *rule, "layer precision", why, warnings));
      choice.reason += " (" + mode + " rule '" + rule->pattern + "' could not hold)";
    } else if (reducible) {
      choice.precisions = {rule->precision};
      choice.reason = mode + "s layer precision '" + rule->pattern + ":" +
                      precisionSpelling(rule->precision) + "'";
    }
  }
  if (const LayerPrecisionRule* rule = findLayerRule(config.layerOutputTypes, layerNamesOf(node));
      applies(rule)) {
    std::string why = ruleCannotHold(*rule, reducible, whyNot);
    if (why.empty() && !isReducedFloat(rule->precision)) why = "unsupported output type";
    if (!why.empty()) {
      KILN_RETURN_IF_ERROR(unmetRule(config, node, *rule, "layer output type", why, warnings));
    } else if (reducible) {
      choice.outputType = rule->precision;
      choice.outputReason = mode + "s layer output type '" + rule->pattern + ":" +
                            precisionSpelling(rule->precision) + "'";
    }
  }
  return choice;
}

}  // namespace kiln::build
