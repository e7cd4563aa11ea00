// Helpers shared by CPU kernels: type dispatch, broadcasting, axis handling.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernel.h"
#include "kiln/data_type.h"
#include "kiln/tensor.h"

namespace kiln::cpu {

template <class T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) for the C++ type that stores `type`. Half and BFloat16 convert
// to float implicitly and from float explicitly, so `static_cast<T>(float expr)` works
// in generic code. Returns the functor's Status, or an unsupported-type error.
template <class F>
Status dispatchAllTypes(DataType type, F&& f) {
  switch (type) {
    case DataType::kFloat32:
      return f(TypeTag<float>{});
    case DataType::kFloat64:
      return f(TypeTag<double>{});
    case DataType::kFloat16:
      return f(TypeTag<Half>{});
    case DataType::kBFloat16:
      return f(TypeTag<BFloat16>{});
    case DataType::kInt8:
      return f(TypeTag<int8_t>{});
    case DataType::kUInt8:
      return f(TypeTag<uint8_t>{});
    case DataType::kInt16:
      return f(TypeTag<int16_t>{});
    case DataType::kUInt16:
      return f(TypeTag<uint16_t>{});
    case DataType::kInt32:
      return f(TypeTag<int32_t>{});
    case DataType::kUInt32:
      return f(TypeTag<uint32_t>{});
    case DataType::kInt64:
      return f(TypeTag<int64_t>{});
    case DataType::kUInt64:
      return f(TypeTag<uint64_t>{});
    case DataType::kBool:
      return f(TypeTag<bool>{});
    default:
      return Status(StatusCode::kUnsupported, std::string("data type ") + dataTypeName(type));
  }
}

// As dispatchAllTypes, for floating-point types only (float32/64, float16, bfloat16).
template <class F>
Status dispatchFloatTypes(DataType type, F&& f) {
  switch (type) {
    case DataType::kFloat32:
      return f(TypeTag<float>{});
    case DataType::kFloat64:
      return f(TypeTag<double>{});
    case DataType::kFloat16:
      return f(TypeTag<Half>{});
    case DataType::kBFloat16:
      return f(TypeTag<BFloat16>{});
    default:
      return Status(StatusCode::kUnsupported, std::string("data type ") + dataTypeName(type));
  }
}

// The arithmetic type to compute in: float for Half/BFloat16, T otherwise.
template <class T>
using ComputeType =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

// ONNX multidirectional (numpy) broadcasting of two shapes; error if incompatible.
Status broadcastShapes(const Shape& a, const Shape& b, Shape* out);
// Element strides of `in` read as if broadcast to `out` (0 on broadcast axes);
// result has out.size() entries. `in` must be broadcast-compatible with `out`.
std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out);
// Row-major strides of a shape.
std::vector<int64_t> contiguousStrides(const Shape& shape);
// Maps a possibly negative axis into [0, rank); error when out of range.
Status normalizeAxis(int64_t axis, int64_t rank, int64_t* out);

// Iterates a multi-index over `shape` in row-major order and calls f(outIndex, offsets)
// where offsets[k] = dot(index, strides[k]) for each stride vector given.
template <class F>
void forEachBroadcast(const Shape& shape, const std::vector<std::vector<int64_t>>& strides, F&& f) {
  const int rank = static_cast<int>(shape.size());
  const int64_t total = shapeNumel(shape);
  if (total <= 0) return;
  std::vector<int64_t> index(rank, 0);
  std::vector<int64_t> offsets(strides.size(), 0);
  for (int64_t linear = 0; linear < total; ++linear) {
    f(linear, offsets);
    for (int d = rank - 1; d >= 0; --d) {
      ++index[d];
      for (size_t k = 0; k < strides.size(); ++k) offsets[k] += strides[k][d];
      if (index[d] < shape[d]) break;
      for (size_t k = 0; k < strides.size(); ++k) offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

// As normalizeAxis, with an error naming the node and `what` ("axis", "attribute axis").
Status resolveAxis(const KernelContext& ctx, int64_t axis, int64_t rank, const char* what,
                   int64_t* out);

// Reads a 1-D int tensor (int32/int64) as int64 values.
std::vector<int64_t> readInt64s(const Tensor& tensor);

}  // namespace kiln::cpu
