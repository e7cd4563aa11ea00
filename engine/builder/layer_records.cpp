// The descriptive half of a LayerRecord: TensorRT-style layer type, the tensors
// at the opt shapes, and the layer's parameters in words; and what of it a
// profiling verbosity keeps.
#include <algorithm>
#include <sstream>

#include "builder/build_steps.h"
#include "ir/channels_last.h"
#include "kiln/op_table.h"

namespace kiln::build {
namespace {

// TensorRT's layer type for `op` (the op table's row), or nullptr.
const char* layerTypeOf(const std::string& op) {
  const ops::OpRow* row = ops::findOp(op);
  return row && !row->tensorrtLayer.empty() ? row->tensorrtLayer.data() : nullptr;
}

}  // namespace

std::string attributeText(const Attribute& a, size_t maxLength) {
  std::ostringstream s;
  auto list = [&s](const auto& values) {
    s << "[";
    for (size_t i = 0; i < values.size(); ++i) s << (i ? "," : "") << values[i];
    s << "]";
  };
  switch (a.kind) {
    case Attribute::Kind::kFloat:
      s << a.f;
      break;
    case Attribute::Kind::kInt:
      s << a.i;
      break;
    case Attribute::Kind::kString:
      s << a.s;
      break;
    case Attribute::Kind::kFloats:
      list(a.floats);
      break;
    case Attribute::Kind::kInts:
      list(a.ints);
      break;
    case Attribute::Kind::kStrings:
      list(a.strings);
      break;
    case Attribute::Kind::kTensor:
      s << dataTypeName(a.t.type()) << "[" << shapeToString(a.t.shape()) << "]";
      break;
    case Attribute::Kind::kGraph:
      s << "subgraph '" << (a.g ? a.g->name : "") << "'";
      break;
    default:
      s << a.graphs.size() << " subgraphs";
      break;
  }
  std::string text = s.str();
  return text.size() > maxLength ? text.substr(0, maxLength - 3) + "..." : text;
}

namespace {

const Attribute* findAttribute(const Node& node, const char* key) {
  auto it = node.attributes.find(key);
  return it == node.attributes.end() ? nullptr : &it->second;
}

TensorRecord tensorRecord(const std::string& name, const ValueMetas& values,
                          DataType floatStorage) {
  TensorRecord t;
  t.name = name;
  auto it = values.find(name);
  if (it != values.end()) {
    if (it->second.shapeKnown) t.dimensions = it->second.shape;
    t.type = it->second.type == DataType::kFloat32 ? floatStorage : it->second.type;
  }
  return t;
}

}  // namespace

Status aboutLayer(const Status& status, const Node& node) {
  const Attribute* sources = findAttribute(node, kSourceNodesAttribute);
  if (!sources || sources->strings.empty())
    return status.withNodeOf(node).withLayer(node.displayName());
  return status.withNode(StatusNode{sources->strings.front(), -1, "", ""})
      .withLayer(node.displayName());
}

void describeLayer(const Network& network, const Node& node, const ValueMetas& values,
                   LayerRecord* layer) {
  layer->name = node.displayName();
  layer->opType = node.opType;
  const char* type = layerTypeOf(node.opType);
  layer->layerType = type ? type : node.opType;
  layer->sourceNodes = {node.displayName()};
  if (const Attribute* sources = findAttribute(node, kSourceNodesAttribute)) {
    layer->sourceNodes = sources->strings;
    layer->fusion = node.attrString(kFusionPassAttribute, "");
  }
  // A channels-last layer's activations are stored NHWC and recorded with those dims:
  // the format says so (the advisor and the studio read C from the last dim then).
  const ChannelsLastRoles roles =
      isChannelsLast(node) ? channelsLastRoles(node) : ChannelsLastRoles{};
  auto inRole = [](const std::vector<size_t>& slots, size_t slot) {
    return std::find(slots.begin(), slots.end(), slot) != slots.end();
  };
  for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
    const std::string& in = node.inputs[slot];
    if (in.empty()) continue;
    auto weight = network.graph.initializers.find(in);
    if (weight != network.graph.initializers.end()) {
      layer->parameters["weights " + in] = std::string(dataTypeName(weight->second.type())) +
                                           " x " + std::to_string(weight->second.numel());
    }
    layer->inputs.push_back(tensorRecord(in, values, layer->precision));
    if (inRole(roles.activationInputs, slot)) layer->inputs.back().format = kChannelsLastFormat;
  }
  for (size_t slot = 0; slot < node.outputs.size(); ++slot) {
    if (node.outputs[slot].empty()) continue;
    layer->outputs.push_back(tensorRecord(node.outputs[slot], values, layer->outputType));
    if (inRole(roles.activationOutputs, slot)) layer->outputs.back().format = kChannelsLastFormat;
  }
  for (const auto& [key, attr] : node.attributes) {
    if (key != kSourceNodesAttribute && key != kFusionPassAttribute)
      layer->parameters[key] = attributeText(attr, 120);
  }
}

void trimToVerbosity(ProfilingVerbosity verbosity, BuildRecord* record) {
  if (verbosity == ProfilingVerbosity::kDetailed) return;
  for (LayerRecord& layer : record->layers) {
    // Names only: what TensorRT's kLAYER_NAMES_ONLY keeps.
    LayerRecord kept;
    kept.name = layer.name;
    kept.layerType = layer.layerType;
    kept.opType = layer.opType;
    kept.precision = layer.precision;
    kept.outputType = layer.outputType;
    kept.memoryOffset = -1;
    layer = std::move(kept);
  }
  if (verbosity == ProfilingVerbosity::kNone) record->layers.clear();
}

}  // namespace kiln::build
