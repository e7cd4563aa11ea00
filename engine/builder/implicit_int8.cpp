// Implicit INT8 (TensorRT guide 7.3): the calibration cache's ranges become
// QuantizeLinear/DequantizeLinear pairs on the activation inputs of the layers that
// run in INT8, before the passes; fold_qdq then folds each pair with its layer (and
// quantizes the layer's float weights per output channel), exactly as it folds a
// model's own Q/DQ nodes. Inserting before the passes lets BatchNormalization still
// fold into the float weights and rules name layers by their ONNX nodes; the pairs
// sit on inputs, so every fusion still matches.
//
// A layer stays float, with the reason recorded, when a precision rule pins it to
// another precision, when the cache has no range for its input, or pins that input.
#include <algorithm>
#include <set>

#include "builder/build_steps.h"
#include "ir/quantized_layers.h"
#include "kiln/calibration.h"
#include "passes/qdq_rules.h"

namespace kiln::build {
namespace {

bool isOnnx(const Node& node) {
  return node.domain.empty() || node.domain == "ai.onnx";
}

// Conv, MatMul and Gemm with float constant weights: the layers with INT8 kernels.
bool hasInt8Form(const Node& node, const Graph& graph) {
  if (!isOnnx(node) || node.inputs.size() < 2 || node.outputs.size() != 1) return false;
  if (node.opType != "Conv" && node.opType != "MatMul" && node.opType != "Gemm") return false;
  auto w = graph.initializers.find(node.inputs[1]);
  return w != graph.initializers.end() && w->second.type() == DataType::kFloat32 &&
         (node.opType == "Conv" || w->second.rank() == 2);
}

bool hasQdqNodes(const Graph& graph) {
  for (const Node& node : graph.nodes)
    if (passes::isQuantize(node) || passes::isDequantize(node)) return true;
  return false;
}

std::string freshName(const Graph& graph, const std::set<std::string>& used,
                      const std::string& base) {
  std::string name = base;
  for (int i = 1; used.count(name) || graph.initializers.count(name); ++i)
    name = base + "_" + std::to_string(i);
  return name;
}

// Why `node` may not run in INT8 under the rules and the cache ("" when it may).
std::string int8Blocker(const Node& node, const BuilderConfig& config,
                        const CalibrationTable& table, Int8Decisions* decisions) {
  if (config.precisionConstraints != ConstraintMode::kNone) {
    const LayerPrecisionRule* rule = findLayerRule(config.layerPrecisions, layerNamesOf(node));
    if (rule && rule->precision != DataType::kInt8)
      return "precision rule '" + rule->pattern + ":" + precisionSpelling(rule->precision) +
             "' keeps it out of INT8";
  }
  const std::string& x = node.inputs[0];
  const TensorRange* range = table.find(x);
  if (!range) return "the calibration cache has no range for its input '" + x + "'";
  if (range->pinned != DataType::kUndefined) {
    decisions->pins[node.displayName()] = range->pinned;
    return "its input '" + x + "' is pinned to " + precisionSpelling(range->pinned) +
           " in the calibration cache";
  }
  if (!(range->amax > 0)) return "its input '" + x + "' has no range (always zero)";
  return "";
}

Node qdqNode(const char* op, const std::string& name, const std::string& in,
             const std::string& scale, const std::string& zero, const std::string& out) {
  Node node;
  node.opType = op;
  node.name = name;
  node.inputs = {in, scale, zero};
  node.outputs = {out};
  return node;
}

}  // namespace

Status insertCalibratedQdq(Network& network, const BuilderConfig& config,
                           Int8Decisions* decisions) {
  if (!config.int8) return Status::ok();
  Graph& g = network.graph;
  if (!config.calibration) {
    if (hasQdqNodes(g)) return Status::ok();  // explicit quantization: fold_qdq does it all
    return invalidArgument(
        "an INT8 build needs a calibration cache (kiln calibrate, then --calib-cache) or a "
        "model with QuantizeLinear/DequantizeLinear nodes");
  }
  if (network.defaultOpset() < 10)
    return unsupported(
        "implicit INT8 needs ONNX opset 10 or later (QuantizeLinear); the model "
        "imports opset " +
        std::to_string(network.defaultOpset()));
  const CalibrationTable& table = *config.calibration;
  // Which layers read each activation in INT8.
  std::map<std::string, std::vector<size_t>> int8Readers;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    if (!hasInt8Form(node, g)) continue;
    const std::string why = int8Blocker(node, config, table, decisions);
    if (!why.empty()) {
      decisions->fallbacks[node.displayName()] = why;
      continue;
    }
    int8Readers[node.inputs[0]].push_back(i);
  }
  std::set<std::string> used;
  for (const Node& node : g.nodes)
    for (const std::string& out : node.outputs) used.insert(out);
  for (const ValueInfo& in : g.inputs) used.insert(in.name);
  // One pair per activation, placed right before its first INT8 reader; inserting
  // from the back keeps the earlier indices valid.
  std::vector<std::pair<size_t, std::vector<Node>>> insertions;
  for (const auto& [x, readers] : int8Readers) {
    const TensorRange& range = *table.find(x);
    const std::string scale = passes::addInitializer(
        g, x + "_int8_scale",
        Tensor::fromVector(DataType::kFloat32, {},
                           std::vector<float>{static_cast<float>(range.scale())}));
    const std::string zero =
        passes::addInitializer(g, x + "_int8_zero", Tensor(DataType::kInt8, Shape{}));
    const std::string quantized = freshName(g, used, x + "_int8");
    used.insert(quantized);
    const std::string restored = freshName(g, used, x + "_dequantized");
    used.insert(restored);
    Node q = qdqNode("QuantizeLinear", quantized + "_Q", x, scale, zero, quantized);
    Attribute calibrated;
    calibrated.kind = Attribute::Kind::kString;
    calibrated.s = table.method;
    q.attributes[passes::kCalibratedQuantizeAttribute] = calibrated;
    Node dq = qdqNode("DequantizeLinear", quantized + "_DQ", quantized, scale, zero, restored);
    // Both carry the mark: the Q may fold into the layer before it (an INT8 output).
    dq.attributes[passes::kCalibratedQuantizeAttribute] = calibrated;
    for (size_t r : readers) g.nodes[r].inputs[0] = restored;
    insertions.push_back({readers.front(), {std::move(q), std::move(dq)}});
  }
  std::sort(insertions.begin(), insertions.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [at, nodes] : insertions) {
    for (Node& n : nodes) {
      n.index = g.nodes[at].index;
      n.opset = network.defaultOpset();
    }
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(at), nodes.begin(), nodes.end());
  }
  return Status::ok();
}

}  // namespace kiln::build
