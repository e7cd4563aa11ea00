// Device side of ai.kiln Fp8MatMul on the GPU (contract: ir/fp8_layers.h; host side
// and the cuBLASLt call: fp8_matmul.cpp). Two small kernels around the library GEMM:
// packing X into the E4M3 operand cuBLASLt reads (quantizing a float X, zero-padding
// K to a multiple of 16), and the epilogue Kiln runs where cuBLASLt's does not apply
// (float32 output with bias, FP8 output, padded N).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {

// a[r, k] (row-major [rows, kPadded] E4M3 codes) for k < depth: x's code when `xType`
// is float8e4m3fn, else E4M3(x / scale) of the float32/float16/bfloat16 value
// (round to nearest even, saturating to +-448, NaN kept: QuantizeLinear with
// saturate = 1); a[r, k] = 0 (+0.0) for depth <= k < kPadded.
Status packFp8Input(const void* x, DataType xType, float scale, int64_t rows, int64_t depth,
                    int64_t kPadded, uint8_t* a, cudaStream_t stream);

// y[r, c] = out(act(d[r, c] + bias[c])) for r < rows, c < cols. d: the GEMM result,
// float storage `dType` with row stride `dStride` (>= cols); y: [rows, cols] in float
// storage `yType`, or float8e4m3fn = E4M3(v / yScale) (saturating). y may be d itself
// when dType == yType and dStride == cols (each element is read before it is written).
struct Fp8Epilogue {
  const void* d = nullptr;
  DataType dType = DataType::kFloat32;
  int64_t dStride = 0;
  void* y = nullptr;
  DataType yType = DataType::kFloat32;
  const float* bias = nullptr;  // [cols] or nullptr
  bool relu = false;
  float yScale = 1.f;
  int64_t rows = 0, cols = 0;
};
Status applyFp8Epilogue(const Fp8Epilogue& e, cudaStream_t stream);

}  // namespace kiln::cuda
