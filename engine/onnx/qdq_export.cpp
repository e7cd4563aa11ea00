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
#include "passes/fusion_passes.h"
#include "passes/pass.h"
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

// Each INT8 convolution followed by an inference-mode BatchNormalization that reads its
// output alone becomes one convolution with the BN folded into its float weights and bias
// (fold_batch_norm's arithmetic), before the weights are quantized: as an implicit INT8
// build folds them, so the export's layers are the plan's; quantized weights could not
// take a BN any more. The convolution keeps its name and takes the BN's output name.
int foldBatchNormsIntoQuantizedConvs(Graph& g) {
  const passes::GraphIndex index(g);
  std::vector<int> removed;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& conv = g.nodes[i];
    if (conv.opType != "Conv" || !conv.domain.empty() || conv.inputs.size() < 2 ||
        conv.outputs.size() != 1 || !g.initializers.count(conv.inputs[1]) ||
        !readsDequantized(g, conv))
      continue;
    const int at = index.soleReader(conv.outputs[0]);
    if (at < 0 || g.nodes[at].opType != "BatchNormalization" || !g.nodes[at].domain.empty())
      continue;
    const Node& bn = g.nodes[at];
    Tensor w, b;
    if (bn.inputs.empty() || bn.inputs[0] != conv.outputs[0] ||
        !passes::foldBatchNormWeights(conv, bn, index, &w, &b))
      continue;
    const std::string wName = freshValueName(g, conv.inputs[1] + "_bnfolded");
    g.initializers[wName] = std::move(w);
    const std::string bName = freshValueName(g, conv.inputs[1] + "_bnfolded_bias");
    g.initializers[bName] = std::move(b);
    conv.inputs.resize(3);
    conv.inputs[1] = wName;
    conv.inputs[2] = bName;
    conv.outputs = {bn.outputs[0]};
    removed.push_back(at);
  }
  std::sort(removed.rbegin(), removed.rend());
  for (int at : removed) g.nodes.erase(g.nodes.begin() + at);
  return static_cast<int>(removed.size());
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

constexpr float kFp8Max = 448.0f;  // the largest finite E4M3FN value

Tensor fp8Zero() {
  Tensor zero(DataType::kFp8E4M3, {});
  zero.data<uint8_t>()[0] = 0;
  return zero;
}

// A float8e4m3fn DequantizeLinear with one per-tensor scale (max |w| / 448) in front
// of the GEMM's float weight; returns the node to insert.
Node fp8WeightDequantizer(Graph& g, Node& layer) {
  const std::string w = layer.inputs[1];
  const Tensor& weight = g.initializers.at(w);
  float amax = 0;
  for (int64_t i = 0; i < weight.numel(); ++i)
    amax = std::max(amax, std::fabs(weight.data<float>()[i]));
  const float scale = amax > 0 ? amax / kFp8Max : 1.0f;
  Tensor scaled(DataType::kFloat32, weight.shape());
  for (int64_t i = 0; i < weight.numel(); ++i)
    scaled.data<float>()[i] = weight.data<float>()[i] / scale;
  Node dq;
  dq.opType = "DequantizeLinear";
  dq.name = layer.name + "_weight_DQ";
  dq.inputs = {passes::addInitializer(g, w + "_fp8", castTensor(scaled, DataType::kFp8E4M3)),
               passes::addInitializer(g, w + "_fp8_scale", Tensor::scalarFloat(scale)),
               passes::addInitializer(g, w + "_fp8_zero", fp8Zero())};
  dq.outputs = {freshValueName(g, w + "_dequantized")};
  dq.index = layer.index;
  layer.inputs[1] = dq.outputs[0];
  return dq;
}

bool isGemmWithConstantWeights(const Graph& g, const Node& node) {
  return (node.opType == "MatMul" || node.opType == "Gemm") && node.inputs.size() >= 2 &&
         g.initializers.count(node.inputs[1]);
}

// The activation pairs the INT8 rules inserted, made FP8 where every reader of the DQ is
// a GEMM with constant weights (scale amax/448 from the int8 scale amax/127), and taken
// out elsewhere (their readers read the float value again, and are listed).
void convertPairsToFp8(Graph& g, QdqExportResult* result) {
  std::set<size_t> removed;
  for (size_t qi = 0; qi < g.nodes.size(); ++qi) {
    Node& q = g.nodes[qi];
    if (!passes::isQuantize(q)) continue;
    std::vector<size_t> dqs;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (passes::isDequantize(g.nodes[i]) && g.nodes[i].inputs[0] == q.outputs[0])
        dqs.push_back(i);
    std::vector<Node*> readers;
    for (size_t d : dqs)
      for (Node& node : g.nodes)
        if (std::find(node.inputs.begin(), node.inputs.end(), g.nodes[d].outputs[0]) !=
            node.inputs.end())
          readers.push_back(&node);
    const bool gemmsOnly = !dqs.empty() && !readers.empty() &&
                           std::all_of(readers.begin(), readers.end(), [&](const Node* n) {
                             return isGemmWithConstantWeights(g, *n) && !passes::isDequantize(*n);
                           });
    if (gemmsOnly) {
      const float int8Scale = g.initializers.at(q.inputs[1]).data<float>()[0];
      const std::string scale = passes::addInitializer(
          g, q.inputs[0] + "_fp8_scale", Tensor::scalarFloat(int8Scale * 127.0f / kFp8Max));
      const std::string zero = passes::addInitializer(g, q.inputs[0] + "_fp8_zero", fp8Zero());
      q.inputs = {q.inputs[0], scale, zero};
      for (size_t d : dqs) g.nodes[d].inputs = {g.nodes[d].inputs[0], scale, zero};
      ++result->activationPairs;
      continue;
    }
    for (size_t d : dqs) {
      for (Node& node : g.nodes)
        for (std::string& in : node.inputs)
          if (in == g.nodes[d].outputs[0]) in = g.nodes[qi].inputs[0];
      removed.insert(d);
    }
    for (const Node* reader : readers) {
      const std::string line =
          reader->displayName() + ": FP8 Q/DQ is written for MatMul/Gemm layers only";
      if (std::find(result->floatLayers.begin(), result->floatLayers.end(), line) ==
          result->floatLayers.end())
        result->floatLayers.push_back(line);
    }
    removed.insert(qi);
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!removed.count(i)) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
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

CalibrationTable calibrationFollowingPlan(const CalibrationTable& table, const BuildRecord& record,
                                          const Network& network) {
  std::set<std::string> quantizedNodes;
  for (const LayerRecord& layer : record.layers)
    if (layer.precision == DataType::kInt8 || layer.precision == DataType::kFp8E4M3)
      quantizedNodes.insert(layer.sourceNodes.begin(), layer.sourceNodes.end());
  std::set<std::string> keep, pin;  // input tensors of quantized / float layers
  for (const Node& node : network.graph.nodes) {
    if ((node.opType != "Conv" && node.opType != "MatMul" && node.opType != "Gemm") ||
        node.inputs.empty())
      continue;
    (quantizedNodes.count(node.displayName()) ? keep : pin).insert(node.inputs[0]);
  }
  CalibrationTable out = table;
  for (const std::string& tensor : pin) {
    if (keep.count(tensor)) continue;
    auto it = out.tensors.find(tensor);
    if (it != out.tensors.end() && it->second.pinned == DataType::kUndefined)
      it->second.pinned = DataType::kFloat32;
  }
  return out;
}

Result<QdqExportResult> exportQdqOnnx(const std::string& modelPath, const CalibrationTable& table,
                                      const std::string& cacheName, QdqFormat format,
                                      int minConvChannels) {
  const bool fp8 = format == QdqFormat::kFp8;
  ImportOptions importOptions;
  importOptions.checkSupport = false;
  KILN_ASSIGN_OR_RETURN(Network network, importOnnxFile(modelPath, importOptions));
  if (fp8 && network.defaultOpset() < 19)
    return unsupported(modelPath + ": float8 QuantizeLinear/DequantizeLinear need ai.onnx " +
                       "opset 19; the model has " + std::to_string(network.defaultOpset()) +
                       " (export it again with opset_version=19)");
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
  // FP8 leaves every convolution float anyway (convertPairsToFp8 says why).
  KILN_RETURN_IF_ERROR_CTX(
      build::insertCalibratedQdq(network, config, &decisions, fp8 ? 0 : minConvChannels),
      modelPath);
  QdqExportResult result;
  for (Node& node : g.nodes) {
    node.attributes.erase(passes::kCalibratedQuantizeAttribute);  // Kiln's mark, not ONNX's
    if (!fp8 && passes::isQuantize(node)) ++result.activationPairs;
  }
  if (fp8) convertPairsToFp8(g, &result);
  result.foldedBatchNorms = foldBatchNormsIntoQuantizedConvs(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& node = g.nodes[i];
    const bool layer =
        (node.opType == "Conv" || node.opType == "MatMul" || node.opType == "Gemm") &&
        node.inputs.size() >= 2 && g.initializers.count(node.inputs[1]);
    if (!layer || !readsDequantized(g, node)) continue;
    Node dq = fp8 ? fp8WeightDequantizer(g, node) : weightDequantizer(g, node);
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), std::move(dq));
    ++i;
    ++result.weightDequantizers;
  }
  dropUnreadInitializers(g);
  for (const auto& [name, why] : decisions.fallbacks)
    result.floatLayers.push_back(name + ": " + why);
  KILN_ASSIGN_OR_RETURN(std::string bytes, exportOnnxBytes(network));
  const std::string summary =
      std::string(fp8 ? "fp8 e4m3 Q/DQ: " : "int8 Q/DQ: ") +
      std::to_string(result.weightDequantizers) +
      (fp8 ? " GEMMs with per-tensor fp8 weights, " : " layers with per-channel int8 weights, ") +
      std::to_string(result.activationPairs) + " activation pairs, " +
      std::to_string(result.floatLayers.size()) + " layers left float";
  KILN_ASSIGN_OR_RETURN(result.bytes,
                        withMetadata(bytes, "calibration cache '" + cacheName + "'", summary));
  return result;
}

}  // namespace kiln
