// How an ai.kiln FusedAttention layer runs on CUDA: Kiln's flash kernel
// (fused_attention_impl.cu) and cuDNN's fused attention graph (cudnn_attention.h) are both
// candidates at the layer's first run; the faster is kept in the layer state and the
// implementation text names it with every candidate's time, or why cuDNN was not a
// candidate (float32, a mask form it cannot express, no engine for the graph, ...).
// A cuDNN candidate that fails on these shapes is simply not a candidate. The race's
// outcome is kept with the graph's cuDNN plan record (cudnn_plan_cache.h), so a later
// layer of the same graph (ViT's twelve) and a plan file take the winner untimed.
// The node attribute `path` ("auto", "kiln", "cudnn") restricts the candidates, for
// tests and tactic pinning; "cudnn" on a layer cuDNN cannot run is kUnsupported (the
// layer then runs on the host, with the reason as its note).
#pragma once

#include <functional>
#include <string>

#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/attention_operands.h"

namespace kiln::cuda {

// Runs the layer's chosen implementation on `operands` (choosing it first when the
// layer state holds no choice for them). `runKiln` enqueues Kiln's kernel and
// `kilnDescription` says what it is ("kiln flash attention, mma.sync ...").
Status runFusedAttention(GpuKernelContext& ctx, const AttentionOperands& operands,
                         const std::string& kilnDescription,
                         const std::function<Status()>& runKiln);

}  // namespace kiln::cuda
