// The BERT attention block built in code, for the fuse_attention pass tests and the
// CUDA FusedAttention tests: Q/K/V [B, S, H * D] -> Reshape [B, S, H, D] -> head
// Transposes -> MatMul(Q, K^T) -> Div by sqrt(D) or Mul by 1/sqrt(D) -> [Add mask] ->
// Softmax -> MatMul(P, V) -> [Transpose -> Reshape [B, S, H * D]], as transformers'
// eager BertSelfAttention exports it at opset 17, or the same without head transposes.
#pragma once

#include <map>
#include <string>

#include "kiln/graph.h"
#include "kiln/tensor.h"

namespace kiln::test {

struct AttentionCase {
  int64_t batch = 2, seqQ = 37, seqK = 37, heads = 3, headDim = 16;
  Shape mask;                     // empty: no mask; else broadcast to [B, H, Sq, Sk]
  bool divide = true;             // scores / sqrt(D) (BERT) or scores * (1 / sqrt(D))
  bool splitKeyTranspose = true;  // K^T as (0,2,1,3) then (0,1,3,2), or one (0,2,3,1)
  bool headSplit = true;          // false: Q, K, V are [B, H, S, D] inputs, no head transposes
  bool mergeHeads = true;         // with headSplit: Transpose + Reshape back to [B, S, H * D]
  bool symbolicBatch = false;     // the inputs' batch dim is the symbol "batch"
  // The split and merge shapes computed as transformers 5 exports them with a dynamic
  // batch: Concat(Slice(Shape(x), 0, 2), [-1, D]) and Concat(Slice(Shape(q), 0, 2), [-1]).
  bool computedShapes = false;
  DataType type = DataType::kFloat32;
  int64_t valueDim = 0;  // V's head size (0: headDim), as LeViT's 16 / 32
  // PyTorch's SDPA export: Qh and K^T each multiplied by sqrt(1 / sqrt(D)) instead of a
  // scale on the scores; the mask an input "mask_bool" (true: keep) turned additive by
  // Where(mask_bool, 0, -inf); the softmax guarded by Where(IsNaN(P), 0, P).
  bool sdpaExport = false;
  int64_t vDim() const { return valueDim > 0 ? valueDim : headDim; }
};

// The graph: inputs "q", "k", "v" (and "mask"), output "y".
Network attentionNetwork(const AttentionCase& c);
// Random Q, K, V in [-2, 2) and a padding mask (-1e4 on about a quarter of its entries,
// 0 elsewhere), in c.type; for sdpaExport a boolean mask (false on about a quarter).
std::map<std::string, Tensor> attentionFeeds(const AttentionCase& c, uint32_t seed);

}  // namespace kiln::test
