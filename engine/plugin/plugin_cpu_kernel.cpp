// The CPU path of plugin layers: every plugin node runs through runPluginKernel,
// which the reference backend, the CPU tactics, `kiln conformance` and CI use.
#include <cstring>

#include "kiln/plugin_registry.h"
#include "plugin/plugin_cpu_hooks.h"
#include "plugin/plugin_layer.h"

namespace kiln::cpu {
namespace {

// Scratch larger than this is refused rather than allocated.
constexpr size_t kMaxCpuWorkspaceBytes = size_t{1} << 34;

// Copies a 4-D tensor between NCHW and NHWC memory order (logical dims stay NCHW).
Tensor relayout(const Tensor& t, bool toChannelsLast) {
  Tensor out(t.type(), t.shape());
  const int64_t n = t.dim(0), c = t.dim(1), hw = t.dim(2) * t.dim(3);
  const size_t size = dataTypeSize(t.type());
  const auto* src = static_cast<const unsigned char*>(t.rawData());
  auto* dst = static_cast<unsigned char*>(out.rawData());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) {
        const int64_t nchw = (b * c + ch) * hw + p, nhwc = (b * hw + p) * c + ch;
        const int64_t from = toChannelsLast ? nchw : nhwc, to = toChannelsLast ? nhwc : nchw;
        std::memcpy(dst + to * size, src + from * size, size);
      }
  return out;
}

struct Io {
  std::vector<plugin::TensorDesc> inputs, outputs;
  std::vector<plugin::DynamicTensorDesc> all;  // inputs then outputs, fixed ranges

  void setFormats(bool channelsLast) {
    all.clear();
    for (auto* list : {&inputs, &outputs})
      for (plugin::TensorDesc& d : *list) {
        d.format = channelsLast && d.dims.nbDims == 4 ? plugin::TensorFormat::kChannelsLast
                                                      : plugin::TensorFormat::kLinear;
        all.push_back(fixedTensorDesc(d));
      }
  }
  std::vector<plugin::DynamicTensorDesc> slice(bool outputsPart) const {
    const auto begin = all.begin() + (outputsPart ? inputs.size() : 0);
    return {begin, outputsPart ? all.end() : all.begin() + inputs.size()};
  }
};

// Linear first; channels-last (for the 4-D tensors) when the plugin refuses linear.
Result<bool> chooseChannelsLast(PluginLayer& layer, Io& io, const Node& node) {
  io.setFormats(false);
  const int nbInputs = static_cast<int>(io.inputs.size());
  KILN_ASSIGN_OR_RETURN(std::string linearRefusal, layer.refusedPosition(io.all, nbInputs));
  if (linearRefusal.empty()) return false;
  bool any4d = false;
  for (const plugin::DynamicTensorDesc& d : io.all) any4d = any4d || d.desc.dims.nbDims == 4;
  if (any4d) {
    io.setFormats(true);
    KILN_ASSIGN_OR_RETURN(std::string nhwcRefusal, layer.refusedPosition(io.all, nbInputs));
    if (nhwcRefusal.empty()) return true;
  }
  return Status(StatusCode::kUnsupported, node.describe() + ": " + layer.label() +
                                              " does not take " + linearRefusal +
                                              " (supportsFormatCombination)");
}

}  // namespace

Status runPluginKernel(KernelContext& context) {
  const Node& node = context.node();
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<PluginLayer> layer, PluginLayer::create(node));
  if (!layer->hasCpu()) {
    return Status(StatusCode::kUnsupported,
                  node.describe() + ": " + layer->label() +
                      " has no CPU implementation (it runs on the CUDA backend only)");
  }
  std::vector<DataType> inTypes;
  std::vector<Shape> inShapes;
  for (size_t i = 0; i < context.inputCount(); ++i) {
    if (!context.hasInput(i))
      return context.error("plugin layers take every input (input " + std::to_string(i) +
                           " is omitted)");
    inTypes.push_back(context.input(i).type());
    inShapes.push_back(context.input(i).shape());
  }
  KILN_ASSIGN_OR_RETURN(std::vector<DataType> outTypes, layer->outputTypes(inTypes));
  KILN_ASSIGN_OR_RETURN(std::vector<Shape> outShapes, layer->outputShapes(inShapes));
  const std::vector<float> scales = pluginTensorScales(node);
  Io io;
  for (size_t i = 0; i < inTypes.size(); ++i)
    io.inputs.push_back(pluginTensorDesc(inTypes[i], inShapes[i], scales[i]));
  for (size_t i = 0; i < outTypes.size(); ++i)
    io.outputs.push_back(pluginTensorDesc(outTypes[i], outShapes[i], scales[inTypes.size() + i]));
  KILN_ASSIGN_OR_RETURN(bool channelsLast, chooseChannelsLast(*layer, io, node));
  KILN_RETURN_IF_ERROR(layer->configure(io.slice(false), io.slice(true)));
  KILN_RETURN_IF_ERROR(layer->onShapeChange(io.inputs, io.outputs));
  const size_t workspaceBytes = layer->workspaceSize(io.slice(false), io.slice(true));
  if (workspaceBytes > kMaxCpuWorkspaceBytes)
    return context.error(layer->label() + " asks for " + std::to_string(workspaceBytes >> 20) +
                         " MiB of workspace");
  std::vector<unsigned char> workspace(workspaceBytes);

  std::vector<Tensor> relaidInputs;
  relaidInputs.reserve(inTypes.size());
  std::vector<const void*> inputPointers;
  for (size_t i = 0; i < inTypes.size(); ++i) {
    const Tensor& in = context.input(i);
    if (io.inputs[i].format == plugin::TensorFormat::kChannelsLast) {
      relaidInputs.push_back(relayout(in, true));
      inputPointers.push_back(relaidInputs.back().rawData());
    } else {
      inputPointers.push_back(in.rawData());
    }
  }
  std::vector<void*> outputPointers;
  for (size_t i = 0; i < outTypes.size(); ++i)
    outputPointers.push_back(context.allocateOutput(i, outTypes[i], outShapes[i]).rawData());
  KILN_RETURN_IF_ERROR(layer->executeCpu(io.inputs, io.outputs, inputPointers, outputPointers,
                                         workspace.empty() ? nullptr : workspace.data()));
  if (channelsLast) {
    for (size_t i = 0; i < outTypes.size(); ++i)
      if (io.outputs[i].format == plugin::TensorFormat::kChannelsLast)
        context.setOutput(i, relayout(context.outputs()[i], false));
  }
  return Status::ok();
}

const KernelEntry* findNodeKernel(const Node& node, int opset) {
  if (const KernelEntry* entry = builtinKernels().find(node.domain, node.opType, opset))
    return entry;
  if (!isPluginNode(node)) return nullptr;
  static const KernelEntry pluginEntry{"", "", 1, 1000, &runPluginKernel};
  return &pluginEntry;
}

}  // namespace kiln::cpu
