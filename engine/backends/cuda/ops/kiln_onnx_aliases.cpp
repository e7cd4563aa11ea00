// ONNX ops that the graph passes write into models whose ai.onnx opset predates them:
// the same GPU kernels again under domain ai.kiln, opset 1, with the ONNX op's name,
// attributes and semantics (the CPU backend's ops/kiln_onnx_aliases.cpp says why).
#include "backends/cuda/gpu_kernel.h"
#include "kiln/passes.h"

namespace kiln::cuda {

void registerKilnOnnxAliasGpuKernels(GpuKernelRegistry& registry) {
  // ONNX op and the opset that introduced it.
  static const std::pair<const char*, int> kAliased[] = {
      {"Gelu", 20}, {"LayerNormalization", 17}, {"RMSNormalization", 23}};
  for (const auto& [op, since] : kAliased) {
    const GpuKernelEntry* onnx = registry.find("", op, since);
    if (!onnx) continue;
    GpuKernelEntry alias = *onnx;  // copied first: add() may move the entries
    alias.domain = kKilnDomain;
    alias.sinceVersion = 1;
    alias.untilVersion = 1000;
    registry.add(std::move(alias));
  }
}

}  // namespace kiln::cuda
