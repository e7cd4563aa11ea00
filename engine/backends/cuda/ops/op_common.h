// Host checks shared by the CUDA op families' host halves (and, through op_common.cuh,
// the .cu files not yet split): input checks with the CPU kernels' error messages
// (requireInputs, checkElementCount, normalizeAxis, readInts), a tensor's dims for
// messages, and the data-type tests their support predicates share. Plain C++ (g++).
//
// Contract: every check returns ctx.error(...) naming the node, with the CPU kernel's
// message, or OK; none launches anything.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "ops/output_size.h"

namespace kiln::cuda {

using ops::kMaxOutputElements;  // the CPU kernels' bound (ops/output_size.h)

// float32, float16 or bfloat16: the float storage types of the float kernels.
inline bool isFloatStorage(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

inline bool isIndexType(DataType t) {
  return t == DataType::kInt64 || t == DataType::kInt32;
}

// Slot `i` of a support predicate's input types (kUndefined past the end).
inline DataType typeAt(const std::vector<DataType>& types, size_t i) {
  return i < types.size() ? types[i] : DataType::kUndefined;
}

// A tensor's dims for messages ("2x3x4").
inline std::string dims(const DeviceTensor& t) {
  return shapeToString(t.shape);
}

inline bool isFloatData(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 ||
         t == DataType::kFloat64;
}

inline Status requireInputs(const GpuKernelContext& ctx, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (!ctx.hasInput(i)) return ctx.error("required input " + std::to_string(i) + " is missing");
  }
  return Status::ok();
}

// Error naming `what` when `shape` has a negative dim or more than kMaxOutputElements.
inline Status checkElementCount(const GpuKernelContext& ctx, const Shape& shape, const char* what) {
  Status s = ops::checkOutputElements(shape, what);
  return s.isOk() ? s : ctx.error(s.message());
}

inline Status normalizeAxis(const GpuKernelContext& ctx, int64_t axis, int64_t rank, int64_t* out) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    return ctx.error("axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  *out = axis < 0 ? axis + rank : axis;
  return Status::ok();
}

// Reads an integer tensor of rank <= 1 (sizes, shape); nothing when absent or empty.
inline Status readInts(GpuKernelContext& ctx, size_t i, const char* what,
                       std::vector<int64_t>* out) {
  if (!ctx.hasInput(i)) return Status::ok();
  const DeviceTensor& d = ctx.input(i);
  if (!isInteger(d.type)) {
    return ctx.error(std::string(what) + " must be an integer tensor, got " + dataTypeName(d.type));
  }
  if (d.rank() > 1)
    return ctx.error(std::string(what) + " must be 1-D, got rank " + std::to_string(d.rank()));
  if (d.numel() == 0) return Status::ok();
  KILN_ASSIGN_OR_RETURN(Tensor t, ctx.hostInput(i));
  *out = t.toInt64Vector();
  return Status::ok();
}

// Element 0 of a host tensor as raw bytes of T's size (byte-size dispatch).
template <class T>
T firstElementBits(const Tensor& t) {
  T v{};
  std::memcpy(&v, t.rawData(), sizeof(T));
  return v;
}

// What a kernel says of an element type it has no instance for ("data type X"; the layer
// then runs on the host fallback with that note).
inline Status unsupportedType(const GpuKernelContext& ctx, DataType type) {
  return ctx.unsupported(std::string("data type ") + dataTypeName(type));
}

// OK when `type` is in the set `types` (device_type_sets.h), else unsupportedType: a host
// half calls it before its device half, which takes only the types of its set.
inline Status requireDeviceType(const GpuKernelContext& ctx, DataType type, uint32_t types) {
  return inDeviceTypes(type, types) ? Status::ok() : unsupportedType(ctx, type);
}

// The first input's type of a support predicate (kUndefined when none is known).
inline DataType firstType(const std::vector<DataType>& types) {
  return types.empty() ? DataType::kUndefined : types[0];
}

}  // namespace kiln::cuda
