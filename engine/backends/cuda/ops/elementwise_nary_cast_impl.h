// The host/device contract of the variadic Sum / Mean / Max / Min, Where, Cast and CastLike
// (host: elementwise_nary_cast.cpp; kernels: elementwise_nary_cast_impl.cu): one launch of
// each kernel. Operands are read through the host's broadcast plan (elementwise_common.h's
// Operand). Plain C++ (g++ and nvcc).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/ops/elementwise_common.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::ew {

// ---- Variadic Sum, Mean, Max, Min: up to kMaxVariadic inputs per launch, folded left to
// right in the compute type.

constexpr int kMaxVariadic = 8;

enum class VariadicOp : int { kSum, kMax, kMin };

// out = fold(op, data[0], ..., data[count - 1]) over n > 0 output elements of `type`,
// divided by meanDivisor when it is > 0. data[0] may be out itself (a partial result).
struct VariadicLaunch {
  const void* data[kMaxVariadic] = {};
  Operand operands[kMaxVariadic];
  int count = 0;
  VariadicOp op = VariadicOp::kSum;
  int meanDivisor = 0;  // > 0: divide the result by this (Mean's last launch)
  void* out = nullptr;
  DataType type = DataType::kFloat32;
  int64_t n = 0;
};

// Launches one variadic fold on `stream`. Assumes the host checked `type` (numeric: bool
// gives kUnsupported "bool inputs", a type outside kElementwiseDeviceTypes "data type X"),
// planned count operands and allocated out.
Status launchVariadic(const VariadicLaunch& launch, cudaStream_t stream);

// ---- Where: cond ? x : y over the broadcast of all three; moves elements by byte size.

struct WhereLaunch {
  const void* cond = nullptr;  // bool
  const void* x = nullptr;
  const void* y = nullptr;
  void* out = nullptr;
  DataType type = DataType::kFloat32;  // of x, y and out
  int64_t n = 0;                       // output elements, > 0
  Operand operands[3];                 // cond, x, y
};

// Launches the Where kernel for `type`'s element size on `stream`. Assumes the host checked
// the types (other sizes than 1, 2, 4, 8 bytes: kUnsupported "data type X"), planned the
// operands and allocated out.
Status launchWhere(const WhereLaunch& launch, cudaStream_t stream);

// ---- Cast and CastLike among the numeric types and bool.

// dst = src converted element by element with ONNX Cast semantics.
struct CastLaunch {
  const void* src = nullptr;
  DataType from = DataType::kFloat32;
  void* dst = nullptr;
  DataType to = DataType::kFloat32;  // storage type, another one than `from`
  int64_t n = 0;                     // > 0
};

// Launches the Cast kernel on `stream`. Assumes the host checked both types (numeric or
// bool: outside kElementwiseDeviceTypes `from` gives kUnsupported "data type X"; another
// `to` is written as bool) and allocated dst.
Status launchCast(const CastLaunch& launch, cudaStream_t stream);

}  // namespace kiln::cuda::ew
