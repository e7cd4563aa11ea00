// Batched matrix products with numpy broadcasting, shared by MatMul, the 8-bit
// matmuls and Einsum. A plan maps each output matrix to the A and B matrices it
// multiplies; running it is one GEMM per batch entry, or a single GEMM when A's
// batches are contiguous and B is shared (batch folds into A's rows).
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/cpu/ops/nn_common.h"

namespace kiln::cpu {

struct MatMulPlan {
  Shape outShape;
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> aOffsets;  // per output matrix: element offset of its A matrix
  std::vector<int64_t> bOffsets;
  bool foldBatch = false;
};

// numpy matmul shapes: a 1-D A is a row [1, K], a 1-D B a column [K, 1], and the
// added dim is dropped from the output; leading (batch) dims broadcast.
Status planMatMul(const Shape& a, const Shape& b, MatMulPlan* plan);

// Y = alpha * A' B' + beta * Y for one [m, n] output in compute type C (BLAS for
// float and double, a plain loop otherwise).
template <class C>
void gemmAny(bool transA, bool transB, int64_t m, int64_t n, int64_t k, C alpha, const C* a,
             const C* b, C beta, C* y) {
  const int64_t lda = transA ? m : k, ldb = transB ? k : n;
  if constexpr (std::is_same_v<C, float> || std::is_same_v<C, double>) {
    gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, y, n);
  } else {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        C acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc += a[transA ? p * lda + i : i * lda + p] * b[transB ? j * ldb + p : p * ldb + j];
        }
        y[i * n + j] = static_cast<C>(alpha * acc + beta * y[i * n + j]);
      }
    }
  }
}

template <class C>
void runMatMulPlan(const MatMulPlan& plan, const C* a, const C* b, C* y) {
  const int64_t mn = plan.m * plan.n;
  if (plan.foldBatch) {
    const int64_t rows = plan.m * static_cast<int64_t>(plan.aOffsets.size());
    gemmAny<C>(false, false, rows, plan.n, plan.k, C(1), a, b, C(0), y);
    return;
  }
  for (size_t i = 0; i < plan.aOffsets.size(); ++i) {
    gemmAny<C>(false, false, plan.m, plan.n, plan.k, C(1), a + plan.aOffsets[i],
               b + plan.bOffsets[i], C(0), y + static_cast<int64_t>(i) * mn);
  }
}

}  // namespace kiln::cpu
