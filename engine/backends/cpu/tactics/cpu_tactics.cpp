// The CPU tactic table: one explicit list per op type with alternatives.
#include "backends/cpu/tactics/cpu_tactics.h"

#include "backends/cpu/invoke_kernel.h"
#include "backends/cpu/tactics/alternative_kernels.h"
#include "ir/conv_max_pool.h"
#include "ir/fp8_layers.h"
#include "ir/quantized_layers.h"
#include "kiln/builder_config.h"
#include "kiln/plugin_registry.h"
#include "plugin/plugin_cpu_hooks.h"

namespace kiln::cpu {
namespace {

bool isReduced(DataType type) {
  return type == DataType::kFloat16 || type == DataType::kBFloat16;
}

// Inputs a layer's contract keeps float32 in every precision: a FusedConvMaxPool's
// y_scale (ir/conv_max_pool.h), a quantization parameter as its CUDA kernel reads it.
bool keepsFloat32(const Node& node, size_t slot) {
  return isFusedConvMaxPool(node) && slot == kConvPoolYScale;
}

}  // namespace

std::vector<CpuTactic> cpuTactics(const Node& node, int opset) {
  const KernelEntry* reference = findNodeKernel(node, opset);
  if (!reference) return {};
  if (reference->fn == &runPluginKernel) return {{kPluginCpuTactic, kTacticKiln, reference->fn}};
  const bool onnxDomain = node.domain.empty() || node.domain == "ai.onnx";
  // The reference kernels of these ops do their products on BLAS.
  if (onnxDomain && node.opType == "Conv") {
    return {{"cpu.conv.im2col_blas", kTacticBlas, reference->fn},
            {"cpu.conv.im2col_loop", kTacticKiln, &convIm2colLoopKernel},
            {"cpu.conv.direct", kTacticKiln, &convDirectKernel}};
  }
  if (onnxDomain && node.opType == "MatMul") {
    return {{"cpu.matmul.blas", kTacticBlas, reference->fn},
            {"cpu.matmul.loop", kTacticKiln, &matmulLoopKernel}};
  }
  if (onnxDomain && node.opType == "Gemm") {
    return {{"cpu.gemm.blas", kTacticBlas, reference->fn},
            {"cpu.gemm.loop", kTacticKiln, &gemmLoopKernel}};
  }
  // INT8 layers (fold_qdq): integer im2col/GEMM with int32 accumulation.
  if (isQuantizedLayer(node)) {
    return {{node.opType == kQuantizedConvOp ? "cpu.int8.conv.im2col_gemm" : "cpu.int8.matmul",
             kTacticKiln, reference->fn}};
  }
  // FP8 GEMM (fold_qdq, float8e4m3fn): exact E4M3 products, double accumulation.
  if (isFp8Layer(node)) return {{"cpu.fp8.matmul", kTacticKiln, reference->fn}};
  return {{kReferenceTactic, kTacticKiln, reference->fn}};
}

KernelFn findCpuTactic(const Node& node, int opset, const std::string& name) {
  for (const CpuTactic& tactic : cpuTactics(node, opset))
    if (tactic.name == name) return tactic.fn;
  return nullptr;
}

Status runKernelAtPrecision(const Node& node, KernelFn fn, const std::vector<const Tensor*>& inputs,
                            const SubgraphRunner& runner, DataType precision, DataType outputType,
                            std::vector<Tensor>* outputs) {
  const bool reduce = isReduced(precision);
  std::vector<Tensor> converted;
  converted.reserve(inputs.size());
  std::vector<const Tensor*> kernelInputs = inputs;
  if (reduce) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] && inputs[i]->type() == DataType::kFloat32 && !keepsFloat32(node, i)) {
        converted.push_back(castTensor(*inputs[i], precision));
        kernelInputs[i] = &converted.back();
      }
    }
  }
  KernelContext context(node, std::move(kernelInputs), runner);
  KILN_RETURN_IF_ERROR(invokeKernel(fn, context));
  *outputs = std::move(context.outputs());
  for (Tensor& out : *outputs) {
    if (!out.defined()) continue;
    if (reduce && out.type() == precision) out = castTensor(out, DataType::kFloat32);
    if (isReduced(outputType) && out.type() == DataType::kFloat32)
      out = castTensor(castTensor(out, outputType), DataType::kFloat32);
  }
  return Status::ok();
}

}  // namespace kiln::cpu
