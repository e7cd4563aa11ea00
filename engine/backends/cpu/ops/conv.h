// The convolution core shared by Conv, ConvInteger and QLinearConv, and the
// kernels of the conv family that live in their own files.
#pragma once

#include <cstdint>

#include "backends/cpu/ops/spatial.h"

namespace kiln::cpu {

// One convolution: x [batch, inChannels, input...], w [outChannels,
// inChannels / group, kernel...], y [batch, outChannels, output...].
struct ConvProblem {
  SpatialGeometry geometry;
  int64_t batch = 0;
  int64_t inChannels = 0;
  int64_t outChannels = 0;
  int64_t group = 1;
};

// Validates X and W of a Conv-like node (ranks, channel counts, group) and fills
// `problem`, geometry included (pads resolved, output extent computed).
Status prepareConvProblem(const KernelContext& ctx, const Tensor& x, const Tensor& w,
                          ConvProblem* problem);

// y = conv(x, w) + bias (bias [outChannels] may be null). Padding reads as zero,
// so callers of the quantized ops pass inputs with zero points already removed.
void runConvolution(const ConvProblem& problem, const float* x, const float* w, const float* bias,
                    float* y);
void runConvolution(const ConvProblem& problem, const double* x, const double* w,
                    const double* bias, double* y);

Status convTransposeKernel(KernelContext& ctx);  // conv_transpose.cpp
Status convIntegerKernel(KernelContext& ctx);    // conv_quantized.cpp
Status qlinearConvKernel(KernelContext& ctx);    // conv_quantized.cpp

}  // namespace kiln::cpu
