// Device side of the CUDA INT8 layers (ai.kiln QuantizedConv / QuantizedMatMul,
// contract: ir/quantized_layers.h; host side: int8_layers.cpp). The layers run as
// one INT8 GEMM D[rows, channels] = A[rows, K] * W[channels, K]^T with int32
// accumulation, between a packing kernel that writes A as int8 (quantizing float
// inputs, im2col for convolutions) and an epilogue that dequantizes, adds bias and
// residual, activates and writes float or requantized int8 output.
//
// Zero points: A holds q' = q - offset (offset 128 for uint8, so every value fits
// int8) and padding holds zp' = zp - offset, the quantized real zero; the epilogue
// subtracts zp' * sum_k W[c, k], so acc = sum (q - zp) * w exactly.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/ops/conv_epilogue.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {

// How A's values come in: float storage quantized with (scale, zeroPoint) to
// int8/uint8 (`quantizedType`), or already quantized int8/uint8.
struct Int8Input {
  const void* data = nullptr;
  DataType type = DataType::kFloat32;        // storage type of `data`
  DataType quantizedType = DataType::kInt8;  // int8 or uint8
  float scale = 1.f;
  int32_t zeroPoint = 0;
  int32_t offset() const { return quantizedType == DataType::kUInt8 ? 128 : 0; }
};

// Convolution geometry, 2-D (1-D runs with height 1), NCHW.
struct Int8ConvShape {
  int64_t batch = 0, channels = 0, height = 0, width = 0;  // input
  int64_t outChannels = 0, outHeight = 0, outWidth = 0;
  int64_t kernelH = 1, kernelW = 1, strideH = 1, strideW = 1, padTop = 0, padLeft = 0;
  int64_t dilationH = 1, dilationW = 1, group = 1;
};

// A[(n, oh, ow), (c, kh, kw)] for group `g` (its channels only), rows padded to
// `kPadded` columns with zp'. A is [batch * outH * outW, kPadded] int8.
Status packConvolutionInput(const Int8Input& x, const Int8ConvShape& s, int64_t g, int64_t kPadded,
                            int8_t* a, cudaStream_t stream);
// A[r, k] from x [rows, depth] (row-major), padded to kPadded columns with zp'.
Status packMatrixInput(const Int8Input& x, int64_t rows, int64_t depth, int64_t kPadded, int8_t* a,
                       cudaStream_t stream);

// acc[r, c] = sum_k a[r, k] * w[c, k]: Kiln's tiled kernel (when cuBLASLt has no
// IMMA algorithm for the shape).
Status int8GemmTiled(const int8_t* a, const int8_t* w, int32_t* acc, int64_t rows, int64_t cols,
                     int64_t k, cudaStream_t stream);

// The epilogue of one GEMM: v = (acc[r, c] - zp' * wsum[c]) * multiplier[c] + bias[c]
// (+ z), activated, written to y. Rows r = (n, p) of a convolution's group g land at
// y[n, g * cols + c, p] (`spatial` = outH * outW, `yChannels` the output's channels);
// a matrix (spatial = 0) writes y[r, c]. Float output in `yType` storage, or
// requantized (round half to even, saturate) when `quantized`.
struct Int8Epilogue {
  const int32_t* acc = nullptr;
  const float* multiplier = nullptr;    // [cols] of this group
  const float* bias = nullptr;          // [cols] of this group
  const int32_t* weightSum = nullptr;   // [cols] of this group
  int32_t inputZero = 0;                // zp' of A
  const void* z = nullptr;              // residual (conv only): float storage `zType`, or
  DataType zType = DataType::kFloat32;  // int8 (zero point 0) read as zScale * z
  float zScale = 1.f;
  void* y = nullptr;
  DataType yType = DataType::kFloat32;
  bool quantized = false;
  float yScale = 1.f;
  int32_t yZeroPoint = 0;
  ConvEpilogue activation;
  int64_t rows = 0, cols = 0, spatial = 0, yChannels = 0, channelOffset = 0;
};
Status applyInt8Epilogue(const Int8Epilogue& e, cudaStream_t stream);

}  // namespace kiln::cuda
