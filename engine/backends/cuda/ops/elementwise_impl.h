// The unary elementwise ops' host/device contract (host: elementwise.cpp; kernel:
// elementwise_impl.cu): the op code the host selects per registered op, its attributes,
// and the launch. Plain C++ (g++ and nvcc).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::ew {

enum class UnaryOp : int {
  kAbs,
  kNeg,
  kSign,
  kExp,
  kLog,
  kSqrt,
  kReciprocal,
  kFloor,
  kCeil,
  kRound,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kErf,
  kNot,
  kBitwiseNot,
  kIsNaN,
  kIsInf,
  kRelu,
  kLeakyRelu,
  kElu,
  kSelu,
  kCelu,
  kSigmoid,
  kHardSigmoid,
  kHardSwish,
  kSoftplus,
  kSoftsign,
  kTanh,
  kGelu,
  kGeluTanh,
  kMish,
  kThresholdedRelu,
  kSwish,
  kShrink,
  kClip,
};

struct UnaryParams {
  UnaryOp op = UnaryOp::kAbs;
  float alpha = 0.f;
  float beta = 0.f;
  float gamma = 0.f;
  double lambd = 0.0;          // Shrink
  double bias = 0.0;           // Shrink
  bool detectPositive = true;  // IsInf
  bool detectNegative = true;  // IsInf
  // Clip: device scalars of X's type (nullptr: none); without them alpha/beta when
  // clipAttributes (Clip-6), else the type's full range.
  const void* clipMin = nullptr;
  const void* clipMax = nullptr;
  bool clipAttributes = false;
};

// y = op(x) over n > 0 elements of `type`.
struct UnaryLaunch {
  const void* x = nullptr;
  void* y = nullptr;  // of `type`, bool for IsNaN / IsInf
  DataType type = DataType::kFloat32;
  int64_t n = 0;
  UnaryParams params;
};

// Launches the unary kernel on `stream`: one kernel per storage type with the op switched
// inside, floats and their 16-bit forms in packs when x and y are aligned. Assumes the
// host checked `type` against the op's type set (elementwise_common.h's kElementwiseDeviceTypes
// at least: outside it kUnsupported "data type X") and allocated y.
Status launchUnary(const UnaryLaunch& launch, cudaStream_t stream);

}  // namespace kiln::cuda::ew
