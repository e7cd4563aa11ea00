// Kiln's channels-last depthwise convolution (group = C = K, one filter per channel) for
// float16 and bfloat16, with FusedConv's epilogue inside: Y = act(conv(X, W) + B + Z).
// A candidate of FusedConv (fused_conv.cpp) beside cuDNN's engines: the layer times both
// at its first run and keeps the faster (ConvNeXt's 7x7, EfficientNet's and MobileNet's
// 3x3 and 5x5, stride 1 or 2).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "backends/cuda/ops/conv_epilogue.h"
#include "backends/cuda/ops/cudnn_conv.h"
#include "kiln/status.h"

namespace kiln::cuda {

struct DepthwiseConvProblem {
  DataType type = DataType::kFloat16;
  int64_t n = 0, h = 0, w = 0, c = 0;  // X [n, h, w, c]
  int64_t ho = 0, wo = 0;              // Y [n, ho, wo, c]
  int r = 0, s = 0;                    // filter rows and columns: W [c, r, s, 1]
  int strideH = 1, strideW = 1, padH = 0, padW = 0;
  const void* x = nullptr;
  const void* weights = nullptr;
  const void* bias = nullptr;  // [c] or null
  const void* z = nullptr;     // Y's shape or null
  void* y = nullptr;
  ConvEpilogue epilogue;
};

// "" when the kernel runs `g` on these buffers (a channels-last 2-D forward convolution
// with one input channel per group and K = C, float16 or bfloat16, filters 3x3, 5x5 or
// 7x7, equal strides of 1 or 2, no dilation, C a multiple of 8, X, Z and Y 16-byte
// aligned); else why not, in a few words.
std::string depthwiseConvUnsupported(const ConvGeometry& g, const void* x, const void* z,
                                     const void* y);

// The problem of geometry `g` (depthwiseConvUnsupported(g) == "") on the given buffers.
DepthwiseConvProblem depthwiseConvProblem(const ConvGeometry& g, const void* x, const void* w,
                                          const void* bias, const void* z, void* y,
                                          const ConvEpilogue& epilogue);

// Runs `p` on `stream`. Arithmetic in float, Y rounded once.
Status runDepthwiseConv(const DepthwiseConvProblem& p, cudaStream_t stream);

}  // namespace kiln::cuda
