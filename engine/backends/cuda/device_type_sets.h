// Sets of data types a CUDA kernel takes, as host code names them (issue 23: a family's
// host half, compiled by g++, checks its input types before it calls the device half).
//
// Contract: a set is a bit mask of device_types::k*; inDeviceTypes(type, set) is true when
// `type` is in it. type_dispatch.cuh's dispatchDeviceType takes the same sets.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kiln/data_type.h"

namespace kiln::cuda {

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

// The set's bit of `type`, 0 for a type no kernel stores (strings, float8, int4, ...).
constexpr uint32_t deviceTypeBit(DataType type) {
  namespace t = device_types;
  switch (type) {
    case DataType::kFloat32:
      return t::kFloat32;
    case DataType::kFloat16:
      return t::kFloat16;
    case DataType::kBFloat16:
      return t::kBFloat16;
    case DataType::kFloat64:
      return t::kFloat64;
    case DataType::kInt8:
      return t::kInt8;
    case DataType::kUInt8:
      return t::kUInt8;
    case DataType::kInt16:
      return t::kInt16;
    case DataType::kUInt16:
      return t::kUInt16;
    case DataType::kInt32:
      return t::kInt32;
    case DataType::kUInt32:
      return t::kUInt32;
    case DataType::kInt64:
      return t::kInt64;
    case DataType::kUInt64:
      return t::kUInt64;
    case DataType::kBool:
      return t::kBool;
    default:
      return 0;
  }
}

constexpr bool inDeviceTypes(DataType type, uint32_t types) {
  return (deviceTypeBit(type) & types) != 0;
}

// A type of 1, 2, 4 or 8 bytes: what type_dispatch.cuh's dispatchWord moves.
inline bool isWordSized(DataType type) {
  const size_t bytes = dataTypeSize(type);
  return bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8;
}

}  // namespace kiln::cuda
