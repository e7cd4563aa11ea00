// Kiln's own GEMM, used by the CPU tactics that compete with the BLAS reference:
// cache-blocked, with a register tile whose fixed trip counts the compiler
// vectorizes. Single-threaded; meant to win on small shapes, where BLAS pays
// more for dispatch and threading than for arithmetic.
#pragma once

#include <cstdint>

namespace kiln::cpu {

// Y[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * Y, row-major with leading
// dimensions lda, ldb and ldy, as BLAS's row-major sgemm. op(A) is A^T when transA
// (A is then [k x m]). With beta == 0, Y is only written (it may hold NaN poison).
void loopGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* y,
              int64_t ldy);

}  // namespace kiln::cpu
