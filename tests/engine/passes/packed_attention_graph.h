// Attention blocks whose head split copies, built in code as two exporters write them at
// opset 17, for the fold_attention_views tests and the CUDA FusedAttention tests:
//   timm (batch first, packed QKV): qkv [B, N, 3 H D] -> Reshape [B, N, 3, H, D] ->
//     Transpose (2,0,3,1,4) -> Split (axis 0) -> Squeeze -> Q, K, V [B, H, N, D];
//     Y [B, H, N, D] -> Transpose (0,2,1,3) -> Reshape [B, N, H D].
//   nn.MultiheadAttention (sequence first): qkv [N, B, 3 H D] -> Reshape [N, B, 3, H D] ->
//     Unsqueeze 0 -> Transpose (3,1,2,0,4) -> Squeeze 3 -> Gather 0 | 1 | 2 ->
//     Reshape [N, B H, D] -> Transpose (1,0,2) -> Reshape [B, H, N, D];
//     Y -> Transpose (2,0,1,3) -> Reshape [N B, H D].
// Both: S = MatMul(Q, Transpose(K, (0,1,3,2))) * (1 / sqrt(D)) -> Softmax -> MatMul(P, V).
#pragma once

#include <map>
#include <string>

#include "kiln/graph.h"
#include "kiln/tensor.h"

namespace kiln::test {

struct PackedAttentionCase {
  int64_t batch = 2, seq = 37, heads = 3, headDim = 16;
  bool sequenceFirst = false;  // nn.MultiheadAttention's layout, else timm's
  bool symbolicBatch = false;  // the input's batch dim is the symbol "batch"
  // nn.MultiheadAttention(batch_first=True) whole (with sequenceFirst): input "x" [B, N, E]
  // -> Transpose (1,0,2) -> MatMul + bias (the packed in-projection) -> "qkv"; after the head
  // merge Gemm (transB = 1, bias as C: the out-projection) -> Reshape [N, B, E] ->
  // Transpose (1,0,2) -> "y".
  bool batchFirstProjections = false;
  DataType type = DataType::kFloat32;
};

// The graph: input "qkv" ("x" with batchFirstProjections), output "y".
Network packedAttentionNetwork(const PackedAttentionCase& c);
// Random "qkv" ("x") in [-2, 2), in c.type.
std::map<std::string, Tensor> packedAttentionFeeds(const PackedAttentionCase& c, uint32_t seed);

// torchvision Swin's shifted-window attention: q, k, v [I * P, H, N, D] (P windows per
// image, image-major), S = MatMul(q * c, K^T) + Bias [1, H, N, N], viewed as
// [I, P, H, N, N] to add the window mask W [1, P, 1, N, N] (-100 between regions in odd
// windows), viewed back, Softmax, MatMul with V. Inputs "q", "k", "v", output "y"; the
// constants are initializers "bias" and "window_mask".
struct WindowAttentionCase {
  int64_t images = 2, windows = 4, heads = 3, seq = 9, dim = 8;
  int64_t batch() const { return images * windows; }
};
Network windowAttentionNetwork(const WindowAttentionCase& c);
// Random q, k, v in [-2, 2) (float32).
std::map<std::string, Tensor> windowAttentionFeeds(const WindowAttentionCase& c, uint32_t seed);

}  // namespace kiln::test
