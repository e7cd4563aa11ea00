// What Kiln's flash-attention kernel (fused_attention_impl.cu) runs: the one place that
// says so, read by the kernel at run time and by the CUDA build backend when a pass
// asks whether a FusedAttention it proposes may be produced.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/graph.h"

namespace kiln::cuda {

constexpr int64_t kMaxAttentionHeadSize = 256;  // Q/K head size D and V's head size Dv
constexpr int64_t kMaxAttentionGrid = 65535;    // heads and batches (grid y and z)
constexpr int64_t kMaxAttentionSequence = int64_t{1} << 30;
// Head sizes over 128 run the kernel padded to 256 for D and Dv alike, which takes this
// much shared memory a block (fused_attention_impl.cu: Q's 64 rows and two stages of K's
// and V's 64-key tiles, rows padded by 8 halves: 165 KB): the H100 / H200 (227 KB) have
// it, the A100 (163 KB) and the sm_86 / sm_89 parts (99 KB) do not. The float32 kernel
// needs less (137 KB) but is held to the same figure: the build's shape predicate does
// not see the type.
constexpr int64_t kWideHeadSharedBytes = 2 * (64 * 264 + 2 * 64 * (264 + 264));

// The current device's shared memory a block may opt into, queried once; -1 when no
// device answers (a CPU-only build machine: the run checks again).
int64_t attentionDeviceSharedBytes();

// "" when the kernel runs this geometry; otherwise the reason in one line. A value
// below 0 is a dimension not known yet (a symbol): not refused here, the kernel
// checks it at run time. `sharedBytes` is the device's attentionDeviceSharedBytes()
// (-1: unknown, not refused here).
inline std::string fusedAttentionGpuLimits(int64_t batch, int64_t heads, int64_t seqQ, int64_t seqK,
                                           int64_t headDim, int64_t valueDim, int64_t sharedBytes) {
  for (int64_t d : {headDim, valueDim})
    if (d == 0 || d > kMaxAttentionHeadSize)
      return "head size " + std::to_string(d) + " (the kernel takes 1.." +
             std::to_string(kMaxAttentionHeadSize) + " for Q, K and V)";
  if ((headDim > 128 || valueDim > 128) && sharedBytes >= 0 && sharedBytes < kWideHeadSharedBytes)
    return "head size " + std::to_string(headDim > valueDim ? headDim : valueDim) + " needs " +
           std::to_string(kWideHeadSharedBytes / 1024) +
           " KB of shared memory a block and this GPU has " + std::to_string(sharedBytes / 1024);
  if (heads > kMaxAttentionGrid || batch > kMaxAttentionGrid || seqQ > kMaxAttentionSequence ||
      seqK > kMaxAttentionSequence)
    return "more than 65535 heads or batches, or a sequence over 2^30";
  return "";
}

// The GPU kernel entry's predicates (fused_attention_support.cpp): "" for one float storage
// type across Q, K, V and the mask; "" when the head sizes and grid the build knows fit
// fusedAttentionGpuLimits (a dim not known yet, below 0, passes: checked at run time).
std::string supportsAttentionTypes(const Node& node, const std::vector<DataType>& types);
std::string supportsAttentionShapes(const Node& node, const std::vector<Shape>& shapes);

}  // namespace kiln::cuda
