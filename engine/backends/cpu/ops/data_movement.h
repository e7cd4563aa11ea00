// Helpers for kernels that move elements without computing on them (the reshape
// family, transpose, concat, slice, pad, gather, ...). Such kernels treat every
// element as an opaque unsigned integer of its byte size, so one instantiation
// serves float16, int16 and uint16 alike; string tensors move as std::string.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/ops/op_utils.h"
#include "ops/output_size.h"
#include "ops/scalar_inputs.h"

namespace kiln::cpu {

// Calls f(TypeTag<T>{}) with T = uint8_t/uint16_t/uint32_t/uint64_t matching the
// element size of `type`, or T = std::string for string tensors.
template <class F>
Status dispatchByElementSize(DataType type, F&& f) {
  if (type == DataType::kString) return f(TypeTag<std::string>{});
  switch (dataTypeSize(type)) {
    case 1:
      return f(TypeTag<uint8_t>{});
    case 2:
      return f(TypeTag<uint16_t>{});
    case 4:
      return f(TypeTag<uint32_t>{});
    case 8:
      return f(TypeTag<uint64_t>{});
    default:
      return Status(StatusCode::kUnsupported, std::string("data type ") + dataTypeName(type));
  }
}

// Element pointer for either storage: the string vector or the raw bytes.
template <class T>
T* elementData(Tensor& tensor) {
  if constexpr (std::is_same_v<T, std::string>) {
    return tensor.strings().data();
  } else {
    return tensor.data<T>();
  }
}
template <class T>
const T* elementData(const Tensor& tensor) {
  if constexpr (std::is_same_v<T, std::string>) {
    return tensor.strings().data();
  } else {
    return tensor.data<T>();
  }
}

// For every multi-index i over `shape`: out[dot(i, outStrides)] = in[dot(i, inStrides)].
// Strides are in elements and may be zero (broadcast) or negative (reversed slices).
// The last axis is the inner loop, a plain copy when both of its strides are 1.
template <class T>
void stridedCopy(const T* in, const std::vector<int64_t>& inStrides, T* out,
                 const std::vector<int64_t>& outStrides, const Shape& shape) {
  const int rank = static_cast<int>(shape.size());
  const int64_t total = shapeNumel(shape);
  if (total <= 0) return;
  if (rank == 0) {
    *out = *in;
    return;
  }
  const int64_t inner = shape[rank - 1];
  const int64_t inStep = inStrides[rank - 1];
  const int64_t outStep = outStrides[rank - 1];
  const bool contiguous = inStep == 1 && outStep == 1;
  std::vector<int64_t> index(rank, 0);
  for (int64_t done = 0; done < total; done += inner) {
    if (contiguous) {
      std::copy_n(in, inner, out);
    } else {
      for (int64_t k = 0; k < inner; ++k) out[k * outStep] = in[k * inStep];
    }
    for (int d = rank - 2; d >= 0; --d) {
      in += inStrides[d];
      out += outStrides[d];
      if (++index[d] < shape[d]) break;
      in -= inStrides[d] * shape[d];
      out -= outStrides[d] * shape[d];
      index[d] = 0;
    }
  }
}

// Output sizes past this are refused (ops/output_size.h, the same bound on every backend).
using ops::kMaxOutputElements;

// ops::checkOutputElements with the node named in the error.
inline Status checkElementCount(const KernelContext& ctx, const Shape& shape, const char* what) {
  Status s = ops::checkOutputElements(shape, what);
  return s.isOk() ? s : ctx.error(s.message());
}

// Gather along one axis: src is [outer, dim, inner], dst is [outer, indices.size(), inner]
// with dst[o, i, :] = src[o, indices[i], :]. Indices must already be in [0, dim).
template <class T>
void gatherBlocks(const T* src, T* dst, int64_t outer, int64_t dim,
                  const std::vector<int64_t>& indices, int64_t inner) {
  const int64_t count = static_cast<int64_t>(indices.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < count; ++i) {
      std::copy_n(src + (o * dim + indices[i]) * inner, inner, dst + (o * count + i) * inner);
    }
  }
}

// out[i0, ..., in] = in[maps[0][i0], ..., maps[n][in]], or `value` where any map entry
// is -1 (a pad border, an extrapolated resize coordinate). Works row by row: each output
// row (all axes but the last fixed) is either all border or reads one input row
// through the last axis's map.
template <class T>
void gatherByAxisMaps(const T* in, const Shape& inShape, T* out, const Shape& outShape,
                      const std::vector<std::vector<int64_t>>& maps, const T& value) {
  const int rank = static_cast<int>(outShape.size());
  if (rank == 0) {
    *out = *in;
    return;
  }
  const std::vector<int64_t> strides = contiguousStrides(inShape);
  const int64_t inner = outShape[rank - 1];
  const int64_t rows = inner == 0 ? 0 : shapeNumel(outShape) / inner;
  const std::vector<int64_t>& lastMap = maps[rank - 1];
  std::vector<int64_t> index(rank, 0);
  for (int64_t r = 0; r < rows; ++r, out += inner) {
    int64_t offset = 0;
    bool border = false;
    for (int d = 0; d + 1 < rank; ++d) {
      const int64_t m = maps[d][index[d]];
      border = border || m < 0;
      offset += m * strides[d];
    }
    for (int64_t k = 0; k < inner; ++k) {
      out[k] = border || lastMap[k] < 0 ? value : in[offset + lastMap[k]];
    }
    for (int d = rank - 2; d >= 0; --d) {
      if (++index[d] < outShape[d]) break;
      index[d] = 0;
    }
  }
}

// Reads input `i` (an integer tensor of rank <= 1) into `out`; error naming `what` when it
// has another type or rank. An absent input leaves `out` untouched and is not an error.
inline Status readIntInput(const KernelContext& ctx, size_t i, const char* what,
                           std::vector<int64_t>* out) {
  if (!ctx.hasInput(i)) return Status::ok();
  auto values = ops::intListInput(ctx.input(i), what);
  if (!values.isOk()) return ctx.error(values.status().message());
  *out = std::move(values).value();
  return Status::ok();
}

}  // namespace kiln::cpu
