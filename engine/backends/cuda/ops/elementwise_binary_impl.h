// The binary elementwise ops' host/device contract (host: elementwise_binary.cpp; kernels:
// elementwise_binary_impl.cu): the op code the host selects per registered op, and the
// launches of the binary kernel (arithmetic, comparisons, logic, BitShift, Mod, PRelu,
// SwiGLU) and of Pow. Both read their operands through the host's broadcast plan
// (elementwise_common.h's Operand). Plain C++ (g++ and nvcc).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/ops/elementwise_common.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::ew {

enum class BinaryOp : int {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,   // fmod = 0: the result takes the divisor's sign
  kFmod,  // fmod = 1: the dividend's
  kBitAnd,
  kBitOr,
  kBitXor,
  kShiftLeft,
  kShiftRight,
  kEqual,
  kLess,
  kLessOrEqual,
  kGreater,
  kGreaterOrEqual,
  kPRelu,
  kSwiGlu,
};

struct BinaryParams {
  BinaryOp op = BinaryOp::kAdd;
  bool boolOut = false;  // comparisons
  float alpha = 1.f;     // SwiGLU
};

// out = op(a, b) over n > 0 output elements; a and b of `type`, read through `operands`.
struct BinaryLaunch {
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;  // of `type`, bool when params.boolOut
  DataType type = DataType::kFloat32;
  int64_t n = 0;
  BinaryParams params;
  Operand operands[2];
};

// Launches the binary kernel on `stream`: one kernel per storage type with the op switched
// inside; contiguous operands and the output of a float type move in packs when aligned.
// Assumes the host checked both types (one type, in the op's set; outside
// kElementwiseDeviceTypes: kUnsupported "data type X"), planned the operands and
// allocated out.
Status launchBinary(const BinaryLaunch& launch, cudaStream_t stream);

// ---- Pow: the exponent may have another numeric type than the base (opset 12+).

enum class PowMode : int {
  kSameFloat,      // float base and exponent of one type: pow in the compute type
  kIntExponent,    // integer exponent, read as int64
  kFloatExponent,  // float exponent of another type than the base, read as double
};

// out = a ^ b over n > 0 output elements; out has a's type `aType`.
struct PowLaunch {
  const void* a = nullptr;
  const void* b = nullptr;
  DataType aType = DataType::kFloat32;
  DataType bType = DataType::kFloat32;
  void* out = nullptr;
  int64_t n = 0;
  PowMode mode = PowMode::kSameFloat;
  Operand operands[2];
};

// Launches the Pow kernel on `stream`. Assumes the host checked both types (numeric; a bool
// aType gives kUnsupported "Pow of bool", one outside kElementwiseDeviceTypes "data type X"),
// chose `mode` from them, planned the operands and allocated out.
Status launchPow(const PowLaunch& launch, cudaStream_t stream);

}  // namespace kiln::cuda::ew
