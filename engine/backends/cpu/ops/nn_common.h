// Helpers shared by the neural-network kernels (conv, pool, matmul, rnn):
// row-major BLAS GEMM wrappers and conversions between tensors and float/double
// work buffers (float16/bfloat16 compute in float).
#pragma once

#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/cpu/ops/op_utils.h"

namespace kiln::cpu {

// C = beta * C when the reduction is empty (BLAS rejects a zero leading dimension).
template <class C>
void scaleOnly(int64_t m, int64_t n, C beta, C* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == C(0) ? C(0) : beta * c[i * ldc + j];
  }
}

// C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C, all row-major.
inline void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) return scaleOnly(m, n, beta, c, ldc);
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

inline void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
                 const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
                 int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) return scaleOnly(m, n, beta, c, ldc);
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

// The BLAS type a floating-point storage type computes in: double for double,
// float for float, float16 and bfloat16.
template <class T>
using BlasType = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Copies `count` elements of storage type T into a compute buffer of type C.
template <class C, class T>
void convertToBuffer(const T* src, int64_t count, C* dst) {
  for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<C>(static_cast<ComputeType<T>>(src[i]));
}

template <class T, class C>
void convertFromBuffer(const C* src, int64_t count, T* dst) {
  for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<T>(src[i]);
}

// A read-only view of a tensor as compute type C: the tensor's own data when
// the types match, a converted copy otherwise.
template <class C>
class ComputeView {
 public:
  template <class T>
  ComputeView(const T* data, int64_t count) {
    if constexpr (std::is_same_v<T, C>) {
      m_data = data;
    } else {
      m_copy.resize(static_cast<size_t>(count));
      convertToBuffer(data, count, m_copy.data());
      m_data = m_copy.data();
    }
  }
  ComputeView(const ComputeView&) = delete;
  ComputeView& operator=(const ComputeView&) = delete;
  const C* data() const { return m_data; }

 private:
  const C* m_data = nullptr;
  std::vector<C> m_copy;
};

// All elements of a small tensor (scales, zero points) as double.
inline std::vector<double> valuesAsDoubles(const Tensor& tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.numel()));
  for (int64_t i = 0; i < tensor.numel(); ++i) values[i] = tensor.valueAsDouble(i);
  return values;
}

// Rounds half to even (the ONNX quantization rounding) and clamps to T's range.
template <class T>
T saturateRound(double value) {
  const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
  const double hi = static_cast<double>(std::numeric_limits<T>::max());
  const double r = std::nearbyint(value);
  if (!(r >= lo)) return std::numeric_limits<T>::lowest();  // NaN too
  if (r > hi) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

inline bool isQuantized8(DataType type) {
  return type == DataType::kInt8 || type == DataType::kUInt8;
}

}  // namespace kiln::cpu
