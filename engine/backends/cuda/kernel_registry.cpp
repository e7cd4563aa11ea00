#include "backends/cuda/gpu_kernel.h"

namespace kiln::cuda {

void GpuKernelRegistry::add(GpuKernelEntry entry) {
  m_entries.push_back(std::move(entry));
}

void GpuKernelRegistry::add(const std::string& opType, int sinceVersion, int untilVersion,
                            GpuKernelFn fn, GpuSupportFn supports) {
  GpuKernelEntry entry;
  entry.opType = opType;
  entry.sinceVersion = sinceVersion;
  entry.untilVersion = untilVersion;
  entry.fn = fn;
  entry.supports = supports;
  m_entries.push_back(std::move(entry));
}

const GpuKernelEntry* GpuKernelRegistry::find(const std::string& domain, const std::string& opType,
                                              int opset) const {
  const std::string& d = domain == "ai.onnx" ? std::string() : domain;
  for (const GpuKernelEntry& e : m_entries) {
    if (e.opType == opType && e.domain == d && opset >= e.sinceVersion && opset <= e.untilVersion)
      return &e;
  }
  return nullptr;
}

// ai.kiln FusedAttention (ops/fused_attention.cpp); declared here rather than in
// gpu_kernel.h, which every kernel file includes.
void registerFusedAttentionGpuKernels(GpuKernelRegistry& registry);
// ai.kiln QuantizedConv / QuantizedMatMul (ops/int8_layers.cpp), likewise.
void registerInt8GpuKernels(GpuKernelRegistry& registry);
// ai.kiln Fp8MatMul (ops/fp8_matmul.cpp), likewise.
void registerFp8GpuKernels(GpuKernelRegistry& registry);
// ONNX ops the passes write into older-opset models, again under ai.kiln
// (ops/kiln_onnx_aliases.cpp), likewise. Runs last: it copies entries registered above.
void registerKilnOnnxAliasGpuKernels(GpuKernelRegistry& registry);
// ai.kiln PointwiseChain (ops/pointwise_chain.cpp), likewise.
void registerPointwiseChainGpuKernel(GpuKernelRegistry& registry);

const GpuKernelRegistry& builtinGpuKernels() {
  static const GpuKernelRegistry registry = [] {
    GpuKernelRegistry r;
    registerElementwiseGpuKernels(r);
    registerReduceGpuKernels(r);
    registerNormalizationGpuKernels(r);
    registerDataMovementGpuKernels(r);
    registerPoolGpuKernels(r);
    registerResizeGpuKernels(r);
    registerBlockRearrangeGpuKernels(r);
    registerGeneratorGpuKernels(r);
    registerConvGpuKernels(r);
    registerMatMulGpuKernels(r);
    registerShapeGpuKernels(r);
    registerQuantizeGpuKernels(r);
    registerSelectionGpuKernels(r);
    registerAttentionGpuKernels(r);
    registerRotaryEmbeddingGpuKernel(r);
    registerSpatialMiscGpuKernels(r);
    registerRnnGpuKernels(r);
    registerFusedNormalizationGpuKernels(r);
    registerFusedConvGpuKernels(r);
    registerConvMaxPoolGpuKernels(r);
    registerFusedAttentionGpuKernels(r);
    registerInt8GpuKernels(r);
    registerFp8GpuKernels(r);
    registerPointwiseChainGpuKernel(r);
    registerKilnOnnxAliasGpuKernels(r);
    return r;
  }();
  return registry;
}

std::vector<GpuOperator> gpuOperators() {
  std::vector<GpuOperator> out;
  for (const GpuKernelEntry& e : builtinGpuKernels().entries())
    out.push_back({e.domain, e.opType, e.sinceVersion, e.untilVersion});
  return out;
}

namespace {
bool isFloatStorage(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}
}  // namespace

std::string builtinGpuKernelSupport(const Node& node, const std::vector<DataType>& inputTypes,
                                    const std::vector<Shape>& inputShapes) {
  const GpuKernelEntry* entry = builtinGpuKernels().find(node.domain, node.opType, node.opset);
  if (!entry)
    return "no GPU kernel for " + (node.domain.empty() ? "" : node.domain + ".") + node.opType;
  const std::string types =
      entry->supports ? entry->supports(node, inputTypes) : supportsFloatTypes(node, inputTypes);
  if (!types.empty() || !entry->supportsShapes) return types;
  return entry->supportsShapes(node, inputShapes);
}

std::string supportsFloatTypes(const Node&, const std::vector<DataType>& types) {
  for (DataType t : types) {
    if (t != DataType::kUndefined && !isFloatStorage(t))
      return std::string("no GPU kernel for ") + dataTypeName(t) + " inputs";
  }
  return "";
}

std::string supportsNumericTypes(const Node&, const std::vector<DataType>& types) {
  for (DataType t : types) {
    if (t == DataType::kUndefined) continue;
    bool ok = isFloatStorage(t) || t == DataType::kFloat64 || t == DataType::kBool ||
              (isInteger(t) && dataTypeSize(t) >= 1 && packedElementBits(t) == 0);
    if (!ok) return std::string("no GPU kernel for ") + dataTypeName(t) + " inputs";
  }
  return "";
}

std::string supportsAnyFixedSizeType(const Node&, const std::vector<DataType>& types) {
  for (DataType t : types) {
    if (t == DataType::kString) return "strings stay on the host";
  }
  return "";
}

}  // namespace kiln::cuda
