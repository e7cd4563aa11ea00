// The CUDA engine a built plan runs under, and its options: what `kiln run PLAN`,
// `kiln compare`, the profiler (CLI and studio) and Python give a CUDA plan, in one place.
#pragma once

#include "kiln/cuda_runtime.h"
#include "kiln/plan.h"

namespace kiln::cuda {

// The plan's build settings decide: its TF32 setting and workspace limit, the one float
// storage precision a CUDA plan's layers share (float16 or bfloat16 when any layer was
// built in it, else float32) and the choices its layers made inside their tactics
// (layerChoicesOfRecord), and a CompiledCode of the engine's own that holds the plan's
// generated kernels and cuDNN plan records (loaded, not compiled or timed again). `device`
// is the ordinal to run on.
EngineOptions engineOptionsForPlan(const Plan& plan, int device = 0);

// Per layer of `record` whose winning candidate (its tactic, not rejected, at its
// precision where one is) carries a choice: layer name -> that choice. No CUDA needed.
std::map<std::string, std::string> layerChoicesOfRecord(const BuildRecord& record);

// The engine of a built plan, as every runtime of a plan starts it (`kiln run PLAN`,
// `kiln compare`, the profiler, the studio, the Python API): its network under
// engineOptionsForPlan. The callers check the device and the plan's
// compatibility first; errors are Engine::create's.
Result<std::shared_ptr<Engine>> createEngineForPlan(const Plan& plan, int device = 0);

}  // namespace kiln::cuda
