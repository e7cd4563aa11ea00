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

// Runs the plan as calls of gemm(m, n, k, a, b, y), each y [m, n] = a [m, k] x
// b [k, n], contiguous row-major: one per output matrix, or one for all when
// the batch folds into A's rows.
template <class C, class Gemm>
void runMatMulPlanWith(const MatMulPlan& plan, const C* a, const C* b, C* y, Gemm&& gemm) {
  const int64_t mn = plan.m * plan.n;
  if (plan.foldBatch) {
    const int64_t rows = plan.m * static_cast<int64_t>(plan.aOffsets.size());
    gemm(rows, plan.n, plan.k, a, b, y);
    return;
  }
  for (size_t i = 0; i < plan.aOffsets.size(); ++i) {
    gemm(plan.m, plan.n, plan.k, a + plan.aOffsets[i], b + plan.bOffsets[i],
         y + static_cast<int64_t>(i) * mn);
  }
}

template <class C>
void runMatMulPlan(const MatMulPlan& plan, const C* a, const C* b, C* y) {
  runMatMulPlanWith(plan, a, b, y,
                    [](int64_t m, int64_t n, int64_t k, const C* am, const C* bm, C* ym) {
                      gemmAny<C>(false, false, m, n, k, C(1), am, bm, C(0), ym);
                    });
}

// MatMul's input checks (A and B present, one type) and its batch plan; shared by
// MatMul, its loop tactic and FusedMatMul.
Status prepareMatMulNode(const KernelContext& ctx, MatMulPlan* plan);

// A Gemm node's product: Y [m, n] = op(A) [m, k] x op(B) [k, n].
struct GemmShape {
  bool transA = false;
  bool transB = false;
  int64_t m = 0, n = 0, k = 0;
};

// Gemm's input checks: A and B 2-D of one type with matching inner dimensions,
// optional C of that type that broadcasts to [m, n]; reads transA and transB.
Status prepareGemmNode(const KernelContext& ctx, GemmShape* shape);

// Fills y [m, n] with Gemm's C (storage type T) broadcast unidirectionally: a
// missing or size-1 dim repeats.
template <class C, class T>
void broadcastGemmC(const Tensor& c, int64_t m, int64_t n, C* y) {
  const int64_t rows = c.rank() == 2 ? c.dim(0) : 1;
  const int64_t cols = c.rank() >= 1 ? c.dim(-1) : 1;
  ComputeView<C> cv(c.data<T>(), c.numel());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      y[i * n + j] = cv.data()[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)];
    }
  }
}

}  // namespace kiln::cpu
