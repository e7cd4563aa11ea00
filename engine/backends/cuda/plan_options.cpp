#include "kiln/cuda_plan_options.h"

#include "kiln/cuda_generated_kernels.h"

namespace kiln::cuda {

std::map<std::string, std::string> layerChoicesOfRecord(const BuildRecord& record) {
  std::map<std::string, std::string> choices;
  for (const LayerRecord& layer : record.layers) {
    const TacticCandidate* winner = winningCandidate(layer);
    if (winner && !winner->choice.empty()) choices[layer.name] = winner->choice;
  }
  return choices;
}

EngineOptions engineOptionsForPlan(const Plan& plan, int device) {
  EngineOptions options;
  options.device = device;
  options.allowTf32 = plan.record.config.tf32;
  options.workspaceLimitBytes = plan.record.config.workspaceLimitBytes;
  for (const LayerImplementation& layer : plan.layers) {
    if (layer.precision == DataType::kFloat16) options.precision = Precision::kFloat16;
    if (layer.precision == DataType::kBFloat16) options.precision = Precision::kBFloat16;
  }
  options.layerChoices = layerChoicesOfRecord(plan.record);
  // The plan's NVRTC cubins and cuDNN plan records, for this engine alone.
  options.compiledCode = std::make_shared<CompiledCode>();
  options.compiledCode->preload(plan.generatedKernels);
  return options;
}

Result<std::shared_ptr<Engine>> createEngineForPlan(const Plan& plan, int device) {
  return Engine::create(plan.network, engineOptionsForPlan(plan, device));
}

}  // namespace kiln::cuda
