// The contract between the host half of the integer GEMMs (matmul_integer.cpp:
// MatMulInteger, QLinearMatMul) and their device half (matmul_integer_impl.cu). Plain C++,
// included by both compilers.
//
// The host half has checked everything before it calls the launcher: A and B int8 or
// uint8, MatMul's shape rules (inner dims equal, batch dims broadcast, batch rank at most
// kIntegerGemmMaxBatchRank), zero points of A's / B's type with 1 or one value per row of
// A / column of B, QLinearMatMul's float scales (1 or one per row of A / column of B, y's
// one) and its K within the int32-exact range; and it has allocated y.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_shapes.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {

// The most batch dims the GEMM indexes (device_shapes.h's kMaxRank).
constexpr int kIntegerGemmMaxBatchRank = kMaxRank;

// Batch dims (all but the last two) of an operand or of the output, outermost first.
struct IntegerGemmBatchShape {
  int rank = 0;
  int64_t dims[kIntegerGemmMaxBatchRank] = {};
};

// y[batch, m, n] = sum_k (a[m, k] - aZero) * (b[k, n] - bZero), batches broadcast as
// numpy's MatMul: int32 y that wraps like the CPU's cast, or with `requantize`
// (QLinearMatMul) saturate(rint(sum * aScale * bScale / yScale) + yZero) as int8/uint8
// (yZeroType). A is [.., m, k] and B [.., k, n], row-major.
struct IntegerGemmLaunch {
  const void* a = nullptr;
  DataType aType = DataType::kUndefined;  // int8 or uint8
  const void* b = nullptr;
  DataType bType = DataType::kUndefined;  // int8 or uint8
  const void* aZero = nullptr;            // nullptr: zero; else aZeroCount values (1 or m)
  const void* bZero = nullptr;            // 1, n, or k (rank-1 B) values
  int64_t aZeroCount = 1, bZeroCount = 1;
  bool bZeroPerRow = false;  // rank-1 B: its zero point runs along k
  int64_t m = 0, n = 0, k = 0, batch = 1;
  IntegerGemmBatchShape batchShape;      // the broadcast batch dims (batch = their product)
  IntegerGemmBatchShape aBatch, bBatch;  // A's and B's own batch dims
  // Epilogue: int32 output, or QLinearMatMul's requantization to int8/uint8.
  bool requantize = false;
  const void* aScale = nullptr;
  const void* bScale = nullptr;
  const void* yScale = nullptr;
  const void* yZero = nullptr;
  DataType aScaleType{}, bScaleType{}, yScaleType{}, yZeroType{};
  int64_t aScaleCount = 1, bScaleCount = 1;
  void* y = nullptr;
};

// Enqueues the 16x16 shared-memory tiled GEMM on `stream`; nothing when batch, m or n is 0
// (with K == 0 every sum is 0).
Status launchIntegerGemm(const IntegerGemmLaunch& args, cudaStream_t stream);

}  // namespace kiln::cuda
