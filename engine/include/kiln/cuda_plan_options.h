// The CUDA engine options a built plan runs under: what `kiln run PLAN`, `kiln compare`
// and the profiler (CLI and studio) give a CUDA plan, in one place.
#pragma once

#include "kiln/cuda_runtime.h"
#include "kiln/plan.h"

namespace kiln::cuda {

// The plan's build settings decide: its TF32 setting and workspace limit, and the one
// float storage precision a CUDA plan's layers share (float16 or bfloat16 when any layer
// was built in it, else float32). `device` is the ordinal to run on.
EngineOptions engineOptionsForPlan(const Plan& plan, int device = 0);

}  // namespace kiln::cuda
