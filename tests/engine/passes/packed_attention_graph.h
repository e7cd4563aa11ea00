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
  DataType type = DataType::kFloat32;
};

// The graph: input "qkv", output "y".
Network packedAttentionNetwork(const PackedAttentionCase& c);
// Random "qkv" in [-2, 2), in c.type.
std::map<std::string, Tensor> packedAttentionFeeds(const PackedAttentionCase& c, uint32_t seed);

}  // namespace kiln::test
