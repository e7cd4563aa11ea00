#include "kiln/cuda_plan_options.h"

#include "kiln/cuda_generated_kernels.h"

namespace kiln::cuda {

EngineOptions engineOptionsForPlan(const Plan& plan, int device) {
  EngineOptions options;
  options.device = device;
  options.allowTf32 = plan.record.config.tf32;
  options.workspaceLimitBytes = plan.record.config.workspaceLimitBytes;
  for (const LayerImplementation& layer : plan.layers) {
    if (layer.precision == DataType::kFloat16) options.precision = Precision::kFloat16;
    if (layer.precision == DataType::kBFloat16) options.precision = Precision::kBFloat16;
  }
  return options;
}

Result<std::shared_ptr<Engine>> createEngineForPlan(const Plan& plan, int device) {
  preloadGeneratedKernels(plan.generatedKernels);
  return Engine::create(plan.network, engineOptionsForPlan(plan, device));
}

}  // namespace kiln::cuda
