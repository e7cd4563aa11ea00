// Which ONNX ops may compute in float16/bfloat16 in a strongly typed export, and which
// of their float slots keep float32 whatever the node's type (typed_onnx_export.cpp).
#pragma once

#include <string>

#include "kiln/graph.h"

namespace kiln::typed_export {

enum class OpTyping {
  kFollowsData,    // float slots share the node's type: the node may run reduced
  kKeepsOwnTypes,  // output types fixed by attributes, or float32-only inputs: stays float32
  kReadsAnyType,   // reads any element type and writes no float (Shape, Size): no Cast
};

// How `node` (main graph) types its values; `why` says why a node keeps its own types.
OpTyping opTyping(const Node& node, std::string* why);

// The ai.onnx opset from which the op's schema accepts bfloat16: 22 for the ops ONNX
// 1.17 widened then (Conv, pooling, InstanceNormalization, RNNs, many unary math ops),
// 13 for the rest (Cast to bfloat16 itself needs 13).
int bfloat16SinceOpset(const std::string& opType);

// True when input `slot` of a kFollowsData node keeps float32 (Resize's scales,
// Upsample's scales, Resize's roi).
bool inputKeepsFloat32(const Node& node, size_t slot);
// True when output `slot` keeps its type (LayerNormalization's Mean and InvStdDev
// follow stash_type, not the data).
bool outputKeepsType(const Node& node, size_t slot);

}  // namespace kiln::typed_export
