// A channels-last 1x1 INT8 convolution (stride 1, no padding, one group) is a GEMM
// over the pixels: Y[rows, K] = X[rows, C] * W[K, C]^T with rows = N * H * W. This
// runs it as one cuBLASLt IMMA GEMM whose epilogue does the rest, int8 in, int8 out:
//   Y[r, k] = sat8(rn( act( alpha[k] * sum_c X[r, c] W[k, c] + beta * Z[r, k] + bias[k] )))
// with a device vector alpha (per output channel), a host scalar beta, an optional int8
// residual Z of Y's layout, act ReLU or none, as one cuBLASLt IMMA GEMM with its
// epilogue. int8_conv_cudnn.cpp times it against cuDNN's fused graph and Kiln's own
// kernel (int8_conv_mma.h) for such layers and keeps the fastest.
#pragma once

#include <memory>
#include <string>

#include "backends/cuda/gpu_kernel.h"

namespace kiln::cuda {

struct Int8PointwiseGemm;

// The GEMM for these sizes with its bias (float [K] on the device, fixed for the
// plan's life), or nullptr with `why` set when cuBLASLt has no algorithm (C and K
// must be multiples of 4). Errors: a cuBLASLt call that fails.
Result<std::shared_ptr<Int8PointwiseGemm>> planInt8PointwiseGemm(GpuKernelContext& ctx,
                                                                 int64_t rows, int64_t channels,
                                                                 int64_t outChannels, bool residual,
                                                                 bool relu, const float* bias,
                                                                 std::string* why);

// Enqueues it on the context's stream: x int8 [rows, C], w int8 [K, C], alpha float
// [K] on the device, z int8 [rows, K] (only when planned with a residual), y int8
// [rows, K].
Status runInt8PointwiseGemm(GpuKernelContext& ctx, const Int8PointwiseGemm& gemm, const void* x,
                            const void* w, const float* alpha, float beta, const void* z, void* y);

}  // namespace kiln::cuda
