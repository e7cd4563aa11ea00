// What the host halves of the quantization kernels share (quantize.cpp: Q, DQ,
// DynamicQuantizeLinear; matmul_integer.cpp: MatMulInteger, QLinearMatMul): input and type
// checks with the CPU kernels' messages. Plain C++ (g++ and nvcc); the device part of the
// family is quantize_common.cuh. Internal to kiln_cuda.
#pragma once

#include <string>
#include <vector>

#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/op_common.h"
#include "kiln/data_type.h"

namespace kiln::cuda::qz {

// op_common.h's checks, as this family's files name them.
using cuda::isFloatData;
using cuda::requireInputs;
using cuda::typeAt;

// Input i, or nullptr when the node leaves it out.
inline const DeviceTensor* inputOrNull(const GpuKernelContext& ctx, size_t i) {
  return i < ctx.inputCount() && ctx.hasInput(i) ? &ctx.input(i) : nullptr;
}

// int8 or uint8: the operands and outputs of the integer GEMMs.
inline bool isQuantized8(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUInt8;
}

// float8 (e4m3fn, e5m2) and float4e2m1: the quantized float codes (constexpr, so device
// code calls it too).
constexpr bool isFloatCode(DataType t) {
  return t == DataType::kFp8E4M3 || t == DataType::kFp8E5M2 || t == DataType::kFloat4E2M1;
}

}  // namespace kiln::cuda::qz
