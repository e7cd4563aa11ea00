// ai.kiln FusedAttention: multi-head scaled-dot-product attention as one node (the
// fuse_attention pass makes it; the CPU reference, the CUDA kernel and the shape rule
// read its contract from here).
//
//   FusedAttention(Q, K, V, [M]; scale, num_heads, qkv_layout, output_layout, merge_heads,
//                  nan_to_zero) -> Y
//   Y[b, h, i, :] = sum_j P[b, h, i, j] * V[b, h, j, :],
//   P[b, h, i, :] = softmax_j(scale * <Q[b, h, i, :], K[b, h, j, :]> + M[b, h, i, j])
//
// qkv_layout "BSHD" (default): Q [B, Sq, H, D], K [B, Sk, H, D], V [B, Sk, H, Dv] (the head
// split's Reshape outputs, before the head Transposes); "BHSD": Q [B, H, Sq, D], ...;
// "STRIDED" (fold_attention_views, or fuse_attention for GQA's merged K^T reshape): each of
// Q, K, V is a strided view of its input X, which
// is read as the contiguous row-major array of its elements, whatever its shape: the ints
// attributes q_view, k_view, v_view hold [offset, B, H, S, D, stride_b, stride_h, stride_s]
// and Q[b, h, i, d] = X[offset + b stride_b + h stride_h + i stride_s + d] (the feature
// stride is 1). Q, K and V may be one tensor (a packed QKV projection) at three offsets.
// Every view must lie inside its input's elements (checked before any read).
// output_layout "BSHD" (default): Y [B, Sq, H, Dv]; "BHSD": Y [B, H, Sq, Dv]; "SBHD":
// Y [Sq, B, H, Dv] (nn.MultiheadAttention's sequence-first head merge). merge_heads = 1
// (with BSHD or SBHD) writes the same bytes as Y [B, Sq, H * Dv] ([Sq, B, H * Dv]). H must
// equal num_heads; batch
// dims must be equal (no broadcast). M is additive, of Q's type, rank <= 4, and broadcasts to
// [B, H, Sq, Sk] (each right-aligned dim 1 or equal). V's head size Dv may differ from
// Q's and K's D. mask_batch_period = P > 0 (Swin's shifted windows: B = images x P windows,
// one mask per window): M has rank 4 and batch dim P (or 1), and batch b reads M's entry
// b mod P; B must be a multiple of P. A row whose every score is -inf gives NaN, as the unfused
// Softmax does; with nan_to_zero = 1 it gives 0 (PyTorch's SDPA export guards its softmax with
// Where(IsNaN(P), 0, P)).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/graph.h"
#include "kiln/tensor.h"

namespace kiln {

constexpr const char* kFusedAttentionOp = "FusedAttention";

// Element strides of one [B, H, S, D]-indexed operand; the feature stride is 1.
struct AttentionStrides {
  int64_t batch = 0, head = 0, seq = 0;
  int64_t offset = 0;  // of element [0, 0, 0, 0] (STRIDED views; 0 otherwise)
};

struct FusedAttentionGeometry {
  int64_t batch = 0, heads = 0, seqQ = 0, seqK = 0, headDim = 0, valueDim = 0;
  AttentionStrides q, k, v, y;
  bool hasMask = false;
  int64_t mask[4] = {};    // strides over (b, h, i, j); 0 on broadcast dims
  int64_t maskPeriod = 0;  // > 0: batch b reads the mask's batch b mod maskPeriod
  float scale = 1.f;
  bool nanToZero = false;  // a row with no finite score gives 0, not NaN
  Shape outputShape;
};

// The q_view / k_view / v_view attribute names and their length.
constexpr const char* kAttentionViewAttributes[3] = {"q_view", "k_view", "v_view"};
constexpr size_t kAttentionViewLength = 8;

// Reads the node's attributes and checks the input shapes against them. Returns ""
// and fills `out`, or the reason in one line ("input 'K' [2, 7, 3, 8] has 3 heads ...").
std::string fusedAttentionGeometry(const Node& node, const Shape& q, const Shape& k, const Shape& v,
                                   const Shape* mask, FusedAttentionGeometry* out);

}  // namespace kiln
