#include "plugin/plugin_layer.h"

#include "plugin/dim_expr_builder.h"
#include "plugin/plugin_fields.h"

namespace kiln {
namespace {

std::string typeList(const std::vector<plugin::DynamicTensorDesc>& descs, size_t pos) {
  const plugin::TensorDesc& d = descs[pos].desc;
  return std::string(dataTypeName(fromPluginType(d.type))) + " " + pluginFormatName(d.format);
}

}  // namespace

plugin::Dims toPluginDims(const Shape& shape) {
  plugin::Dims dims;
  dims.nbDims = static_cast<int32_t>(std::min<size_t>(shape.size(), plugin::kMaxDims));
  for (int32_t i = 0; i < dims.nbDims; ++i) dims.d[i] = shape[i];
  return dims;
}

plugin::TensorDesc pluginTensorDesc(DataType type, const Shape& shape, float scale,
                                    plugin::TensorFormat format) {
  plugin::TensorDesc desc;
  desc.dims = toPluginDims(shape);
  if (!toPluginType(type, &desc.type)) desc.type = static_cast<plugin::DataType>(0);
  desc.format = format;
  desc.scale = scale;
  return desc;
}

plugin::DynamicTensorDesc fixedTensorDesc(const plugin::TensorDesc& desc) {
  plugin::DynamicTensorDesc out;
  out.desc = desc;
  out.min = out.opt = out.max = desc.dims;
  return out;
}

std::vector<float> pluginTensorScales(const Node& node) {
  std::vector<float> scales = node.attrFloats(kPluginScalesAttribute);
  scales.resize(node.inputs.size() + node.outputs.size(), 0.f);
  return scales;
}

std::string pluginFormatName(plugin::TensorFormat format) {
  switch (format) {
    case plugin::TensorFormat::kLinear:
      return "linear";
    case plugin::TensorFormat::kChannelsLast:
      return "channels-last";
  }
  return "format " + std::to_string(static_cast<int32_t>(format));
}

Result<std::unique_ptr<PluginLayer>> PluginLayer::create(const Node& node) {
  KILN_ASSIGN_OR_RETURN(ResolvedPlugin resolved, resolvePlugin(node));
  std::unique_ptr<PluginLayer> layer(new PluginLayer());
  layer->m_where = node.describe();
  layer->m_info = resolved.info;
  layer->m_label = "plugin '" +
                   (resolved.info.pluginNamespace.empty()
                        ? resolved.info.name
                        : resolved.info.pluginNamespace + "::" + resolved.info.name) +
                   "' version " + resolved.info.version;
  layer->m_fromPlan = resolved.fromPlan;
  layer->m_inputCount = static_cast<int>(node.inputs.size());
  const plugin::Phase phase = resolved.fromPlan ? plugin::Phase::kRuntime : plugin::Phase::kBuild;
  auto fields = resolved.fromPlan
                    ? fieldsFromPlanState(node)
                    : fieldsFromAttributes(node, resolved.creator->getFieldNames(), layer->m_label);
  if (!fields.isOk()) return fields.status();
  plugin::IPlugin* created =
      resolved.creator->createPlugin(node.displayName().c_str(), fields->collection(), phase);
  if (!created) {
    return invalidArgument(layer->m_where + ": " + layer->m_label +
                           " could not be created: " + safeText(resolved.creator->getLastError()));
  }
  layer->m_plugin = created;
  if (created->getInterfaceVersion() != plugin::kPluginApiVersion)
    return layer->broken("it was built for plugin API version " +
                         std::to_string(created->getInterfaceVersion()));
  layer->m_build = created->getBuildCapability();
  layer->m_runtime = created->getRuntimeCapability();
  if (!layer->m_runtime) return layer->broken("it has no runtime capability");
  if (phase == plugin::Phase::kBuild && !layer->m_build)
    return layer->broken("it has no build capability in the build phase");
  layer->m_outputCount = created->getNbOutputs();
  if (layer->m_outputCount != static_cast<int>(node.outputs.size())) {
    return layer->broken("it has " + std::to_string(layer->m_outputCount) +
                         " outputs, the node has " + std::to_string(node.outputs.size()));
  }
  return layer;
}

PluginLayer::~PluginLayer() {
  if (m_plugin) m_plugin->destroy();
}

bool PluginLayer::hasCpu() const {
  return m_runtime->hasCpuImplementation();
}

bool PluginLayer::hasCuda() const {
  return m_runtime->hasCudaImplementation();
}

Status PluginLayer::failed(const std::string& call, int32_t code) const {
  std::string message = safeText(m_plugin ? m_plugin->getLastError() : nullptr);
  if (message.empty()) message = "no message";
  const std::string kind = code == plugin::kStatusException ? "threw" : "failed";
  return Status(
      code == plugin::kStatusUnsupported ? StatusCode::kUnsupported : StatusCode::kInvalidArgument,
      m_where + ": " + m_label + " " + call + " " + kind + ": " + message + " (code " +
          std::to_string(code) + ")");
}

Status PluginLayer::broken(const std::string& what) const {
  return invalidArgument(m_where + ": " + m_label + ": " + what);
}

Result<std::vector<DataType>> PluginLayer::outputTypes(const std::vector<DataType>& inputTypes) {
  std::vector<plugin::DataType> in(inputTypes.size());
  for (size_t i = 0; i < inputTypes.size(); ++i) {
    if (!toPluginType(inputTypes[i], &in[i]))
      return Status(StatusCode::kUnsupported,
                    m_where + ": " + m_label + ": input " + std::to_string(i) + " is " +
                        dataTypeName(inputTypes[i]) + ", a type plugins cannot take");
  }
  std::vector<plugin::DataType> out(m_outputCount, static_cast<plugin::DataType>(0));
  const int32_t code = m_plugin->getOutputDataTypes(out.data(), m_outputCount, in.data(),
                                                    static_cast<int32_t>(in.size()));
  if (code != plugin::kStatusSuccess) return failed("getOutputDataTypes()", code);
  std::vector<DataType> types;
  for (int i = 0; i < m_outputCount; ++i) {
    const DataType t = fromPluginType(out[i]);
    if (t == DataType::kUndefined)
      return broken("getOutputDataTypes() gave output " + std::to_string(i) +
                    " the unknown type code " + std::to_string(static_cast<int32_t>(out[i])));
    types.push_back(t);
  }
  return types;
}

Result<std::vector<SymbolicShape>> PluginLayer::outputShapes(
    const std::vector<SymbolicShape>& inputs) {
  DimExprBuilder builder;
  std::vector<plugin::DimsExprs> in(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].size() > static_cast<size_t>(plugin::kMaxDims))
      return Status(StatusCode::kUnsupported,
                    m_where + ": " + m_label + ": input " + std::to_string(i) + " has rank " +
                        std::to_string(inputs[i].size()) + " (plugins take at most " +
                        std::to_string(plugin::kMaxDims) + ")");
    in[i].nbDims = static_cast<int32_t>(inputs[i].size());
    for (size_t d = 0; d < inputs[i].size(); ++d) in[i].d[d] = builder.wrap(inputs[i][d]);
  }
  std::vector<plugin::DimsExprs> out(m_outputCount);
  for (plugin::DimsExprs& o : out) o.nbDims = -1;
  const int32_t code = m_plugin->getOutputShapes(in.data(), static_cast<int32_t>(in.size()),
                                                 out.data(), m_outputCount, builder);
  if (code != plugin::kStatusSuccess) return failed("getOutputShapes()", code);
  if (!builder.error().empty()) return broken("getOutputShapes(): " + builder.error());
  std::vector<SymbolicShape> shapes;
  for (int i = 0; i < m_outputCount; ++i) {
    const std::string which = "getOutputShapes() output " + std::to_string(i);
    if (out[i].nbDims < 0 || out[i].nbDims > plugin::kMaxDims)
      return broken(which + " has rank " + std::to_string(out[i].nbDims) + " (allowed 0.." +
                    std::to_string(plugin::kMaxDims) + ")");
    SymbolicShape shape;
    for (int32_t d = 0; d < out[i].nbDims; ++d) {
      auto dim = builder.unwrap(out[i].d[d]);
      if (!dim.isOk())
        return broken(which + " dim " + std::to_string(d) + ": " + dim.status().message());
      if (dim->isConst() && dim->constValue() < 0)
        return broken(which + " dim " + std::to_string(d) + " is negative (" +
                      std::to_string(dim->constValue()) + ")");
      shape.push_back(*dim);
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

Result<std::vector<Shape>> PluginLayer::outputShapes(const std::vector<Shape>& inputs) {
  std::vector<SymbolicShape> symbolic;
  for (const Shape& s : inputs) symbolic.push_back(SymbolicShape(s.begin(), s.end()));
  KILN_ASSIGN_OR_RETURN(std::vector<SymbolicShape> out, outputShapes(symbolic));
  std::vector<Shape> shapes;
  for (size_t i = 0; i < out.size(); ++i) {
    Shape shape;
    for (size_t d = 0; d < out[i].size(); ++d) {
      if (!out[i][d].isConst())
        return broken("getOutputShapes() output " + std::to_string(i) + " dim " +
                      std::to_string(d) + " (" + out[i][d].toString() +
                      ") does not follow from the input dimensions");
      shape.push_back(out[i][d].constValue());
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

Result<std::string> PluginLayer::refusedPosition(
    const std::vector<plugin::DynamicTensorDesc>& inOut, int nbInputs) {
  if (!m_build) return std::string();  // a plan's layer: the builder already chose
  const int32_t nbOutputs = static_cast<int32_t>(inOut.size()) - nbInputs;
  for (size_t pos = 0; pos < inOut.size(); ++pos) {
    if (!m_build->supportsFormatCombination(static_cast<int32_t>(pos), inOut.data(), nbInputs,
                                            nbOutputs)) {
      const bool input = static_cast<int>(pos) < nbInputs;
      return std::string(input ? "input " : "output ") +
             std::to_string(input ? pos : pos - nbInputs) + " as " + typeList(inOut, pos);
    }
  }
  return std::string();
}

Status PluginLayer::configure(const std::vector<plugin::DynamicTensorDesc>& inputs,
                              const std::vector<plugin::DynamicTensorDesc>& outputs) {
  if (!m_build) return Status::ok();
  const int32_t code =
      m_build->configurePlugin(inputs.data(), static_cast<int32_t>(inputs.size()), outputs.data(),
                               static_cast<int32_t>(outputs.size()));
  return code == plugin::kStatusSuccess ? Status::ok() : failed("configurePlugin()", code);
}

size_t PluginLayer::workspaceSize(const std::vector<plugin::DynamicTensorDesc>& inputs,
                                  const std::vector<plugin::DynamicTensorDesc>& outputs) const {
  return m_runtime->getWorkspaceSize(inputs.data(), static_cast<int32_t>(inputs.size()),
                                     outputs.data(), static_cast<int32_t>(outputs.size()));
}

Status PluginLayer::onShapeChange(const std::vector<plugin::TensorDesc>& inputs,
                                  const std::vector<plugin::TensorDesc>& outputs) {
  const int32_t code =
      m_runtime->onShapeChange(inputs.data(), static_cast<int32_t>(inputs.size()), outputs.data(),
                               static_cast<int32_t>(outputs.size()));
  return code == plugin::kStatusSuccess ? Status::ok() : failed("onShapeChange()", code);
}

Status PluginLayer::executeCpu(const std::vector<plugin::TensorDesc>& inputDescs,
                               const std::vector<plugin::TensorDesc>& outputDescs,
                               const std::vector<const void*>& inputs,
                               const std::vector<void*>& outputs, void* workspace) {
  if (!hasCpu())
    return Status(StatusCode::kUnsupported,
                  m_where + ": " + m_label + " has no CPU implementation");
  const int32_t code = m_runtime->executeCpu(inputDescs.data(), outputDescs.data(), inputs.data(),
                                             outputs.data(), workspace);
  return code == plugin::kStatusSuccess ? Status::ok() : failed("executeCpu()", code);
}

Status PluginLayer::enqueue(const std::vector<plugin::TensorDesc>& inputDescs,
                            const std::vector<plugin::TensorDesc>& outputDescs,
                            const std::vector<const void*>& inputs,
                            const std::vector<void*>& outputs, void* workspace, void* stream) {
  if (!hasCuda())
    return Status(StatusCode::kUnsupported,
                  m_where + ": " + m_label + " has no CUDA implementation");
  const int32_t code = m_runtime->enqueue(inputDescs.data(), outputDescs.data(), inputs.data(),
                                          outputs.data(), workspace, stream);
  return code == plugin::kStatusSuccess ? Status::ok() : failed("enqueue()", code);
}

Result<std::map<std::string, Attribute>> PluginLayer::serializedState() {
  if (!m_build) return broken("a plan's layer cannot be serialized again");
  return stateAttributes(m_build->getFieldsToSerialize(), m_where + ": " + m_label);
}

}  // namespace kiln
