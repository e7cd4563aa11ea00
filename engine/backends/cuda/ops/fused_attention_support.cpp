// FusedAttention's support predicates on CUDA (fused_attention_limits.h): host code, asked
// by the engine before a run and by the build before a pass makes the layer.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "backends/cuda/ops/fused_attention_limits.h"
#include "ir/fused_attention.h"
#include "kiln/graph.h"
#include "kiln/passes.h"

namespace kiln::cuda {

int64_t attentionDeviceSharedBytes() {
  static const int64_t bytes = [] {
    int device = 0, value = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
            cudaSuccess) {
      cudaGetLastError();  // no device here: clear the sticky error for later callers
      return int64_t{-1};
    }
    return int64_t{value};
  }();
  return bytes;
}

// "" for one float storage type across Q, K, V and the mask.
std::string supportsAttentionTypes(const Node& node, const std::vector<DataType>& types) {
  DataType first = DataType::kUndefined;
  for (DataType t : types) {
    if (t == DataType::kUndefined) continue;
    if (t != DataType::kFloat32 && t != DataType::kFloat16 && t != DataType::kBFloat16)
      return std::string("no GPU kernel for FusedAttention on ") + dataTypeName(t);
    if (first != DataType::kUndefined && t != first) return "inputs of mixed float types";
    first = t;
  }
  return "";
}

// "" when the head sizes and grid the build knows fit fusedAttentionGpuLimits; a dim
// not known yet (below 0) passes and is checked at run time.
std::string supportsAttentionShapes(const Node& node, const std::vector<Shape>& shapes) {
  if (node.attrString("qkv_layout", "BSHD") == "STRIDED") {
    const std::vector<int64_t> q = node.attrInts(kAttentionViewAttributes[0]);
    const std::vector<int64_t> k = node.attrInts(kAttentionViewAttributes[1]);
    const std::vector<int64_t> v = node.attrInts(kAttentionViewAttributes[2]);
    if (q.size() != kAttentionViewLength || k.size() != kAttentionViewLength ||
        v.size() != kAttentionViewLength)
      return "FusedAttention's q_view, k_view and v_view must each hold 8 ints";
    return fusedAttentionGpuLimits(q[1], node.attrInt("num_heads", 0), q[3], k[3], q[4], v[4],
                                   attentionDeviceSharedBytes());
  }
  if (shapes.size() < 3 || shapes[0].size() != 4 || shapes[2].size() != 4) return "";
  const bool bshd = node.attrString("qkv_layout", "BSHD") == "BSHD";
  const Shape& q = shapes[0];
  const int64_t seqK = shapes[1].size() == 4 ? shapes[1][bshd ? 1 : 2] : -1;
  return fusedAttentionGpuLimits(q[0], node.attrInt("num_heads", 0), q[bshd ? 1 : 2], seqK, q[3],
                                 shapes[2][3], attentionDeviceSharedBytes());
}

}  // namespace kiln::cuda
