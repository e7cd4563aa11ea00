// The contract between the host half of the quantization kernels (quantize.cpp:
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear) and their device half
// (quantize_impl.cu). Plain C++, included by both compilers.
//
// The host half has checked everything before it calls a launcher: inputs present, x's,
// the scale's and the zero point's types (float storage or int32 x, float scales, an
// integer or float-code target), the scale layout (ops::quantLayout), and it has allocated
// the outputs. A launcher only enqueues kernels on `stream` and returns the launch's status.
// Element types are switched at run time inside one kernel per op (uniform branches).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kiln/data_type.h"
#include "kiln/status.h"
#include "ops/quantize_params.h"

namespace kiln::cuda {

// One QuantizeLinear or DequantizeLinear over n > 0 elements of x. The scale and zero point
// of element i are at layout's index of i (ops/quantize_params.h).
struct QuantizeLaunch {
  const void* x = nullptr;
  DataType xType = DataType::kUndefined;
  const void* scale = nullptr;
  DataType scaleType = DataType::kUndefined;
  const void* zeroPoint = nullptr;  // nullptr: zero
  DataType zeroType = DataType::kUndefined;
  void* y = nullptr;
  DataType yType = DataType::kUndefined;
  ops::QuantLayout layout;
  double lo = 0, hi = 0;  // an integer target's range (ops::integerRange)
  bool saturate = true;   // float8 targets: saturate rather than give inf / NaN
  int64_t n = 0;
};

// y = saturate(rint(x / scale) + zeroPoint) for an integer yType (int8 .. uint2, int16,
// uint16; NaN becomes 0), or x / scale encoded as the float code yType (float8 e4m3fn /
// e5m2 honouring `saturate`, float4e2m1 always saturating). Per-tensor float storage to
// int8/uint8 with 16-byte aligned whole packs takes a vectorized kernel, same arithmetic.
Status launchQuantize(const QuantizeLaunch& args, cudaStream_t stream);

// y = (x - zeroPoint) * scale in the float storage yType (`lo`, `hi`, `saturate` unused).
Status launchDequantize(const QuantizeLaunch& args, cudaStream_t stream);

// One DynamicQuantizeLinear of n elements of x (float32, float16 or bfloat16 storage):
// scale = (max(x, 0) - min(x, 0)) / 255 (1 / 255 when they are equal), zero point =
// rint(clamp(-min / scale, 0, 255)), y = saturate(rint(x / scale) + zero point) as uint8.
// `workspace` holds dynamicQuantizeWorkspaceBytes(n) bytes. With n == 0 only the scale
// and zero point outputs are written.
struct DynamicQuantizeLaunch {
  const void* x = nullptr;
  DataType xType = DataType::kUndefined;
  int64_t n = 0;
  uint8_t* y = nullptr;
  void* scaleOut = nullptr;  // nullptr: the node has no scale output
  DataType scaleType = DataType::kFloat32;
  uint8_t* zeroOut = nullptr;  // nullptr: the node has no zero point output
  void* workspace = nullptr;
};

// Bytes of device workspace a DynamicQuantizeLinear of n elements takes (per-block partial
// minima and maxima, then the scale and zero point).
size_t dynamicQuantizeWorkspaceBytes(int64_t n);

Status launchDynamicQuantize(const DynamicQuantizeLaunch& args, cudaStream_t stream);

}  // namespace kiln::cuda
