// Shared device-side helpers for Kiln's own kernels: type dispatch, float
// conversions for half/bfloat16, launch geometry and broadcast indexing.
// Included by .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common_host.h"
#include "backends/cuda/device_shapes.h"
#include "backends/cuda/gpu_kernel.h"

namespace kiln::cuda {

constexpr int kBlockSize = 256;

inline unsigned gridFor(int64_t n, int block = kBlockSize) {
  int64_t blocks = (n + block - 1) / block;
  if (blocks < 1) blocks = 1;
  if (blocks > 65535LL * 32) blocks = 65535LL * 32;  // grid-stride loops cover the rest
  return static_cast<unsigned>(blocks);
}

template <class T>
__device__ __forceinline__ float toFloat(T v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ float toFloat<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ __forceinline__ float toFloat<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <class T>
__device__ __forceinline__ T fromFloat(float v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half fromFloat<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// A float value stored as T: fromFloat for the float types; integer types saturate to
// [lowest, max] first (a value already integral, e.g. an int8 maximum computed in
// float, stays exact; -FLT_MAX becomes T's lowest).
template <class T>
__device__ __forceinline__ T fromFloatSaturating(float v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(fminf(fmaxf(v, static_cast<float>(std::numeric_limits<T>::lowest())),
                                static_cast<float>(std::numeric_limits<T>::max())));
  } else {
    return fromFloat<T>(v);
  }
}

// The compute type of T: float for the 16-bit floats, T otherwise.
template <class T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<__half> {
  using type = float;
};
template <>
struct ComputeType<__nv_bfloat16> {
  using type = float;
};

// Offset into a tensor with `info.strides` of the element at linear index `i` of
// a packed tensor with `info.dims`.
__device__ __forceinline__ int64_t stridedOffset(const ShapeInfo& info, int64_t i) {
  int64_t offset = 0;
#pragma unroll
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (d >= info.rank) continue;
    int64_t q = i / info.dims[d];
    offset += (i - q * info.dims[d]) * info.strides[d];
    i = q;
  }
  return offset;
}

}  // namespace kiln::cuda

// Calls BODY with `T` bound to the C++ type of the float storage DTYPE; returns
// kUnsupported from the enclosing function for other types.
#define KILN_DISPATCH_FLOAT(DTYPE, CONTEXT, ...)                                             \
  switch (DTYPE) {                                                                           \
    case ::kiln::DataType::kFloat32: {                                                       \
      using T = float;                                                                       \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kFloat16: {                                                       \
      using T = __half;                                                                      \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kBFloat16: {                                                      \
      using T = __nv_bfloat16;                                                               \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kFloat64: {                                                       \
      using T = double;                                                                      \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    default:                                                                                 \
      return (CONTEXT).unsupported(std::string("data type ") + ::kiln::dataTypeName(DTYPE)); \
  }

// Float types plus every integer type and bool.
#define KILN_DISPATCH_NUMERIC(DTYPE, CONTEXT, ...)                                           \
  switch (DTYPE) {                                                                           \
    case ::kiln::DataType::kFloat32: {                                                       \
      using T = float;                                                                       \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kFloat16: {                                                       \
      using T = __half;                                                                      \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kBFloat16: {                                                      \
      using T = __nv_bfloat16;                                                               \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kFloat64: {                                                       \
      using T = double;                                                                      \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kInt8: {                                                          \
      using T = int8_t;                                                                      \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kUInt8: {                                                         \
      using T = uint8_t;                                                                     \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kInt16: {                                                         \
      using T = int16_t;                                                                     \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kUInt16: {                                                        \
      using T = uint16_t;                                                                    \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kInt32: {                                                         \
      using T = int32_t;                                                                     \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kUInt32: {                                                        \
      using T = uint32_t;                                                                    \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kInt64: {                                                         \
      using T = int64_t;                                                                     \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kUInt64: {                                                        \
      using T = uint64_t;                                                                    \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case ::kiln::DataType::kBool: {                                                          \
      using T = bool;                                                                        \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    default:                                                                                 \
      return (CONTEXT).unsupported(std::string("data type ") + ::kiln::dataTypeName(DTYPE)); \
  }

// Dispatch on element byte size only (1, 2, 4, 8): for ops that move bytes.
#define KILN_DISPATCH_BYTES(DTYPE, CONTEXT, ...)                                             \
  switch (::kiln::dataTypeSize(DTYPE)) {                                                     \
    case 1: {                                                                                \
      using T = uint8_t;                                                                     \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case 2: {                                                                                \
      using T = uint16_t;                                                                    \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case 4: {                                                                                \
      using T = uint32_t;                                                                    \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    case 8: {                                                                                \
      using T = uint64_t;                                                                    \
      __VA_ARGS__;                                                                           \
      break;                                                                                 \
    }                                                                                        \
    default:                                                                                 \
      return (CONTEXT).unsupported(std::string("data type ") + ::kiln::dataTypeName(DTYPE)); \
  }
