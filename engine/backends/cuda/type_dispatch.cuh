// The one type dispatcher of the CUDA kernels (issue 23): a kernel names the data types it
// takes as a set and gets called with the device storage type of its input's.
//
// Contract: dispatchDeviceType calls fn(T{}) with T the device type of `type` (float, __half,
// __nv_bfloat16, double, int8_t .. uint64_t, bool) when `type` is in `types`, and returns
// what fn returns; otherwise ctx.unsupported("data type NAME") (the layer then runs on the
// host fallback with that note). The form without a context, dispatchDeviceType<kSet>(type,
// fn), is for a family's device half (`<family>_impl.cu`, called from its host `.cpp`,
// which checks the set first with op_common.h's requireDeviceType): fn is instantiated only
// for the set's types, and another type gives a kUnsupported status "data type NAME".
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>
#include <utility>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "kiln/data_type.h"

namespace kiln::cuda {

// The device half's form: the set is a compile-time constant, so fn is instantiated only
// for the set's types (no kernels for types the family never takes); another type gives a
// kUnsupported status "data type NAME" (the host half checked the set before calling).
template <uint32_t kTypes, class Fn>
Status dispatchDeviceType(DataType type, Fn&& fn) {
  namespace t = device_types;
  switch (type) {
    case DataType::kFloat32:
      if constexpr ((kTypes & t::kFloat32) != 0) return fn(float{});
      break;
    case DataType::kFloat16:
      if constexpr ((kTypes & t::kFloat16) != 0) return fn(__half{});
      break;
    case DataType::kBFloat16:
      if constexpr ((kTypes & t::kBFloat16) != 0) return fn(__nv_bfloat16{});
      break;
    case DataType::kFloat64:
      if constexpr ((kTypes & t::kFloat64) != 0) return fn(double{});
      break;
    case DataType::kInt8:
      if constexpr ((kTypes & t::kInt8) != 0) return fn(int8_t{});
      break;
    case DataType::kUInt8:
      if constexpr ((kTypes & t::kUInt8) != 0) return fn(uint8_t{});
      break;
    case DataType::kInt16:
      if constexpr ((kTypes & t::kInt16) != 0) return fn(int16_t{});
      break;
    case DataType::kUInt16:
      if constexpr ((kTypes & t::kUInt16) != 0) return fn(uint16_t{});
      break;
    case DataType::kInt32:
      if constexpr ((kTypes & t::kInt32) != 0) return fn(int32_t{});
      break;
    case DataType::kUInt32:
      if constexpr ((kTypes & t::kUInt32) != 0) return fn(uint32_t{});
      break;
    case DataType::kInt64:
      if constexpr ((kTypes & t::kInt64) != 0) return fn(int64_t{});
      break;
    case DataType::kUInt64:
      if constexpr ((kTypes & t::kUInt64) != 0) return fn(uint64_t{});
      break;
    case DataType::kBool:
      if constexpr ((kTypes & t::kBool) != 0) return fn(bool{});
      break;
    default:
      break;
  }
  return Status(StatusCode::kUnsupported, std::string("data type ") + dataTypeName(type));
}

// For ops that move bytes: fn(W{}) with W the unsigned word of `bytes` bytes (uint8_t ..
// uint64_t); another size gives a kUnsupported status naming it. dispatchWord takes the
// element type (any type of 1, 2, 4 or 8 bytes: float8, complex64, ... included) and names
// the type when its size is another (host halves check isWordSized first).
template <class Fn>
Status dispatchWordOfSize(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    case 8:
      return fn(uint64_t{});
    default:
      return Status(StatusCode::kUnsupported,
                    "elements of " + std::to_string(bytes) + " bytes (1, 2, 4 or 8 move)");
  }
}

template <class Fn>
Status dispatchWord(DataType type, Fn&& fn) {
  if (!isWordSized(type))
    return Status(StatusCode::kUnsupported, std::string("data type ") + dataTypeName(type));
  return dispatchWordOfSize(dataTypeSize(type), std::forward<Fn>(fn));
}

namespace detail {
// The context form's switch: the set is known only at run time, so fn is instantiated for
// every type (the older families' kernels; the split ones use the compile-time form).
template <class Fn>
Status dispatchDeviceTypeInSet(DataType type, uint32_t types, Fn&& fn) {
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
  return Status(StatusCode::kUnsupported, std::string("data type ") + dataTypeName(type));
}
}  // namespace detail

template <class Fn>
Status dispatchDeviceType(const GpuKernelContext& ctx, DataType type, uint32_t types, Fn&& fn) {
  if (!inDeviceTypes(type, types))
    return ctx.unsupported(std::string("data type ") + dataTypeName(type));
  return detail::dispatchDeviceTypeInSet(type, types, std::forward<Fn>(fn));
}

}  // namespace kiln::cuda
