// FusedConv's problem and chosen state, and the parts of its choice that build cuDNN
// graphs and plans (fused_conv_plans.cpp), shared with the kernel (fused_conv.cpp):
// the fused graph and its key text, the fused graph's candidate plans, and a plan's
// recorded choice (layer_choice.h) taken back without timing. Host code.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/ops/layer_choice.h"
#include "backends/cuda/ops/conv_epilogue.h"
#include "backends/cuda/ops/cudnn_conv.h"

namespace kiln::cuda::fusedconv {

constexpr int64_t kUidB = 4, kUidZ = 5, kUidStage = 10;

struct FusedConvProblem {
  ConvGeometry geometry;  // promoted to 2-D
  void* x = nullptr;
  const void* w = nullptr;
  const void* bias = nullptr;
  const void* z = nullptr;
  void* y = nullptr;
  ConvEpilogue epilogue;
  int64_t outer = 0, channels = 0, inner = 0;
};

struct FusedConvState {
  ConvGeometry geometry;  // the layer's, before any channel padding
  bool fusedGraph = false;
  std::shared_ptr<CudnnPlan> plan;  // the fused graph's, or the plain convolution's
  int paddedChannels = 0;           // > 0: the plan runs on X and W padded to this many
  bool kilnDepthwise = false;       // Kiln's depthwise kernel (depthwise_conv.h), no plan
  int64_t denseGroups = 0;  // > 1: `plan` is the dense block-diagonal form (grouped_filter.h)
};

// Where the padded copies of X and W go: one workspace buffer, W after X.
struct PaddedBuffers {
  void* x = nullptr;
  void* w = nullptr;
};

// `p` with X and W padded to `channels` (the geometry's C) in `buffers`.
FusedConvProblem paddedProblem(const FusedConvProblem& p, int channels,
                               const PaddedBuffers& buffers);

// The fused operation graph: conv, [+ Z], [+ B], [act]; each stage but the last
// writes a virtual float tensor, the last writes Y.
Status buildFusedGraph(cudnnHandle_t handle, const FusedConvProblem& p, CudnnDescriptor* graph);

// The fused graph of `p` as text: the key of its plan record (cudnn_plan_cache.h).
std::string fusedGraphText(const FusedConvProblem& p);

// The fused graph's plans, or why there are none. A runtime-compiled (NVRTC) plan this
// process or the plan file already has for the same graph is built again from its
// record (serialized: no compile), the heuristics not asked; one compiled here is
// recorded, so that later layers of the same shape, and a plan file's runtime, reuse it.
std::vector<std::unique_ptr<CudnnPlan>> fusedGraphPlans(GpuKernelContext& ctx, cudnnHandle_t handle,
                                                        const FusedConvProblem& p,
                                                        std::string* why);

// The layer's choice as a plan records it (layer_choice.h).
LayerChoice choiceOfState(const FusedConvState& state);

// `state` set up as the plan's recorded choice `c` says, without timing; kUnsupported
// with the reason when it does not apply to this layer at these shapes (the layer then
// times its candidates as without a plan). `summary` names what runs.
Status adoptPlannedChoice(GpuKernelContext& ctx, cudnnHandle_t handle, const FusedConvProblem& p,
                          const LayerChoice& c, FusedConvState* state, std::string* summary);

}  // namespace kiln::cuda::fusedconv
