// The shape rule of plugin layers: the plugin's getOutputDataTypes() and
// getOutputShapes() over the inputs' symbolic shapes.
#include "plugin/plugin_hooks.h"
#include "plugin/plugin_layer.h"

namespace kiln::shape {

bool pluginShapeRule(const Node& node, const std::vector<RuleInput>& inputs,
                     std::vector<RuleOutput>* outputs) {
  std::vector<DataType> types;
  std::vector<SymbolicShape> shapes;
  for (const RuleInput& in : inputs) {
    if (!in.present() || !in.info->hasShape || in.info->type == DataType::kUndefined) return false;
    types.push_back(in.info->type);
    shapes.push_back(in.info->shape);
  }
  auto layer = PluginLayer::create(node);
  if (!layer.isOk()) return false;
  auto outTypes = (*layer)->outputTypes(types);
  auto outShapes = (*layer)->outputShapes(shapes);
  if (!outTypes.isOk() || !outShapes.isOk()) return false;
  outputs->resize(node.outputs.size());
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    InferredValue& value = (*outputs)[i].info;
    value.type = (*outTypes)[i];
    value.hasShape = true;
    value.shape = (*outShapes)[i];
  }
  return true;
}

}  // namespace kiln::shape
