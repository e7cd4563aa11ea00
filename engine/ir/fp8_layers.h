// The FP8 GEMM layer the fold_qdq pass makes from float8e4m3fn Q/DQ nodes (ai.kiln
// domain), shared by the pass, the shape rules, the CPU and CUDA kernels and the
// builder. A layer of its own rather than QuantizedMatMul with float8 inputs: FP8 has
// no zero points, accumulates in float rather than int32, takes per-tensor scales only
// (what cuBLASLt's FP8 scale pointers express) and runs through another tactic, so
// none of QuantizedMatMul's int8 paths would apply.
//
// Fp8MatMul  Y = out(act(x_scale * w_scale * sum_k xq[.., k] * wq[k, n] + B[n]))
//
// with the products of E4M3 values (exact in float) accumulated in float. Inputs:
//   0 X        float8e4m3fn [.., K] already quantized with x_scale; or float (float32,
//              or the engine's float16/bfloat16 storage) that the layer quantizes
//              itself: E4M3(x / x_scale), round to nearest even, saturating to +-448,
//              NaN stays NaN (QuantizeLinear with saturate = 1)
//   1 W        float8e4m3fn constant [K, N]
//   2 B        optional float32 [N]
//   3 x_scale  float32 scalar, > 0
//   4 w_scale  float32 scalar, > 0
//   5 y_scale  optional float32 scalar: present, Y is float8e4m3fn = E4M3(y / y_scale)
//              (saturating); absent, Y is float32
// Attribute: activation "none" or "relu".
#pragma once

#include <cstddef>

#include "kiln/graph.h"

namespace kiln {

constexpr const char* kFp8MatMulOp = "Fp8MatMul";

enum Fp8Slot : size_t {
  kFp8X = 0,
  kFp8W = 1,
  kFp8Bias = 2,
  kFp8XScale = 3,
  kFp8WScale = 4,
  kFp8YScale = 5,
  kFp8Slots = 6,
};

// True for an ai.kiln Fp8MatMul node.
inline bool isFp8Layer(const Node& node) {
  return node.domain == "ai.kiln" && node.opType == kFp8MatMulOp;
}

// On a float layer that reads float8 DequantizeLinear outputs but did not fold: why
// it is not FP8 (fold_qdq writes it, the builder's precision record reads it).
constexpr const char* kFp8FallbackAttribute = "kiln_fp8_fallback";

// FP8 in Kiln means E4M3FN (ONNX FLOAT8E4M3FN, type 17): the format cuBLASLt's FP8
// GEMMs take for both operands in inference.
inline bool isFp8Type(DataType type) {
  return type == DataType::kFp8E4M3;
}

}  // namespace kiln
