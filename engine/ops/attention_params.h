// ONNX Attention's (opsets 23-25) parameters both backends compute with, decided once
// (issue 23's op table): the Q, K, V head layouts (3-D packed inputs split by
// q_num_heads / kv_num_heads, or 4-D [batch, heads, seq, head size]) with every
// consistency check, the KV cache inputs' shapes, and the attributes. Host-only, no
// backend header; errors are messages without the node's name (the kernels add it).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln::ops {

// One of Q, K, V as [batch, heads, seq, head size]; `packed`: stored [batch, seq,
// heads * head size] (a 3-D input).
struct AttentionHeadLayout {
  int64_t batch = 0, heads = 0, seq = 0, headSize = 0;
  bool packed = false;
};

struct AttentionLayouts {
  AttentionHeadLayout q, k, v;  // K and V without the past
  int64_t group = 1;            // query heads per KV head
};

// The layouts of inputs of shapes q, k, v: all 3-D (positive q_num_heads and
// kv_num_heads no larger than the hidden sizes, which they divide) or all 4-D (from
// opset 25 without those attributes; before, they must agree with the shapes); equal
// batches, K and V with equal heads and lengths, Q and K with equal head sizes, query
// heads a multiple of KV heads.
Result<AttentionLayouts> attentionLayouts(const Node& node, int opset, const Shape& q,
                                          const Shape& k, const Shape& v);

// The length of `name` (past_key or past_value), of shape `past` and element type
// `pastType`, checked against the current K or V (`current`, `currentType`): [batch,
// heads, length, head size] of the same type, the length `expectedLength` when that is
// not -1 (past_value's must be past_key's).
Result<int64_t> attentionPastLength(const char* name, const Shape& past, DataType pastType,
                                    const AttentionHeadLayout& current, DataType currentType,
                                    int64_t expectedLength = -1);

struct AttentionAttributes {
  double scale = 1.0;    // given, or 1 / sqrt(head size); never negative
  float softcap = 0.f;   // 0: none
  bool causal = false;
  int64_t qkMode = 0;    // qk_matmul_output_mode, 0..3
  // softmax_precision as an ONNX element type (1 float, 10 float16, 11 double,
  // 16 bfloat16); 0 when not given (the inputs' type).
  int64_t softmaxPrecision = 0;
  int64_t leftWindow = -1, rightWindow = -1;  // opset 25; -1 unbounded
};

// The node's attributes for Q's head size `headSize`, checked.
Result<AttentionAttributes> attentionAttributes(const Node& node, int opset, int64_t headSize);

}  // namespace kiln::ops
