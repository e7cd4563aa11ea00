// Alternative CPU implementations ("tactics") of Conv, MatMul and Gemm, for the
// builder to time against the reference kernels and keep the fastest. Each has
// the reference's semantics, input checks and error messages, computes
// float32, float16 and bfloat16 in float as the reference does, and answers
// ctx.unsupported("why") for any other type or a case it does not implement;
// the builder records that reason as why the tactic was rejected.
#pragma once

#include "backends/cpu/kernel.h"

namespace kiln::cpu {

// Direct convolution (no im2col): loops over output pixels (tiles of output
// channels x output columns) and the kernel window, reading a zero-bordered
// copy of the input. Groups, depthwise, strides, dilations, pads and auto_pad
// as the reference. Unsupported: rank > 2 (3-D and beyond), float64 and
// non-float types.
Status convDirectKernel(KernelContext& ctx);

// Convolution as im2col + Kiln's blocked loop GEMM (no BLAS), per (image,
// group); pointwise convolutions skip the unfolding. Any spatial rank.
// Unsupported: float64 and non-float types.
Status convIm2colLoopKernel(KernelContext& ctx);

// MatMul (numpy 1-D promotion, batching and broadcasting, same semantics as the
// reference) on Kiln's cache-blocked loop GEMM instead of BLAS. Unsupported:
// float64 and integer types.
Status matmulLoopKernel(KernelContext& ctx);

// Gemm (alpha, beta, transA, transB, optional C broadcast to [M, N]) on the same
// loop GEMM. Unsupported: float64 and integer types.
Status gemmLoopKernel(KernelContext& ctx);

}  // namespace kiln::cpu
