// Strided views of a contiguous tensor, composed through the data-movement ops that only
// re-index (Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Gather of one constant index or
// of constant indices in arithmetic progression, Split, Slice with unit steps): which element of
// the base each element of the result is. fold_attention_views uses it to let FusedAttention read
// its operands through strides from the tensor a chain of such ops started at, so the chain never
// runs.
//
// A view's dim is a list of atoms (size, stride), outermost first: a Reshape that merges
// two dims whose strides do not nest (nn.MultiheadAttention's [S, B, H * D] ->
// [S, B * H, D] after a sequence-first projection) keeps both atoms, and a later Reshape
// that splits the dim again (-> [B, H, S, D]) gets them back. Only a dim that ends as one
// atom (its atoms nest: outer stride = inner size * inner stride) has one stride.
// Static shapes only; every operation returns false (the view then undefined) on what it
// cannot express. Internal to kiln_engine.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::passes {

struct ViewAtom {
  int64_t size = 1, stride = 0;
};

class StridedView {
 public:
  // The identity view of a contiguous row-major tensor of `shape` (every dim >= 1).
  static bool contiguous(const Shape& shape, StridedView* out);

  Shape shape() const;
  int64_t offset() const { return m_offset; }

  // Y = Transpose(X, perm) (perm a permutation of the dims).
  bool transpose(const std::vector<int64_t>& perm);
  // Y = Reshape(X) to `to` (same element count, every dim >= 1); also Squeeze, Unsqueeze
  // and Flatten, which are reshapes.
  bool reshape(const Shape& to);
  // Y = X indexed at `index` on `axis` (Gather with a scalar index): the dim goes away.
  bool select(int64_t axis, int64_t index);
  // Y = X[start : start + size] on `axis` (Split's outputs, Slice with step 1).
  bool narrow(int64_t axis, int64_t start, int64_t size);
  // Y = Gather(X, I, axis) for an index tensor I of shape `sizes` whose elements step
  // arithmetically: I[i_0, .., i_m] = start + sum_k i_k steps[k] (an unfold's windows, VOLO's
  // [3, 14] of start 0 and steps 1, 2). Dim `axis` becomes the dims `sizes`, dim k of stride
  // steps[k] times the old one; every index must lie in [0, size) and the dim be simple.
  bool gatherProgression(int64_t axis, int64_t start, const std::vector<int64_t>& sizes,
                         const std::vector<int64_t>& steps);
  // Dim `axis` as one (size, stride); false when its atoms do not nest.
  bool simpleDim(int64_t axis, int64_t* size, int64_t* stride) const;

 private:
  int64_t m_offset = 0;
  std::vector<std::vector<ViewAtom>> m_dims;  // each dim's atoms, outermost first
};

// A FusedAttention STRIDED view [offset, B, H, S, D, s_b, s_h, s_s] over a contiguous X of
// shape `x`, re-expressed over X' where X = Transpose(X', perm) (fold_sequence_first_transposes:
// a GEMM that computes X' without the Transpose). Each view dim must step inside one dim of X
// and all the steps together must stay inside it, so every element's index in X, and through
// perm in X', is known; the feature dim must stay the innermost. False (view unchanged)
// otherwise.
bool viewOverTransposedBase(const Shape& x, const std::vector<int64_t>& perm,
                            std::vector<int64_t>* view);

}  // namespace kiln::passes
