// The one type dispatcher of the CUDA kernels (issue 23): a kernel names the data types it
// takes as a set and gets called with the device storage type of its input's.
//
// Contract: dispatchDeviceType calls fn(T{}) with T the device type of `type` (float, __half,
// __nv_bfloat16, double, int8_t .. uint64_t, bool) when `type` is in `types`, and returns
// what fn returns; otherwise ctx.unsupported("data type NAME") (the layer then runs on the
// host fallback with that note).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "backends/cuda/gpu_kernel.h"
#include "kiln/data_type.h"

namespace kiln::cuda {

// Bit sets of data types, as dispatchDeviceType takes them.
namespace device_types {
constexpr uint32_t kFloat32 = 1u << 0, kFloat16 = 1u << 1, kBFloat16 = 1u << 2, kFloat64 = 1u << 3,
                   kInt8 = 1u << 4, kUInt8 = 1u << 5, kInt16 = 1u << 6, kUInt16 = 1u << 7,
                   kInt32 = 1u << 8, kUInt32 = 1u << 9, kInt64 = 1u << 10, kUInt64 = 1u << 11,
                   kBool = 1u << 12;
constexpr uint32_t kStorageFloats = kFloat32 | kFloat16 | kBFloat16;  // what engines store
constexpr uint32_t kFloats = kStorageFloats | kFloat64;
constexpr uint32_t kIndexIntegers = kInt32 | kInt64;
constexpr uint32_t kByteAndIndexIntegers = kInt8 | kUInt8 | kIndexIntegers;
constexpr uint32_t kIntegers = kByteAndIndexIntegers | kInt16 | kUInt16 | kUInt32 | kUInt64;
}  // namespace device_types

template <class Fn>
Status dispatchDeviceType(const GpuKernelContext& ctx, DataType type, uint32_t types, Fn&& fn) {
  namespace t = device_types;
  auto in = [types](uint32_t bit) { return (types & bit) != 0; };
  switch (type) {
    case DataType::kFloat32:
      if (in(t::kFloat32)) return fn(float{});
      break;
    case DataType::kFloat16:
      if (in(t::kFloat16)) return fn(__half{});
      break;
    case DataType::kBFloat16:
      if (in(t::kBFloat16)) return fn(__nv_bfloat16{});
      break;
    case DataType::kFloat64:
      if (in(t::kFloat64)) return fn(double{});
      break;
    case DataType::kInt8:
      if (in(t::kInt8)) return fn(int8_t{});
      break;
    case DataType::kUInt8:
      if (in(t::kUInt8)) return fn(uint8_t{});
      break;
    case DataType::kInt16:
      if (in(t::kInt16)) return fn(int16_t{});
      break;
    case DataType::kUInt16:
      if (in(t::kUInt16)) return fn(uint16_t{});
      break;
    case DataType::kInt32:
      if (in(t::kInt32)) return fn(int32_t{});
      break;
    case DataType::kUInt32:
      if (in(t::kUInt32)) return fn(uint32_t{});
      break;
    case DataType::kInt64:
      if (in(t::kInt64)) return fn(int64_t{});
      break;
    case DataType::kUInt64:
      if (in(t::kUInt64)) return fn(uint64_t{});
      break;
    case DataType::kBool:
      if (in(t::kBool)) return fn(bool{});
      break;
    default:
      break;
  }
  return ctx.unsupported(std::string("data type ") + dataTypeName(type));
}

}  // namespace kiln::cuda
