// PluginLayer: one plugin object for one node, on the host side of the ABI. Every
// call is checked: a non-zero return (with the plugin's getLastError()), an
// exception that the plugin's guard() caught, or a result that breaks the contract
// (output count, rank, unset or negative dimensions, unknown types) becomes a Status
// that names the node and the plugin. Nothing a plugin returns is trusted.
// Internal to kiln_engine (the CPU kernel, shape inference, the builder and the
// CUDA backend use it).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/plugin.h"
#include "kiln/plugin_registry.h"
#include "kiln/status.h"

namespace kiln {

plugin::Dims toPluginDims(const Shape& shape);
plugin::TensorDesc pluginTensorDesc(DataType type, const Shape& shape, float scale = 0.f,
                                    plugin::TensorFormat format = plugin::TensorFormat::kLinear);
// A descriptor whose range is one concrete shape (min == opt == max).
plugin::DynamicTensorDesc fixedTensorDesc(const plugin::TensorDesc& desc);
// The INT8 scales of the node's inputs then outputs (import annotates them); 0 where
// none is known.
std::vector<float> pluginTensorScales(const Node& node);
std::string pluginFormatName(plugin::TensorFormat format);

class PluginLayer {
 public:
  // Resolves the node's creator and creates the plugin: from its attributes (build
  // phase) or, for a plan's layer, from the serialized fields (runtime phase).
  static Result<std::unique_ptr<PluginLayer>> create(const Node& node);
  ~PluginLayer();
  PluginLayer(const PluginLayer&) = delete;
  PluginLayer& operator=(const PluginLayer&) = delete;

  const PluginCreatorInfo& info() const { return m_info; }
  // "plugin 'ns::Name' version 1": what every error of this layer names.
  const std::string& label() const { return m_label; }
  bool fromPlan() const { return m_fromPlan; }
  bool hasBuildCapability() const { return m_build != nullptr; }
  bool hasCpu() const;
  bool hasCuda() const;
  int outputCount() const { return m_outputCount; }

  Result<std::vector<DataType>> outputTypes(const std::vector<DataType>& inputTypes);
  Result<std::vector<SymbolicShape>> outputShapes(const std::vector<SymbolicShape>& inputs);
  // Concrete output shapes for concrete input shapes.
  Result<std::vector<Shape>> outputShapes(const std::vector<Shape>& inputs);

  // supportsFormatCombination() over every position of `inOut` (inputs, then
  // outputs): "" when the plugin takes all of them, else the first refusal in words.
  Result<std::string> refusedPosition(const std::vector<plugin::DynamicTensorDesc>& inOut,
                                      int nbInputs);
  Status configure(const std::vector<plugin::DynamicTensorDesc>& inputs,
                   const std::vector<plugin::DynamicTensorDesc>& outputs);
  size_t workspaceSize(const std::vector<plugin::DynamicTensorDesc>& inputs,
                       const std::vector<plugin::DynamicTensorDesc>& outputs) const;
  Status onShapeChange(const std::vector<plugin::TensorDesc>& inputs,
                       const std::vector<plugin::TensorDesc>& outputs);
  Status executeCpu(const std::vector<plugin::TensorDesc>& inputDescs,
                    const std::vector<plugin::TensorDesc>& outputDescs,
                    const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                    void* workspace);
  Status enqueue(const std::vector<plugin::TensorDesc>& inputDescs,
                 const std::vector<plugin::TensorDesc>& outputDescs,
                 const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                 void* workspace, void* stream);
  // The fields the plan keeps, as kiln_plugin_state:<name> attributes.
  Result<std::map<std::string, Attribute>> serializedState();

 private:
  PluginLayer() = default;
  // An error naming the node, the plugin, the call and the plugin's own message.
  Status failed(const std::string& call, int32_t code) const;
  Status broken(const std::string& what) const;  // a contract violation

  std::string m_where;  // node.describe()
  std::string m_label;
  PluginCreatorInfo m_info;
  bool m_fromPlan = false;
  int m_inputCount = 0;
  int m_outputCount = 0;
  plugin::IPlugin* m_plugin = nullptr;
  plugin::IPluginBuild* m_build = nullptr;
  plugin::IPluginRuntime* m_runtime = nullptr;
};

}  // namespace kiln
