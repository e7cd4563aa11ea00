// One FusedAttention run as its candidate implementations see it (Kiln's kernel in
// fused_attention_impl.cu, cuDNN's graph in cudnn_attention.h): the geometry the op table
// computed (ir/fused_attention.h) and the device pointers, each STRIDED view's offset
// already applied.
#pragma once

#include "ir/fused_attention.h"
#include "kiln/tensor.h"

namespace kiln::cuda {

struct AttentionOperands {
  DataType type = DataType::kUndefined;  // Q, K, V, the mask and Y
  FusedAttentionGeometry geometry;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* mask = nullptr;  // nullptr: no mask
  void* y = nullptr;
};

}  // namespace kiln::cuda
