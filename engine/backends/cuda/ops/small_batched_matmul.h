// Many small matrix products in one launch: the contract between matmul.cpp (host: when a
// MatMul takes this kernel) and small_batched_matmul_impl.cu (device). Plain C++, included
// by both compilers.
//
// D[i] = A[i] B[i] for i < batch, A[i] m x k, B[i] k x n, D packed [batch, m, n], each
// operand's matrices `strideA` / `strideB` elements apart (0: one matrix for every i),
// rows packed. A thread an output element (two for 16-bit pairs), the k products in float,
// D rounded once: cuBLASLt's strided batch ran VOLO-D1's outlook products (150,528 products
// of 9 x 9 by 9 x 32 a layer) at 0.47 ms on an H200, ~8 times the floor of the 198 MB they
// move, its tiles far larger than the matrices; this kernel 0.234 ms (2026-12-02).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {

struct SmallBatchedMatMul {
  DataType type = DataType::kUndefined;  // float32, float16 or bfloat16, all three operands
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  int64_t batch = 0, strideA = 0, strideB = 0;
  int m = 0, n = 0, k = 0;
};

// Matrices this small and this many take the kernel (matmul.cpp asks before cuBLASLt):
// m, k <= 32, n <= 128, at least 2,048 products; larger ones fill cuBLASLt's tiles.
inline bool smallBatchedMatMulApplies(DataType type, int64_t batch, int64_t m, int64_t n,
                                      int64_t k) {
  const bool floatType =
      type == DataType::kFloat32 || type == DataType::kFloat16 || type == DataType::kBFloat16;
  return floatType && batch >= 2048 && m >= 1 && m <= 32 && k >= 1 && k <= 32 && n >= 1 &&
         n <= 128 && batch * m * n < (int64_t{1} << 31);
}

// Enqueues the products on `stream` (the host checked smallBatchedMatMulApplies and
// allocated D). Returns the launch's status.
Status launchSmallBatchedMatMul(const SmallBatchedMatMul& product, cudaStream_t stream);

}  // namespace kiln::cuda
