// cuDNN's fused flash attention (SDPA forward through the cuDNN 9 backend graph) for
// an ai.kiln FusedAttention layer: one candidate of the layer, raced against Kiln's
// kernel (fused_attention_race.h). The operation graph is the inference pattern
// cuDNN's fused attention engines match (developer guide, "Fused Flash Attention
// fprop"; the same graph cudnn-frontend's composite SDPA node lowers to):
//   S = Q K^T              matmul, float accumulation; K described as [B, H, D, Sk]
//                          through its strides (no transpose in memory)
//   S = S * scale          pointwise MUL by a by-value float scalar
//   [S = S + M]            pointwise ADD of the additive mask, broadcast by strides
//   m = max_j S; E = exp(S - m); l = sum_j E; P = E / l
//                          reductions and pointwise ops on float virtual tensors; the
//                          statistics m + log(l) go to an unused virtual tensor, as the
//                          frontend emits them for inference
//   O = P V                matmul; P in the storage type (the engines want bmm2's A
//                          operand in the I/O type)
// Q, K, V and O keep the layer's own layout (BSHD, BHSD, STRIDED views of a packed
// QKV, an SBHD or merged-head output): each is described by the element strides
// fusedAttentionGeometry computed. Host code only.
#pragma once

#include <cudnn.h>

#include <string>

#include "backends/cuda/ops/attention_operands.h"
#include "backends/cuda/ops/cudnn_conv.h"

namespace kiln::cuda {

// "" when cuDNN's graph computes exactly what the layer's contract says for these
// operands; otherwise why not, in one line. Not candidates: float32 (the engines take
// float16 and bfloat16), head sizes not a multiple of 8 or above 256, pointers not
// 16-byte aligned or strides not a multiple of 8 elements, a per-window mask
// (mask_batch_period) and a mask broadcast over the keys. (cuDNN writes 0 for a row whose
// every key is masked, the contract of nan_to_zero = 1; without it, the unfused Softmax's
// NaN: runCudnnAttention writes it there after the graph.)
std::string cudnnAttentionUnsupported(const AttentionOperands& a);

// The graph's identity for the plan cache: types, dims, strides, which mask dims
// broadcast (never pointers or the scale, which is passed by value at each run).
std::string cudnnAttentionGraphText(const AttentionOperands& a);

// The finalized operation graph of `a` on `handle` (cudnnAttentionUnsupported(a) == "").
Status buildCudnnAttentionGraph(cudnnHandle_t handle, const AttentionOperands& a,
                                CudnnDescriptor* graph);

// The engine options for the attention graph: up to three plans from heuristics mode
// A (no fallback list: its generic engines do not fuse attention), at most one that
// compiles at run time, within the engine's workspace limit.
PlanFilter cudnnAttentionPlanFilter(const GpuKernelContext& ctx);

// Enqueues `plan` (built for the graph of `a`) on `a`'s pointers and scale; for a mask
// without nan_to_zero, then Kiln's pass that sets the rows whose every key is -inf to NaN
// (flash::launchNanForFullyMaskedRows: one read of the mask's distinct rows).
Status runCudnnAttention(GpuKernelContext& ctx, cudnnHandle_t handle, const CudnnPlan& plan,
                         const AttentionOperands& a);

}  // namespace kiln::cuda
