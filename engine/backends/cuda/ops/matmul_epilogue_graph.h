// FusedMatMul's epilogue inside the product: the cuDNN graph D = act(A x B + bias), A
// [M, K], B [K, N], bias [N], D [M, N] row-major, one storage type (float16 or bfloat16),
// float accumulation and float epilogue math; `act` any activation cuDNN's graphs have
// (cudnnActivationMode: the erf GELU of ConvNeXt's and ViT's MLPs included, which
// cuBLASLt's epilogues lack). Only runtime-compiled (NVRTC) engines take such graphs;
// fused_matmul.cpp times them against cuBLASLt + Kiln's epilogue pass. Host code only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/ops/conv_epilogue.h"
#include "backends/cuda/ops/cudnn_conv.h"
#include "backends/cuda/ops/cudnn_plan_cache.h"

namespace kiln::cuda {

struct MatMulEpilogueProblem {
  DataType type = DataType::kFloat16;
  int64_t m = 0, n = 0, k = 0;
  EpilogueActivation activation = EpilogueActivation::kNone;
};

// Why cuDNN's graph cannot take `p` ("" when it can): the storage type, an activation
// without a cuDNN mode.
std::string matMulEpilogueUnsupported(const MatMulEpilogueProblem& p);

// Up to `wanted` finalized plans of the graph of `p` (at most one runtime-compiled, at
// most `workspaceLimit` bytes of workspace); empty with the reason in `why` when cuDNN has
// none. The runtime-compiled plan is recorded for `layer` by the graph's text
// (cudnn_plan_cache.h): the same graph later, in this process or from a plan file, is
// restored serialized instead of compiled again.
std::vector<std::unique_ptr<CudnnPlan>> matMulEpiloguePlans(
    CudnnPlanStore& store, cudnnHandle_t handle, const MatMulEpilogueProblem& p, int wanted,
    int64_t workspaceLimit, const std::string& layer, std::string* why);

// The graph of `p` as text: its plan record's key.
std::string matMulEpilogueGraphText(const MatMulEpilogueProblem& p);

// The variant pack of the graph: A, B, bias and D device pointers.
CudnnBindings matMulEpilogueBindings(const void* a, const void* b, const void* bias, void* d);

}  // namespace kiln::cuda
