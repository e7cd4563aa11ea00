// Device half of the tensor generators (host half: generators.cpp): Trilu, Range,
// ConstantOfShape, EyeLike and OneHot.
//
// Contract of every launcher: one grid-stride kernel (gridFor(total) blocks of kBlockSize
// threads) on `stream` over the output's `total` > 0 elements; a failed launch comes back
// as a Status naming the kernel. The host half has checked shapes, attributes and types
// and allocated the output first:
// - Trilu, ConstantOfShape, EyeLike and OneHot move bytes: their element `type` is any
//   type isMovableElement accepts (1, 2, 4 or 8 bytes), moved as the unsigned integer of
//   its size.
// - Range writes the numeric types less bool (kRangeTypes), computing in the compute
//   type RangeLaunch names.
// - Trilu's k and OneHot's indices are read on the device as Tensor::valueAsInt64 reads
//   them (integers as they are, floats truncated: non-finite -> 0, saturating at
//   +-9.2e18), for the types isDeviceIndexType accepts.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_type_sets.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {

// The index types the generators' kernels read on the device (Trilu's k, OneHot's indices).
inline bool isDeviceIndexType(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kInt4:
    case DataType::kInt2:
    case DataType::kUInt8:
    case DataType::kUInt4:
    case DataType::kUInt2:
    case DataType::kBool:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kUInt32:
    case DataType::kInt64:
    case DataType::kUInt64:
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return true;
    default:
      return false;
  }
}

// An element the byte-moving kernels take: 1, 2, 4 or 8 bytes.
inline bool isMovableElement(DataType t) {
  const size_t bytes = dataTypeSize(t);
  return bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8;
}

// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of every [rows, cols] matrix
// of `in`, zeroing the rest of `out`. k is read on the device from `k` (kType), 0 when
// `k` is null.
struct TriluLaunch {
  const void* in = nullptr;
  void* out = nullptr;
  DataType type = DataType::kUndefined;
  int64_t rows = 0, cols = 0, total = 0;
  const void* k = nullptr;  // a one-element device tensor, or null
  DataType kType = DataType::kInt64;
  bool upper = true;
};
Status launchTrilu(const TriluLaunch& args, cudaStream_t stream);

// The element types Range writes.
constexpr uint32_t kRangeTypes = device_types::kFloats | device_types::kIntegers;

// out[i] = start + i * delta for i < count, in the compute type C of `type` (op_common.cuh's
// AccOf): float for float32, float16, bfloat16, int8 and uint8; double for float64; the
// type itself for the other integers. start and delta are carried exactly: a float or
// double C in floatStart / floatDelta, an integer C in intStart / intDelta (as int64,
// converted back to C on the device).
struct RangeLaunch {
  void* out = nullptr;
  DataType type = DataType::kUndefined;
  int64_t count = 0;
  double floatStart = 0, floatDelta = 0;
  int64_t intStart = 0, intDelta = 0;
};
Status launchRange(const RangeLaunch& args, cudaStream_t stream);

// ConstantOfShape: out[0, total) = the element whose raw bytes (`type`'s size) `value`
// points to in host memory (read before the launcher returns).
Status launchFill(void* out, DataType type, const void* value, int64_t total, cudaStream_t stream);

// EyeLike: out[i, j] of a [total / cols, cols] matrix = `one` (host bytes of one `type`
// element, read before the launcher returns) where j - i == k, else zero bytes.
struct EyeLikeLaunch {
  void* out = nullptr;
  DataType type = DataType::kUndefined;
  const void* one = nullptr;
  int64_t cols = 0, k = 0, total = 0;
};
Status launchEyeLike(const EyeLikeLaunch& args, cudaStream_t stream);

// OneHot: out[o, v, i] ([outer, depth, inner]) = values[1] (on) when the index at [o, i]
// (plus depth when negative) equals v, else values[0] (off); `values` is the device
// [off, on] tensor of `type`.
struct OneHotLaunch {
  const void* indices = nullptr;
  DataType indexType = DataType::kInt64;
  const void* values = nullptr;
  void* out = nullptr;
  DataType type = DataType::kUndefined;
  int64_t depth = 0, inner = 0, total = 0;
};
Status launchOneHot(const OneHotLaunch& args, cudaStream_t stream);

}  // namespace kiln::cuda
