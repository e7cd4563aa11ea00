// The one list of CPU op families. Adding a family means adding one line here.
#include "backends/cpu/kernel.h"

namespace kiln::cpu {

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
    return r;
  }();
  return registry;
}

}  // namespace kiln::cpu
