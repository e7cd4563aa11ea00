// The activations of ai.kiln FusedConv and FusedMatMul (contracts: cpu/ops/fused_conv.cpp,
// cpu/ops/fused_matmul.cpp) on the device, shared by the float epilogue
// (conv_epilogue.cu: FusedConv, and FusedMatMul's activations after cuBLASLt) and the
// INT8 layers (int8_layers.cu). Arithmetic in float; NaN reaches ReLU's output as 0 in
// both forms (x > 0 is false). The GELU constants are the Gelu kernel's (elementwise_impl.cu).
#pragma once

#include "backends/cuda/ops/conv_epilogue.h"

namespace kiln::cuda {

__device__ __forceinline__ float applyEpilogueActivation(float x, EpilogueActivation activation,
                                                         float alpha, float beta) {
  switch (activation) {
    case EpilogueActivation::kRelu:
      return x > 0.f ? x : 0.f;
    case EpilogueActivation::kLeakyRelu:
      return x >= 0.f ? x : x * alpha;
    case EpilogueActivation::kClip:
      return fminf(fmaxf(x, alpha), beta);
    case EpilogueActivation::kSigmoid:
      return 1.f / (1.f + expf(-x));
    case EpilogueActivation::kTanh:
      return tanhf(x);
    case EpilogueActivation::kHardSigmoid:
      return fminf(fmaxf(alpha * x + beta, 0.f), 1.f);
    case EpilogueActivation::kHardSwish:
      return x * fminf(fmaxf(x / 6.f + 0.5f, 0.f), 1.f);
    case EpilogueActivation::kSilu:
      return x / (1.f + expf(-x));
    case EpilogueActivation::kGeluErf:
      return 0.5f * x * (1.f + erff(x * 0.7071067811865476f));
    case EpilogueActivation::kGeluTanh:
      return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    default:
      return x;
  }
}

}  // namespace kiln::cuda
