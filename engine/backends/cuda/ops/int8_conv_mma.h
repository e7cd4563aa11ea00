// Kiln's INT8 convolution on tensor cores (int8_conv_mma.cu): an implicit GEMM over a
// channels-last image, int8 in, int8 out, everything after the convolution in its
// epilogue. X int8 [N, H, W, C], W int8 [K, R, S, C], Z and Y int8 [N, P, Q, K]:
//   Y[n,p,q,k] = sat8(rn( act( alpha[k] * sum_{r,s,c} X[n, p*sh - ph + r*dh,
//                                                      q*sw - pw + s*dw, c] W[k,r,s,c]
//                              + bias[k] + beta * Z[n,p,q,k] )))
// with X zero outside the image, alpha and bias float [K] on the device, beta a host
// scalar, Z optional (null), act ReLU or none; rn rounds to nearest even, sat8 clamps
// to [-128, 127]. One group; C % 64 == 0 and K % 64 == 0; x, w, z and y 16-byte
// aligned (the engine's buffers are). The GEMM's rows are the N*P*Q output pixels, its
// columns the K output channels, its depth R*S*C in 64-channel chunks of one filter tap.
// Several tile shapes exist; the caller times those int8ConvMmaTiles() offers (as
// int8_conv_cudnn.cpp does against cuDNN) and keeps the fastest.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/status.h"

namespace kiln::cuda {

struct Int8ConvMmaShape {
  int64_t n = 0, h = 0, w = 0, c = 0;  // X
  int64_t k = 0, r = 1, s = 1;         // W
  int64_t p = 0, q = 0;                // Y's height and width
  int strideH = 1, strideW = 1, padH = 0, padW = 0, dilationH = 1, dilationW = 1;
};

// The tile shapes that run `shape` (empty when none does), best guess first.
std::vector<int> int8ConvMmaTiles(const Int8ConvMmaShape& shape);

// "128x128" for a tile index (rows x columns of Y per thread block).
std::string int8ConvMmaTileName(int tile);

// Enqueues the convolution with tile shape `tile` (one of int8ConvMmaTiles(shape)) on
// `stream`. Errors: an unsupported shape or tile, a failed launch.
Status runInt8ConvMma(int tile, const Int8ConvMmaShape& shape, const void* x, const void* w,
                      const float* alpha, const float* bias, float beta, const void* z, void* y,
                      bool relu, cudaStream_t stream);

}  // namespace kiln::cuda
