// What the quantization kernels' device code shares (quantize_impl.cu: Q, DQ,
// DynamicQuantizeLinear; matmul_integer_impl.cu: MatMulInteger, QLinearMatMul): the float8 /
// float4 decoders and loadAsFloat. The host halves share quantize_common.h. Included by the
// _impl.cu files only; internal to kiln_cuda.
#pragma once

#include "backends/cuda/device_common.cuh"

namespace kiln::cuda::qz {

// float8 (e4m3fn, e5m2) and float4e2m1 codes to float (device ports of
// common/data_type.cpp).
__device__ inline float decodeSmallFloat(uint8_t bits, int expBits, int mantBits, int bias) {
  const int sign = bits >> 7;
  const int exponent = (bits >> mantBits) & ((1 << expBits) - 1);
  const int mantissa = bits & ((1 << mantBits) - 1);
  float v;
  if (exponent == 0)
    v = ldexpf(static_cast<float>(mantissa), 1 - bias - mantBits);
  else
    v = ldexpf(1.0f + static_cast<float>(mantissa) / (1 << mantBits), exponent - bias);
  return sign ? -v : v;
}

__device__ inline float fp8E4M3ToFloatDev(uint8_t bits) {
  if ((bits & 0x7f) == 0x7f) return __int_as_float(0x7fc00000);
  return decodeSmallFloat(bits, 4, 3, 7);
}

__device__ inline float fp8E5M2ToFloatDev(uint8_t bits) {
  const int exponent = (bits >> 2) & 0x1f;
  if (exponent == 31) {
    if (bits & 3) return __int_as_float(0x7fc00000);
    return (bits & 0x80) ? -INFINITY : INFINITY;
  }
  return decodeSmallFloat(bits, 5, 2, 15);
}

__device__ inline float float4E2M1ToFloatDev(uint8_t code) {
  const float kMagnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float v = kMagnitudes[code & 0x7];
  return (code & 0x8) ? -v : v;
}

// Element i of a tensor of `type` as float (the CPU's readFloats).
__device__ inline float loadAsFloat(const void* p, DataType type, int64_t i) {
  switch (type) {
    case DataType::kFloat32:
      return static_cast<const float*>(p)[i];
    case DataType::kFloat16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case DataType::kBFloat16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case DataType::kFloat64:
      return __double2float_rn(static_cast<const double*>(p)[i]);
    case DataType::kInt32:
      return __int2float_rn(static_cast<const int32_t*>(p)[i]);
    case DataType::kInt8:
    case DataType::kInt4:
    case DataType::kInt2:
      return static_cast<float>(static_cast<const int8_t*>(p)[i]);
    case DataType::kUInt8:
    case DataType::kUInt4:
    case DataType::kUInt2:
      return static_cast<float>(static_cast<const uint8_t*>(p)[i]);
    case DataType::kInt16:
      return static_cast<float>(static_cast<const int16_t*>(p)[i]);
    case DataType::kUInt16:
      return static_cast<float>(static_cast<const uint16_t*>(p)[i]);
    case DataType::kFp8E4M3:
      return fp8E4M3ToFloatDev(static_cast<const uint8_t*>(p)[i]);
    case DataType::kFp8E5M2:
      return fp8E5M2ToFloatDev(static_cast<const uint8_t*>(p)[i]);
    case DataType::kFloat4E2M1:
      return float4E2M1ToFloatDev(static_cast<const uint8_t*>(p)[i]);
    default:
      return 0.0f;
  }
}

}  // namespace kiln::cuda::qz
