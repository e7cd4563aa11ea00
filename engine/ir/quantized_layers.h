// The INT8 layers the fold_qdq pass makes (ai.kiln domain), shared by the pass, the
// shape rules, the CPU kernels and the builder.
//
// QuantizedConv   Y = out(act(sx * sw[m] * sum((xq - zx) * wq) + B[m] + Z'))
//                 Z' = Z (float32 Z) or z_scale * Z (int8 Z, z_scale present)
// QuantizedMatMul Y = out(act(sx * sw[n] * sum_k (aq[.., k] - zx) * wq[k, n] + B[n]))
//
// with int32 accumulation of the integer products. Input slots (both ops):
//   0 X   int8/uint8 already quantized with (x_scale, x_zero_point); or float32, which
//         the layer quantizes itself (round half to even, saturate): the reformat an
//         implicit INT8 layer does at its input
//   1 W   int8 weights, zero point 0: Conv [M, C/group, k...]; MatMul [K, N]
//   2 B   optional float32 bias [M] / [N]
//   3 Z   optional residual of Y's shape (QuantizedConv only): float32, added as it
//         is; or int8 with zero point 0 when z_scale (9) is present, added as
//         z_scale * Z (computed in float, before the activation)
//   4 x_scale       float32 scalar
//   5 x_zero_point  optional int8/uint8 scalar (0 when absent); its type is X's
//                   quantized type (int8 when absent)
//   6 w_scale       float32 scalar or one per output channel (M or N)
//   7 y_scale       optional float32 scalar: present, Y is quantized (INT8 output);
//                   absent, Y is float32 (float output)
//   8 y_zero_point  optional int8/uint8 scalar, Y's type (int8 when absent)
//   9 z_scale       optional float32 scalar (QuantizedConv only): present, Z is int8
//                   (an INT8 residual, e.g. the previous block's INT8 output); absent,
//                   Z is float32. A z_scale without Z, an int8 Z without z_scale or a
//                   z_scale that is not one positive float is an error.
// QuantizedConv has Conv's attributes plus FusedConv's activation (activation,
// activation_alpha, activation_beta); QuantizedMatMul has activation none or relu.
// Both: float_output_type (optional int, an ONNX type code: float32, float16 or bfloat16)
// is the type of a float Y (no y_scale), float32 when absent; the value is computed in
// float and rounded once to that type (fold_cast_into_int8_output: a strongly typed
// model's Cast to float16 after the layer).
#pragma once

#include <cstddef>

#include "kiln/graph.h"

namespace kiln {

constexpr const char* kQuantizedConvOp = "QuantizedConv";
constexpr const char* kQuantizedMatMulOp = "QuantizedMatMul";

enum QuantizedSlot : size_t {
  kQuantX = 0,
  kQuantW = 1,
  kQuantBias = 2,
  kQuantResidual = 3,
  kQuantXScale = 4,
  kQuantXZeroPoint = 5,
  kQuantWScale = 6,
  kQuantYScale = 7,
  kQuantYZeroPoint = 8,
  kQuantZScale = 9,
  kQuantSlots = 10,
};

// True for an ai.kiln QuantizedConv or QuantizedMatMul node.
inline bool isQuantizedLayer(const Node& node) {
  return node.domain == "ai.kiln" &&
         (node.opType == kQuantizedConvOp || node.opType == kQuantizedMatMulOp);
}

// Node attributes the INT8 steps leave for the builder's precision assignment.
// On a layer: how it came to be INT8 ("explicit Q/DQ", "calibrated ..."). On a float
// layer of an INT8 build: why it is not INT8.
constexpr const char* kInt8OriginAttribute = "kiln_int8_origin";
constexpr const char* kInt8FallbackAttribute = "kiln_int8_fallback";
// On a float layer whose input a calibration cache pins: "fp16" or "fp32".
constexpr const char* kInt8PinAttribute = "kiln_int8_pin";

// The attribute naming a float Y's type (float32 when absent; see the contract above).
constexpr const char* kFloatOutputTypeAttribute = "float_output_type";
// The float type `node` (a QuantizedConv or QuantizedMatMul) writes when Y is not
// quantized: float_output_type's float16 / bfloat16, else float32.
inline DataType quantizedFloatOutputType(const Node& node) {
  const int64_t t = node.attrInt(kFloatOutputTypeAttribute, 0);
  return t == static_cast<int64_t>(DataType::kFloat16) ||
                 t == static_cast<int64_t>(DataType::kBFloat16)
             ? static_cast<DataType>(t)
             : DataType::kFloat32;
}

}  // namespace kiln
