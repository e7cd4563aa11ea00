#include "builder/plugin_layers.h"

#include <algorithm>

#include "kiln/plugin_registry.h"
#include "kiln/shape_inference.h"
#include "plugin/plugin_layer.h"

namespace kiln::build {
namespace {

// Concrete shapes of every value at one point of a profile (min, opt or max).
using ShapesAt = std::map<std::string, Shape>;

Result<ShapesAt> shapesAt(const Network& network, const std::map<std::string, Shape>& inputs) {
  KILN_ASSIGN_OR_RETURN(ShapeInferenceResult inferred, inferShapes(network, inputs));
  ShapesAt out;
  for (const auto& [name, value] : inferred.values) {
    if (!value.hasShape) continue;
    Shape shape;
    for (const DimExpr& d : value.shape) shape.push_back(d.evaluate().value_or(-1));
    out[name] = shape;
  }
  return out;
}

// The min, opt and max shapes of the profile's inputs (one point when no profile).
std::vector<std::map<std::string, Shape>> profilePoints(const OptimizationProfile& profile) {
  std::vector<std::map<std::string, Shape>> points(3);
  for (const auto& [name, range] : profile.inputs) {
    points[0][name] = range.min;
    points[1][name] = range.opt;
    points[2][name] = range.max;
  }
  return points;
}

Shape shapeOr(const ShapesAt& shapes, const std::string& name, const Shape& fallback) {
  auto it = shapes.find(name);
  return it == shapes.end() ? fallback : it->second;
}

plugin::DynamicTensorDesc rangeDesc(DataType type, float scale, const Shape& min, const Shape& opt,
                                    const Shape& max) {
  plugin::DynamicTensorDesc d = fixedTensorDesc(pluginTensorDesc(type, opt, scale));
  d.min = toPluginDims(min);
  d.max = toPluginDims(max);
  for (int32_t i = 0; i < d.desc.dims.nbDims; ++i)
    if (i >= d.min.nbDims || i >= d.max.nbDims || d.min.d[i] != d.max.d[i]) d.desc.dims.d[i] = -1;
  return d;
}

// The type a value has inside the layer: float32 becomes the layer's precision.
DataType layerType(DataType modelType, DataType precision) {
  return modelType == DataType::kFloat32 ? precision : modelType;
}

// A declared static dimension that the plugin's output contradicts is an error.
Status checkDeclaredShape(const Network& network, const Node& node, const ValueMetas& metas,
                          const std::string& label) {
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const ValueInfo* declared = network.graph.findValueInfo(node.outputs[i]);
    auto meta = metas.find(node.outputs[i]);
    if (!declared || !declared->hasShape || meta == metas.end() || !meta->second.shapeKnown)
      continue;
    const Shape& actual = meta->second.shape;
    bool agrees = declared->shape.size() == actual.size();
    for (size_t d = 0; agrees && d < actual.size(); ++d)
      agrees = !declared->shape[d].isConst() || declared->shape[d].constValue() == actual[d];
    if (!agrees) {
      return invalidArgument(node.describe() + ": " + label + " gives output " + std::to_string(i) +
                             " '" + node.outputs[i] + "' the shape " + shapeToString(actual) +
                             ", the model declares " + symbolicShapeToString(declared->shape))
          .withNodeOf(node)
          .withTensor(node.outputs[i]);
    }
  }
  return Status::ok();
}

// Configures one layer with each profile and returns the largest workspace.
Result<int64_t> configureLayer(PluginLayer& layer, const Node& node,
                               const std::vector<std::vector<ShapesAt>>& points,
                               const ValueMetas& metas, DataType precision) {
  const std::vector<float> scales = pluginTensorScales(node);
  int64_t workspace = 0;
  for (const std::vector<ShapesAt>& profile : points) {
    std::vector<plugin::DynamicTensorDesc> inputs, outputs;
    std::vector<Shape> inMin, inMax;
    std::vector<DataType> inTypes;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueMeta& meta = metas.at(node.inputs[i]);
      const Shape min = shapeOr(profile[0], node.inputs[i], meta.shape);
      const Shape max = shapeOr(profile[2], node.inputs[i], meta.shape);
      inMin.push_back(min);
      inMax.push_back(max);
      inTypes.push_back(layerType(meta.type, precision));
      inputs.push_back(rangeDesc(inTypes.back(), scales[i], min,
                                 shapeOr(profile[1], node.inputs[i], meta.shape), max));
    }
    KILN_ASSIGN_OR_RETURN(std::vector<DataType> outTypes, layer.outputTypes(inTypes));
    KILN_ASSIGN_OR_RETURN(std::vector<Shape> outMin, layer.outputShapes(inMin));
    KILN_ASSIGN_OR_RETURN(std::vector<Shape> outMax, layer.outputShapes(inMax));
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const Shape opt = shapeOr(profile[1], node.outputs[i], metas.at(node.outputs[i]).shape);
      outputs.push_back(
          rangeDesc(outTypes[i], scales[node.inputs.size() + i], outMin[i], opt, outMax[i]));
    }
    std::vector<plugin::DynamicTensorDesc> all = inputs;
    all.insert(all.end(), outputs.begin(), outputs.end());
    KILN_ASSIGN_OR_RETURN(std::string refused,
                          layer.refusedPosition(all, static_cast<int>(inputs.size())));
    if (!refused.empty())
      return nodeStatus(StatusCode::kUnsupported, node,
                        layer.label() + " does not take " + refused);
    KILN_RETURN_IF_ERROR(layer.configure(inputs, outputs));
    workspace = std::max(workspace, static_cast<int64_t>(layer.workspaceSize(inputs, outputs)));
  }
  return workspace;
}

}  // namespace

Status finishPluginLayers(Network& network, const std::vector<OptimizationProfile>& profiles,
                          const ValueMetas& metas, BuildRecord* record) {
  std::vector<std::vector<ShapesAt>> points;  // per profile: shapes at min, opt, max
  bool shapesKnown = false;
  for (size_t i = 0; i < network.graph.nodes.size(); ++i) {
    Node& node = network.graph.nodes[i];
    if (!isPluginNode(node)) continue;
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<PluginLayer> layer, PluginLayer::create(node));
    if (!shapesKnown) {
      for (const OptimizationProfile& profile : profiles) {
        std::vector<ShapesAt> at;
        for (const auto& inputs : profilePoints(profile)) {
          KILN_ASSIGN_OR_RETURN(ShapesAt shapes, shapesAt(network, inputs));
          at.push_back(std::move(shapes));
        }
        points.push_back(std::move(at));
      }
      if (points.empty()) points.push_back(std::vector<ShapesAt>(3));  // the opt shapes only
      shapesKnown = true;
    }
    for (const std::string& name : node.inputs) {
      auto meta = metas.find(name);
      if (name.empty() || meta == metas.end() || !meta->second.shapeKnown)
        return invalidArgument(node.describe() + ": " + layer->label() + ": input '" + name +
                               "' has no known shape at the opt shapes")
            .withNodeOf(node)
            .withTensor(name);
    }
    LayerRecord& layerRecord = record->layers.at(i);
    KILN_RETURN_IF_ERROR(checkDeclaredShape(network, node, metas, layer->label()));
    KILN_ASSIGN_OR_RETURN(int64_t workspace,
                          configureLayer(*layer, node, points, metas, layerRecord.precision));
    KILN_ASSIGN_OR_RETURN(auto state, layer->serializedState());
    const PluginCreatorInfo& info = layer->info();
    layerRecord.layerType = "Plugin";
    layerRecord.workspaceBytes = std::max(layerRecord.workspaceBytes, workspace);
    layerRecord.parameters["plugin"] = info.displayName();
    layerRecord.parameters["plugin library"] = info.library.empty() ? "(static)" : info.library;
    layerRecord.parameters["plugin serialized fields"] = std::to_string(state.size());
    for (auto& [key, attr] : state) node.attributes[key] = std::move(attr);
    auto text = [](const std::string& s) {
      Attribute a;
      a.kind = Attribute::Kind::kString;
      a.s = s;
      return a;
    };
    node.attributes[kPluginNameAttribute] = text(info.name);
    node.attributes[kPluginVersionAttribute] = text(info.version);
    node.attributes[kPluginNamespaceAttribute] = text(info.pluginNamespace);
    node.attributes[kPluginLibraryAttribute] = text(info.library);
  }
  return Status::ok();
}

}  // namespace kiln::build
