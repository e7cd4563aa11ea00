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
//
// Residual blocks (TensorRT's INT8 ResNet): y = Add(a, x), where a is an INT8 Conv's
// output (through a BatchNormalization, which folds into it) read only by the Add,
// becomes FusedConv(.., Z = x) in fuse_conv_bias_activation. The Add is made an INT8
// reader of x too, so x's own Q/DQ pair feeds it: fold_qdq then gives the
// QuantizedConv x's int8 value as Z with z_scale, and when every reader of a block's
// output is INT8, the Q after that block folds into its last layer (an INT8 output)
// instead of running on its own. Adds record no fallback: an Add that stays float
// is no INT8 layer.
#include <algorithm>
#include <set>
#include <utility>

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
std::string int8Blocker(const Node& node, const Graph& graph, const BuilderConfig& config,
                        const CalibrationTable& table, int minConvChannels,
                        Int8Decisions* decisions) {
  bool ruledInt8 = false;
  if (config.precisionConstraints != ConstraintMode::kNone) {
    const LayerPrecisionRule* rule = findLayerRule(config.layerPrecisions, layerNamesOf(node));
    if (rule && rule->precision != DataType::kInt8)
      return "precision rule '" + rule->pattern + ":" + precisionSpelling(rule->precision) +
             "' keeps it out of INT8";
    ruledInt8 = rule != nullptr;
  }
  if (node.opType == "Conv" && !ruledInt8 && minConvChannels > 0) {
    const Tensor& w = graph.initializers.at(node.inputs[1]);
    if (w.rank() >= 2 && node.attrInt("group", 1) == 1 && w.dim(1) < minConvChannels)
      return "its input has " + std::to_string(w.dim(1)) +
             " channel(s): this backend's INT8 convolutions run far slower than float ones "
             "below " +
             std::to_string(minConvChannels) +
             " (a rule 'name:int8' with --precision-constraints obey forces INT8)";
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

// Input `slot` of node `node` reads its activation through the Q/DQ pair.
struct Int8Reader {
  size_t node = 0;
  size_t slot = 0;
};

// The INT8 Conv behind `value` when the residual fusion can take the Add that reads
// it: the Conv writes `value`, or a BatchNormalization of the Conv's output does (it
// folds into the Conv), each value read only by the next node. -1 otherwise.
int int8ConvBehind(const Graph& g, const passes::GraphIndex& index, const std::string& value,
                   const std::set<size_t>& int8Convs) {
  int p = index.producer(value);
  if (p >= 0 && isOnnx(g.nodes[p]) && g.nodes[p].opType == "BatchNormalization" &&
      g.nodes[p].outputs.size() == 1 && index.soleReader(g.nodes[p].inputs[0]) == p)
    p = index.producer(g.nodes[p].inputs[0]);
  return p >= 0 && g.nodes[p].opType == "Conv" && int8Convs.count(static_cast<size_t>(p)) ? p : -1;
}

// A range the cache lets `value` be quantized with.
bool hasUsableRange(const CalibrationTable& table, const std::string& value) {
  const TensorRange* range = table.find(value);
  return range && range->pinned == DataType::kUndefined && range->amax > 0;
}

// The input of the residual Add at `add` that becomes an INT8 reader (the residual
// x), or -1. The other input is the main branch: an INT8 Conv's output read only by
// this Add. x must be an activation (no constant) of the same inferred shape with a
// usable range. When both inputs qualify (a downsample Conv on the shortcut), the
// Conv earlier in the graph keeps the Add and the later one's output is quantized,
// which then folds into that Conv as its INT8 output.
int residualSlot(const Graph& g, const passes::GraphIndex& index,
                 const passes::InferredShapes& shapes, int add, const std::set<size_t>& int8Convs,
                 const CalibrationTable& table) {
  const Node& node = g.nodes[add];
  if (!passes::isOnnxOp(node, "Add", 2) || node.inputs[0] == node.inputs[1]) return -1;
  const SymbolicShape* s0 = passes::shapeOf(shapes, node.inputs[0]);
  const SymbolicShape* s1 = passes::shapeOf(shapes, node.inputs[1]);
  if (!s0 || !s1 || *s0 != *s1) return -1;
  int conv[2], best = -1;
  for (int slot = 0; slot < 2; ++slot) {
    const std::string& main = node.inputs[slot];
    const std::string& x = node.inputs[1 - slot];
    conv[slot] = index.soleReader(main) == add ? int8ConvBehind(g, index, main, int8Convs) : -1;
    const bool residual = conv[slot] >= 0 && !index.constant(x) && hasUsableRange(table, x);
    if (residual && (best < 0 || conv[slot] < conv[best])) best = slot;
  }
  return best < 0 ? -1 : 1 - best;
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

Status insertCalibratedQdq(Network& network, const BuilderConfig& config, Int8Decisions* decisions,
                           int minConvChannels) {
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
  // Which layer inputs read each activation in INT8: the INT8 layers' input 0 ...
  std::map<std::string, std::vector<Int8Reader>> int8Readers;
  std::set<size_t> int8Convs;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    if (!hasInt8Form(node, g)) continue;
    const std::string why = int8Blocker(node, g, config, table, minConvChannels, decisions);
    if (!why.empty()) {
      decisions->fallbacks[node.displayName()] = why;
      continue;
    }
    int8Readers[node.inputs[0]].push_back({i, 0});
    if (node.opType == "Conv") int8Convs.insert(i);
  }
  // ... and the residual input of each Add an INT8 Conv's epilogue will take.
  if (!int8Convs.empty()) {
    const passes::GraphIndex index(g);
    const passes::InferredShapes shapes = passes::inferredShapesOrNone(network);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const int slot = residualSlot(g, index, shapes, static_cast<int>(i), int8Convs, table);
      if (slot >= 0) int8Readers[g.nodes[i].inputs[slot]].push_back({i, size_t(slot)});
    }
  }
  std::set<std::string> used;
  for (const Node& node : g.nodes)
    for (const std::string& out : node.outputs) used.insert(out);
  for (const ValueInfo& in : g.inputs) used.insert(in.name);
  // One pair per activation, placed right before its first INT8 reader; inserting
  // from the back keeps the earlier indices valid.
  std::vector<std::pair<size_t, std::vector<Node>>> insertions;
  for (const auto& [x, readers] : int8Readers) {
    const TensorRange& range = *table.find(x);  // every reader checked it
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
    size_t first = readers.front().node;
    for (const Int8Reader& r : readers) {
      g.nodes[r.node].inputs[r.slot] = restored;
      first = std::min(first, r.node);
    }
    insertions.push_back({first, {std::move(q), std::move(dq)}});
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
