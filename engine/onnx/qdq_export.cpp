// exportQdqOnnx: the implicit INT8 build's activation Q/DQ pairs (insertCalibratedQdq)
// made explicit, plus int8 weights behind per-channel DequantizeLinear nodes, written
// back as ONNX through the Network exporter (kiln/typed_onnx_export.h).
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "builder/build_steps.h"
#include "kiln/calibration.h"
#include "kiln/onnx_export.h"
#include "kiln/onnx_import.h"
#include "kiln/typed_onnx_export.h"
#include "passes/qdq_rules.h"

namespace kiln {
namespace {

// The axis of a layer's weight that indexes its output channels.
int64_t outputAxis(const Node& node) {
  if (node.opType == "Conv") return 0;
  if (node.opType == "Gemm") return node.attrInt("transB", 0) ? 0 : 1;
  return 1;  // MatMul: [K, N]
}

struct QuantizedWeight {
  Tensor values;  // int8, the weight's shape
  Tensor scales;  // float32 [channels]
};

// Symmetric per-channel int8: scale = max |w| / 127 over the channel (1 when all zero).
QuantizedWeight quantizePerChannel(const Tensor& w, int64_t axis) {
  const int64_t channels = w.dim(static_cast<int>(axis));
  int64_t inner = 1;
  for (int d = static_cast<int>(axis) + 1; d < w.rank(); ++d) inner *= w.dim(d);
  const float* src = w.data<float>();
  QuantizedWeight q{Tensor(DataType::kInt8, w.shape()), Tensor(DataType::kFloat32, {channels})};
  float* scales = q.scales.data<float>();
  std::fill(scales, scales + channels, 0.0f);
  for (int64_t i = 0; i < w.numel(); ++i) {
    const int64_t c = (i / inner) % channels;
    scales[c] = std::max(scales[c], std::fabs(src[i]));
  }
  for (int64_t c = 0; c < channels; ++c) scales[c] = scales[c] > 0 ? scales[c] / 127.0f : 1.0f;
  int8_t* dst = q.values.data<int8_t>();
  for (int64_t i = 0; i < w.numel(); ++i) {
    const float v = std::nearbyint(src[i] / scales[(i / inner) % channels]);
    dst[i] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
  }
  return q;
}

// A value name no initializer, input or node output of `g` has.
std::string freshValueName(const Graph& g, const std::string& base) {
  auto taken = [&g](const std::string& name) {
    if (g.initializers.count(name) || g.findValueInfo(name)) return true;
    for (const ValueInfo& in : g.inputs)
      if (in.name == name) return true;
    for (const Node& node : g.nodes)
      if (std::find(node.outputs.begin(), node.outputs.end(), name) != node.outputs.end())
        return true;
    return false;
  };
  std::string name = base;
  for (int i = 1; taken(name); ++i) name = base + "_" + std::to_string(i);
  return name;
}

bool readsDequantized(const Graph& g, const Node& node) {
  for (const Node& other : g.nodes)
    if (passes::isDequantize(other) && other.outputs[0] == node.inputs[0]) return true;
  return false;
}

// A DequantizeLinear in front of the layer's float weight; returns the node to insert.
Node weightDequantizer(Graph& g, Node& layer) {
  const std::string w = layer.inputs[1];
  const int64_t axis = outputAxis(layer);
  QuantizedWeight q = quantizePerChannel(g.initializers.at(w), axis);
  const int64_t channels = q.scales.numel();
  Node dq;
  dq.opType = "DequantizeLinear";
  dq.name = layer.name + "_weight_DQ";
  dq.inputs = {passes::addInitializer(g, w + "_int8", q.values),
               passes::addInitializer(g, w + "_scale", q.scales),
               passes::addInitializer(g, w + "_zero", Tensor(DataType::kInt8, {channels}))};
  dq.outputs = {freshValueName(g, w + "_dequantized")};
  dq.attributes["axis"].kind = Attribute::Kind::kInt;
  dq.attributes["axis"].i = axis;
  dq.index = layer.index;
  layer.inputs[1] = dq.outputs[0];
  return dq;
}

// The float weights every reader now takes through an int8 DequantizeLinear.
void dropUnreadInitializers(Graph& g) {
  std::set<std::string> read;
  for (const Node& node : g.nodes) {
    read.insert(node.inputs.begin(), node.inputs.end());
    for (const std::string& outer : node.implicitInputs()) read.insert(outer);
  }
  for (const ValueInfo& out : g.outputs) read.insert(out.name);
  for (auto it = g.initializers.begin(); it != g.initializers.end();)
    it = read.count(it->first) ? std::next(it) : g.initializers.erase(it);
}

Result<std::string> withMetadata(const std::string& bytes, const std::string& source,
                                 const std::string& summary) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) return internalError("the Q/DQ export does not parse");
  for (const auto& [key, value] :
       {std::pair{"kiln:precision_source", source}, std::pair{"kiln:precision", summary}}) {
    onnx::StringStringEntryProto* entry = model.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  std::string out;
  if (!model.SerializeToString(&out)) return internalError("serializing the Q/DQ export failed");
  return out;
}

}  // namespace

Result<QdqExportResult> exportQdqOnnx(const std::string& modelPath, const CalibrationTable& table,
                                      const std::string& cacheName) {
  ImportOptions importOptions;
  importOptions.checkSupport = false;
  KILN_ASSIGN_OR_RETURN(Network network, importOnnxFile(modelPath, importOptions));
  if (network.defaultOpset() < 13)
    return unsupported(modelPath + ": per-channel DequantizeLinear needs ai.onnx opset 13; " +
                       "the model has " + std::to_string(network.defaultOpset()));
  Graph& g = network.graph;
  for (Node& node : g.nodes)
    if (node.name.empty()) node.name = node.displayName();
  BuilderConfig config;
  config.int8 = true;
  config.calibration = &table;
  build::Int8Decisions decisions;
  KILN_RETURN_IF_ERROR_CTX(build::insertCalibratedQdq(network, config, &decisions), modelPath);
  QdqExportResult result;
  for (Node& node : g.nodes) {
    node.attributes.erase(passes::kCalibratedQuantizeAttribute);  // Kiln's mark, not ONNX's
    if (passes::isQuantize(node)) ++result.activationPairs;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& node = g.nodes[i];
    const bool layer =
        (node.opType == "Conv" || node.opType == "MatMul" || node.opType == "Gemm") &&
        node.inputs.size() >= 2 && g.initializers.count(node.inputs[1]);
    if (!layer || !readsDequantized(g, node)) continue;
    Node dq = weightDequantizer(g, node);
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), std::move(dq));
    ++i;
    ++result.weightDequantizers;
  }
  dropUnreadInitializers(g);
  for (const auto& [name, why] : decisions.fallbacks)
    result.floatLayers.push_back(name + ": " + why);
  KILN_ASSIGN_OR_RETURN(std::string bytes, exportOnnxBytes(network));
  const std::string summary = "int8 Q/DQ: " + std::to_string(result.weightDequantizers) +
                              " layers with per-channel int8 weights, " +
                              std::to_string(result.activationPairs) + " activation pairs, " +
                              std::to_string(result.floatLayers.size()) + " layers left float";
  KILN_ASSIGN_OR_RETURN(result.bytes,
                        withMetadata(bytes, "calibration cache '" + cacheName + "'", summary));
  return result;
}

}  // namespace kiln
