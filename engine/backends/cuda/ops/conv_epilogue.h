// FusedConv's epilogue as one pass over the convolution's output, for when cuDNN
// has no fused engine for the graph (or its fused engine is slower).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {

// The activations of ai.kiln FusedConv (contract: cpu/ops/fused_conv.cpp) and
// FusedMatMul (cpu/ops/fused_matmul.cpp), which also takes the two GELU forms.
enum class EpilogueActivation : int {
  kNone,
  kRelu,
  kLeakyRelu,  // x >= 0 ? x : alpha * x
  kClip,       // min(max(x, alpha), beta)
  kSigmoid,
  kTanh,
  kHardSigmoid,  // clamp(alpha * x + beta, 0, 1)
  kHardSwish,    // x * clamp(x / 6 + 0.5, 0, 1)
  kSilu,         // x * sigmoid(x)
  kGeluErf,      // x * 0.5 * (1 + erf(x / sqrt(2)))
  kGeluTanh,     // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
};

struct ConvEpilogue {
  EpilogueActivation activation = EpilogueActivation::kNone;
  float alpha = 0.f, beta = 0.f;
};

class GpuKernelContext;
// The node's `activation` attribute (none, relu, leaky_relu, clip, sigmoid, tanh,
// hard_sigmoid, hard_swish, silu, gelu_erf, gelu_tanh) with `activation_alpha` and
// `activation_beta`, as FusedConv and the INT8 layers carry them (fold_qdq gives the INT8
// layers no GELU); an unknown name is an error naming the node.
// Defined in fused_conv.cpp.
Status parseConvEpilogue(const GpuKernelContext& ctx, ConvEpilogue* out);

// y[o, c, i] = act(y[o, c, i] + bias[c] + z[o, c, i]) in place for y laid out
// [outer, channels, inner]; bias ([channels]) and z (y's shape) may be null. Storage
// float32, float16 or bfloat16 (one type for all three), arithmetic in float. Moves
// 16-byte packs when the element count and the pointers allow.
Status applyConvEpilogue(void* y, DataType type, const void* bias, const void* z, int64_t outer,
                         int64_t channels, int64_t inner, const ConvEpilogue& epilogue,
                         cudaStream_t stream);

// How applyConvEpilogue moves `count` elements at y and z: "packs of N" or "element-wise".
std::string convEpilogueVariant(DataType type, int64_t count, const void* y, const void* z);

}  // namespace kiln::cuda
