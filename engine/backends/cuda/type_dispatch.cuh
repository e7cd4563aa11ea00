// The one type dispatcher of the CUDA kernels (issue 23): a kernel names the data types it
// takes as a set and gets called with the device storage type of its input's.
//
// Contract: dispatchDeviceType calls fn(T{}) with T the device type of `type` (float, __half,
// __nv_bfloat16, double, int8_t .. uint64_t, bool) when `type` is in `types`, and returns
// what fn returns; otherwise ctx.unsupported("data type NAME") (the layer then runs on the
// host fallback with that note). The form without a context is for a family's device half
// (`<family>_impl.cu`, called from its host `.cpp`, which checks the set first with
// device_type_sets.h's inDeviceTypes): outside the set it returns a kUnsupported status
// "data type NAME", which the host half turns into ctx.unsupported.
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

template <class Fn>
Status dispatchDeviceType(DataType type, uint32_t types, Fn&& fn) {
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

template <class Fn>
Status dispatchDeviceType(const GpuKernelContext& ctx, DataType type, uint32_t types, Fn&& fn) {
  if (!inDeviceTypes(type, types))
    return ctx.unsupported(std::string("data type ") + dataTypeName(type));
  return dispatchDeviceType(type, types, std::forward<Fn>(fn));
}

}  // namespace kiln::cuda
