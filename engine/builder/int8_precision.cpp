// Precision assignment for INT8: the layers fold_qdq made run in int8 (their Q/DQ
// nodes or the calibration cache decided it), its Fp8MatMul layers in FP8 (their
// float8e4m3fn Q/DQ nodes); every other float layer of an INT8 build records why it
// is not INT8, and a cache entry pinned to fp16/fp32 pins the layers reading it.
#include "builder/build_steps.h"
#include "ir/conv_max_pool.h"
#include "ir/fp8_layers.h"
#include "ir/quantized_layers.h"
#include "kiln/passes.h"
#include "passes/qdq_rules.h"

namespace kiln::build {
namespace {

// A rule that names this INT8 (FP8) layer with another precision cannot hold: the
// Q/DQ nodes (the model's or the cache's) fixed its arithmetic.
Status checkQuantizedRule(const Node& node, DataType precision, const BuilderConfig& config,
                          std::vector<std::string>* warnings) {
  if (config.precisionConstraints == ConstraintMode::kNone) return Status::ok();
  const LayerPrecisionRule* rule = findLayerRule(config.layerPrecisions, layerNamesOf(node));
  if (!rule || rule->pattern == "*" || rule->precision == precision) return Status::ok();
  const std::string spelling = precisionSpelling(precision);
  const std::string text = "layer '" + node.displayName() + "': layer precision '" + rule->pattern +
                           ":" + precisionSpelling(rule->precision) +
                           "' cannot hold (its QuantizeLinear/DequantizeLinear nodes make it " +
                           spelling + ")";
  if (config.precisionConstraints == ConstraintMode::kObey)
    return invalidArgument(text + "; precision constraints are obeyed");
  warnings->push_back(text + "; it stays " + spelling + " (constraints are preferred)");
  return Status::ok();
}

// An Fp8MatMul: E4M3 GEMM, float or FP8 output.
Status applyFp8Precision(const Node& node, const BuilderConfig& config, PrecisionChoice* choice,
                         std::vector<std::string>* warnings) {
  KILN_RETURN_IF_ERROR(checkQuantizedRule(node, DataType::kFp8E4M3, config, warnings));
  choice->precisions = {DataType::kFp8E4M3};
  choice->reason = "fp8 (explicit float8e4m3fn Q/DQ)";
  if (node.hasInput(kFp8YScale)) {
    choice->outputType = DataType::kFp8E4M3;
    choice->outputReason = "fp8 output (the QuantizeLinear after it folded in)";
  } else {
    choice->outputReason = "float output";
  }
  return Status::ok();
}

// A FusedConvMaxPool (a stem) computes in float like any float layer; with y_scale its
// output is INT8 (the QuantizeLinear after its MaxPool), as a QuantizedConv's is.
void noteStemOutput(const Node& node, PrecisionChoice* choice) {
  if (!node.hasInput(kConvPoolYScale)) return;
  choice->outputType = DataType::kInt8;
  choice->outputReason = "int8 output (the QuantizeLinear after its MaxPool folded in)";
}

template <class T>
const T* findByNames(const std::map<std::string, T>& map, const std::vector<std::string>& names) {
  for (const std::string& name : names)
    if (auto it = map.find(name); it != map.end()) return &it->second;
  return nullptr;
}

}  // namespace

Status checkFp8Build(const Network& network, const BuilderConfig& config) {
  if (!config.fp8) return Status::ok();
  const auto& constants = network.graph.initializers;
  auto constantType = [&](const std::string& name) {
    auto it = constants.find(name);
    return it == constants.end() ? DataType::kUndefined : it->second.type();
  };
  for (const Node& node : network.graph.nodes) {
    const bool dq = passes::isDequantize(node);
    if (!dq && !passes::isQuantize(node)) continue;
    // The quantized type: the zero point's, output_dtype, or a DQ's constant input's.
    DataType type = node.hasInput(2) ? constantType(node.inputs[2]) : DataType::kUndefined;
    if (type == DataType::kUndefined && node.hasAttr("output_dtype"))
      type = static_cast<DataType>(node.attrInt("output_dtype", 0));
    if (type == DataType::kUndefined && dq) type = constantType(node.inputs[0]);
    if (isFp8Type(type)) return Status::ok();
  }
  return unsupported(
      "an FP8 build needs a model with float8e4m3fn QuantizeLinear/DequantizeLinear nodes "
      "(explicit quantization; Kiln has no FP8 calibration)");
}

Status applyInt8Precision(const Node& node, const BuilderConfig& config, bool reducible,
                          const Int8Decisions& decisions, PrecisionChoice* choice,
                          std::vector<std::string>* warnings) {
  if (isFp8Layer(node)) return applyFp8Precision(node, config, choice, warnings);
  if (isQuantizedLayer(node)) {
    KILN_RETURN_IF_ERROR(checkQuantizedRule(node, DataType::kInt8, config, warnings));
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
  if (isFusedConvMaxPool(node)) noteStemOutput(node, choice);
  const std::vector<std::string> names = layerNamesOf(node);
  if (const DataType* pin = findByNames(decisions.pins, names); pin && reducible) {
    choice->precisions = {*pin};
    choice->reason = precisionSpelling(*pin) + ": its input is pinned in the calibration cache";
    return Status::ok();
  }
  if (!reducible) return Status::ok();
  if (const std::string fp8 = node.attrString(kFp8FallbackAttribute, ""); !fp8.empty()) {
    choice->reason += "; not fp8: " + fp8;
    return Status::ok();
  }
  std::string why = node.attrString(kInt8FallbackAttribute, "");
  if (const std::string* fallback = findByNames(decisions.fallbacks, names);
      why.empty() && fallback)
    why = *fallback;
  if (why.empty() && config.int8) why = "no INT8 implementation for " + node.opType;

  if (!why.empty()) choice->reason += "; not int8: " + why;
  return Status::ok();
}

}  // namespace kiln::build
