// The convolution core shared by Conv, ConvInteger and QLinearConv, and the
// kernels of the conv family that live in their own files.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/cpu/ops/nn_common.h"
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

// Conv's input checks: X, W (of X's type) and optional B ([outChannels], X's
// type) against the attributes; fills `problem` as prepareConvProblem does.
Status prepareConvNode(const KernelContext& ctx, ConvProblem* problem);

// Geometry of one 2-D plane; 1-D convolutions run as 2-D with height 1.
struct Plane {
  int64_t inH, inW, outH, outW;
  int64_t kH, kW, strideH, strideW, dilH, dilW, padH, padW;
};

// The plane of a rank-1 or rank-2 geometry.
Plane planeOf(const SpatialGeometry& geometry);

// True when every axis has kernel 1, stride 1 and no padding: the input itself
// is then the im2col matrix.
bool isPointwise(const SpatialGeometry& geometry);

// Unfolds `channels` input planes x [channels, input...] into col [channels *
// kernelSize, outputSize]: row (c, kernel offset), column output position;
// padding reads as zero. Any rank.
void im2col(const float* x, int64_t channels, const SpatialGeometry& geometry, float* col);

// y = conv(x, w) + bias (bias [outChannels] may be null). Padding reads as zero,
// so callers of the quantized ops pass inputs with zero points already removed.
void runConvolution(const ConvProblem& problem, const float* x, const float* w, const float* bias,
                    float* y);
void runConvolution(const ConvProblem& problem, const double* x, const double* w,
                    const double* bias, double* y);

// Runs `convolve(problem, x, w, bias, y)` on inputs X, W, optional B of type T, in
// the BLAS type (float for 16-bit floats), converting in and out where T differs.
template <class T, class Convolve>
Status runTypedConvolution(KernelContext& ctx, const ConvProblem& p, Tensor& out,
                           Convolve convolve) {
  using C = BlasType<T>;
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.inputOrNull(2);
  ComputeView<C> xv(x.data<T>(), x.numel());
  ComputeView<C> wv(w.data<T>(), w.numel());
  std::vector<C> bias;
  if (b) {
    bias.resize(static_cast<size_t>(b->numel()));
    convertToBuffer(b->data<T>(), b->numel(), bias.data());
  }
  const C* biasData = b ? bias.data() : nullptr;
  if constexpr (std::is_same_v<C, T>) {
    convolve(p, xv.data(), wv.data(), biasData, out.data<T>());
  } else {
    std::vector<C> y(static_cast<size_t>(out.numel()));
    convolve(p, xv.data(), wv.data(), biasData, y.data());
    convertFromBuffer(y.data(), out.numel(), out.data<T>());
  }
  return Status::ok();
}

Status fusedConvKernel(KernelContext& ctx);      // fused_conv.cpp (ai.kiln FusedConv)
Status convTransposeKernel(KernelContext& ctx);  // conv_transpose.cpp
Status convIntegerKernel(KernelContext& ctx);    // conv_quantized.cpp
Status qlinearConvKernel(KernelContext& ctx);    // conv_quantized.cpp

}  // namespace kiln::cpu
