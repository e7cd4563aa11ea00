// The GPU side of plugin layers. The plugin object lives in the layer state of the
// execution context (one per context, so concurrent contexts never share one); it is
// created, format-checked, configured and told the shapes when the input shapes
// change, then each enqueue hands it device pointers, scratch and the stream.
#include "backends/cuda/ops/plugin_kernel.h"

#include "kiln/plugin_registry.h"
#include "plugin/plugin_layer.h"

namespace kiln::cuda {
namespace {

struct PluginState {
  std::unique_ptr<PluginLayer> layer;
  std::vector<plugin::TensorDesc> inputs, outputs;
  std::vector<DataType> outputTypes;
  std::vector<Shape> outputShapes;
  size_t workspaceBytes = 0;
};

bool isFloatStorage(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

Result<std::shared_ptr<PluginState>> preparePlugin(GpuKernelContext& ctx) {
  const Node& node = ctx.node();
  auto state = std::make_shared<PluginState>();
  KILN_ASSIGN_OR_RETURN(state->layer, PluginLayer::create(node));
  PluginLayer& layer = *state->layer;
  std::vector<DataType> inTypes;
  std::vector<Shape> inShapes;
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    if (!ctx.hasInput(i))
      return ctx.error("plugin layers take every input (input " + std::to_string(i) +
                       " is omitted)");
    inTypes.push_back(ctx.input(i).type);
    inShapes.push_back(ctx.input(i).shape);
  }
  KILN_ASSIGN_OR_RETURN(state->outputTypes, layer.outputTypes(inTypes));
  KILN_ASSIGN_OR_RETURN(state->outputShapes, layer.outputShapes(inShapes));
  for (size_t i = 0; i < state->outputTypes.size(); ++i) {
    const DataType t = state->outputTypes[i];
    if (isFloatStorage(t) && t != ctx.floatType())
      return ctx.unsupported(layer.label() + " gives output " + std::to_string(i) + " as " +
                             dataTypeName(t) + " where the engine stores " +
                             dataTypeName(ctx.floatType()));
  }
  const std::vector<float> scales = pluginTensorScales(node);
  std::vector<plugin::DynamicTensorDesc> all, ins, outs;
  for (size_t i = 0; i < inTypes.size(); ++i) {
    state->inputs.push_back(pluginTensorDesc(inTypes[i], inShapes[i], scales[i]));
    ins.push_back(fixedTensorDesc(state->inputs.back()));
  }
  for (size_t i = 0; i < state->outputTypes.size(); ++i) {
    state->outputs.push_back(pluginTensorDesc(state->outputTypes[i], state->outputShapes[i],
                                              scales[inTypes.size() + i]));
    outs.push_back(fixedTensorDesc(state->outputs.back()));
  }
  all = ins;
  all.insert(all.end(), outs.begin(), outs.end());
  KILN_ASSIGN_OR_RETURN(std::string refused,
                        layer.refusedPosition(all, static_cast<int>(ins.size())));
  if (!refused.empty())
    return ctx.unsupported(layer.label() + " does not take " + refused + " on the GPU");
  KILN_RETURN_IF_ERROR(layer.configure(ins, outs));
  KILN_RETURN_IF_ERROR(layer.onShapeChange(state->inputs, state->outputs));
  state->workspaceBytes = layer.workspaceSize(ins, outs);
  return state;
}

Status runPluginOnGpu(GpuKernelContext& ctx) {
  std::shared_ptr<void>& slot = ctx.layerState();
  if (!slot) {
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<PluginState> prepared, preparePlugin(ctx));
    slot = prepared;
  }
  auto& state = *static_cast<PluginState*>(slot.get());
  std::vector<const void*> inputs;
  for (size_t i = 0; i < ctx.inputCount(); ++i) inputs.push_back(ctx.input(i).data);
  std::vector<void*> outputs;
  for (size_t i = 0; i < state.outputTypes.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(DeviceTensor out,
                          ctx.allocateOutput(i, state.outputTypes[i], state.outputShapes[i]));
    outputs.push_back(out.data);
  }
  void* workspace = nullptr;
  if (state.workspaceBytes > 0) {
    KILN_ASSIGN_OR_RETURN(workspace, ctx.workspace(state.workspaceBytes));
  }
  KILN_RETURN_IF_ERROR(
      state.layer->enqueue(state.inputs, state.outputs, inputs, outputs, workspace, ctx.stream()));
  const PluginCreatorInfo& info = state.layer->info();
  ctx.setImplementation(state.layer->label() + " enqueue" +
                        (info.library.empty() ? "" : " (" + info.library + ")"));
  return Status::ok();
}

std::string pluginGpuSupport(const Node& node, const std::vector<DataType>&) {
  auto layer = PluginLayer::create(node);
  if (!layer.isOk()) return layer.status().message();
  if (!(*layer)->hasCuda()) return (*layer)->label() + " has no CUDA implementation";
  return "";
}

}  // namespace

const GpuKernelEntry* pluginGpuKernel(const Node& node) {
  if (!isPluginNode(node)) return nullptr;
  static const GpuKernelEntry entry = [] {
    GpuKernelEntry e;
    e.fn = &runPluginOnGpu;
    e.supports = &pluginGpuSupport;
    return e;
  }();
  return &entry;
}

}  // namespace kiln::cuda
