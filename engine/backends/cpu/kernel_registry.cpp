// The one list of CPU op families. Adding a family means adding one line here.
#include "backends/cpu/kernel.h"

namespace kiln::cpu {

// ONNX ops the passes write into older-opset models, again under ai.kiln
// (ops/kiln_onnx_aliases.cpp); declared here rather than in kernel.h, which every
// kernel file includes. Runs last: it copies entries registered above.
void registerKilnOnnxAliases(KernelRegistry& registry);
// ai.kiln PointwiseChain (ops/pointwise_chain.cpp), likewise declared here.
void registerPointwiseChainKernel(KernelRegistry& registry);

const KernelRegistry& builtinKernels() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    registerElementwiseBinaryKernels(r);
    registerElementwiseUnaryKernels(r);
    registerCastKernels(r);
    registerReduceKernels(r);
    registerSoftmaxKernels(r);
    registerNormalizationKernels(r);
    registerScanKernels(r);
    registerConvKernels(r);
    registerPoolKernels(r);
    registerMatMulKernels(r);
    registerQuantizeKernels(r);
    registerRnnKernels(r);
    registerShapeKernels(r);
    registerGatherScatterKernels(r);
    registerResizeKernels(r);
    registerMiscKernels(r);
    registerControlFlowKernels(r);
    registerLossKernels(r);
    registerTensorExtraKernels(r);
    registerGatedActivationKernels(r);
    registerTextKernels(r);
    registerTfIdfKernels(r);
    registerAffineGridKernels(r);
    registerDeformConvKernels(r);
    registerMlKernels(r);
    registerTreeEnsembleKernels(r);
    registerTransformerKernels(r);
    registerFusedKernels(r);
    registerPointwiseChainKernel(r);
    registerKilnOnnxAliases(r);
    return r;
  }();
  return registry;
}

}  // namespace kiln::cpu
