// ONNX nodes -> plugin layers: the importer's support check asks whether a plugin
// might serve an op, and after conversion every plugin node is created once (its
// attributes checked as fields) and given the INT8 scales of its Q/DQ neighbours.
#include <map>

#include "kiln/plugin_registry.h"
#include "ops/reference_ops.h"
#include "plugin/plugin_hooks.h"
#include "plugin/plugin_layer.h"

namespace kiln::onnx_import {
namespace {

// A scalar constant's value: an initializer or a Constant node's value.
const Tensor* constantTensor(const Graph& graph, const std::map<std::string, const Node*>& producer,
                             const std::string& name) {
  auto init = graph.initializers.find(name);
  if (init != graph.initializers.end()) return &init->second;
  auto it = producer.find(name);
  if (it != producer.end() && it->second->opType == "Constant")
    return it->second->attrTensor("value");
  return nullptr;
}

// The scale of a Q/DQ node (inputs x, scale, zero point) when the scale is a
// scalar constant and the zero point is absent or zero (Kiln's INT8 is symmetric).
float symmetricScale(const Graph& graph, const std::map<std::string, const Node*>& producer,
                     const Node& qdq) {
  if (!qdq.hasInput(1)) return 0.f;
  const Tensor* scale = constantTensor(graph, producer, qdq.inputs[1]);
  if (!scale || scale->numel() != 1 || !isFloatingPoint(scale->type())) return 0.f;
  if (qdq.hasInput(2)) {
    const Tensor* zero = constantTensor(graph, producer, qdq.inputs[2]);
    if (!zero || zero->type() != DataType::kInt8) return 0.f;
    for (int64_t i = 0; i < zero->numel(); ++i)
      if (zero->valueAsInt64(i) != 0) return 0.f;
  }
  return static_cast<float>(scale->valueAsDouble(0));
}

// Inputs made by a QuantizeLinear, outputs read only by DequantizeLinears of one scale.
std::vector<float> neighbourScales(const Graph& graph, const Node& node,
                                   const std::map<std::string, const Node*>& producer,
                                   const std::multimap<std::string, const Node*>& consumers) {
  std::vector<float> scales;
  for (const std::string& in : node.inputs) {
    auto it = producer.find(in);
    const bool quantized = it != producer.end() && it->second->opType == "QuantizeLinear";
    scales.push_back(quantized ? symmetricScale(graph, producer, *it->second) : 0.f);
  }
  for (const std::string& out : node.outputs) {
    float scale = 0.f;
    bool consistent = true;
    auto [begin, end] = consumers.equal_range(out);
    for (auto it = begin; it != end; ++it) {
      const float s = it->second->opType == "DequantizeLinear"
                          ? symmetricScale(graph, producer, *it->second)
                          : 0.f;
      consistent = consistent && s != 0.f && (scale == 0.f || scale == s);
      scale = s;
    }
    scales.push_back(consistent ? scale : 0.f);
  }
  return scales;
}

bool hasBuiltinKernel(const Node& node) {
  return ops::isKnownOp(node.domain, node.opType, node.opset);
}

void checkGraph(const Graph& graph, std::vector<std::string>* problems) {
  for (const Node& node : graph.nodes) {
    if (!hasBuiltinKernel(node)) {
      auto layer = PluginLayer::create(node);
      if (!layer.isOk()) problems->push_back(layer.status().message());
    }
    for (const auto& [key, attr] : node.attributes) {
      if (attr.g) checkGraph(*attr.g, problems);
      for (const auto& g : attr.graphs) checkGraph(*g, problems);
    }
  }
}

}  // namespace

bool pluginMayProvide(const std::string& opType) {
  for (const PluginCreatorInfo& info : registeredPlugins())
    if (info.name == opType) return true;
  return false;
}

Status mapPluginNodes(Network& network, bool check) {
  Graph& graph = network.graph;
  std::map<std::string, const Node*> producer;
  std::multimap<std::string, const Node*> consumers;
  for (const Node& node : graph.nodes) {
    for (const std::string& out : node.outputs) producer[out] = &node;
    for (const std::string& in : node.inputs)
      if (!in.empty()) consumers.emplace(in, &node);
  }
  std::map<size_t, std::vector<float>> scales;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (hasBuiltinKernel(node) || node.hasAttr(kPluginScalesAttribute)) continue;
    std::vector<float> s = neighbourScales(graph, node, producer, consumers);
    for (float v : s)
      if (v != 0.f) {
        scales[i] = std::move(s);
        break;
      }
  }
  for (auto& [index, values] : scales) {
    Attribute a;
    a.kind = Attribute::Kind::kFloats;
    a.floats = std::move(values);
    graph.nodes[index].attributes[kPluginScalesAttribute] = std::move(a);
  }
  if (!check) return Status::ok();
  std::vector<std::string> problems;
  checkGraph(graph, &problems);
  if (problems.empty()) return Status::ok();
  std::string message = std::to_string(problems.size()) + " plugin node" +
                        (problems.size() == 1 ? "" : "s") + " cannot be mapped: ";
  for (size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
  return invalidArgument(message);
}

}  // namespace kiln::onnx_import
