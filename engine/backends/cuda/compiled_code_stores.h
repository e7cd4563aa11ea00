// The backend's side of CompiledCode (kiln/cuda_generated_kernels.h): the NVRTC store
// and the cuDNN execution-plan store of one engine (or of the engines sharing it), and
// how a kernel reaches the stores of the engine it runs in.
#pragma once

#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/cudnn_plan_cache.h"
#include "backends/cuda/ops/nvrtc_module.h"
#include "kiln/cuda_generated_kernels.h"

namespace kiln::cuda {

struct CompiledCode::Stores {
  NvrtcStore nvrtc;
  CudnnPlanStore cudnn;
};

// The stores of the engine `ctx` runs in (EngineOptions::compiledCode: an engine always
// has one, its own or a shared one).
inline NvrtcStore& nvrtcStoreOf(const GpuKernelContext& ctx) {
  return ctx.options().compiledCode->stores().nvrtc;
}
inline CudnnPlanStore& cudnnPlanStoreOf(const GpuKernelContext& ctx) {
  return ctx.options().compiledCode->stores().cudnn;
}

}  // namespace kiln::cuda
