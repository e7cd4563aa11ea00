// The small batched MatMul's device half (contract: small_batched_matmul.h). A thread owns
// output (i, r, c) (16-bit types with an even n and 4-byte aligned operands: columns c and
// c + 1 as one pair): A's row r is the same address across the threads of a row (one
// broadcast load a step), B's row k runs along adjacent threads (coalesced), the sum in
// float, D written once, adjacent threads adjacent elements.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/op_common.cuh"
#include "backends/cuda/ops/small_batched_matmul.h"
#include "backends/cuda/row_kernels.cuh"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda {
namespace {

template <class T>
__global__ void smallBatchedMatMulKernel(const T* a, const T* b, T* d, SmallBatchedMatMul p,
                                         int64_t outputs) {
  const unsigned mn = static_cast<unsigned>(p.m * p.n), n = static_cast<unsigned>(p.n);
  KILN_GRID_LOOP(o, outputs) {
    const unsigned i = static_cast<unsigned>(o) / mn, rest = static_cast<unsigned>(o) - i * mn;
    const unsigned r = rest / n, c = rest - r * n;
    const T* row = a + i * p.strideA + int64_t(r) * p.k;
    const T* column = b + i * p.strideB + c;
    float sum = 0.f;
    for (int j = 0; j < p.k; ++j)
      sum = fmaf(toFloat(row[j]), toFloat(column[int64_t(j) * p.n]), sum);
    d[o] = fromFloat<T>(sum);
  }
}

// Two adjacent columns a thread: B's and D's pairs as one 4-byte word.
template <class T>
__global__ void smallBatchedMatMulPairsKernel(const T* a, const T* b, T* d, SmallBatchedMatMul p,
                                              int64_t pairs) {
  const unsigned halfN = static_cast<unsigned>(p.n / 2), mh = static_cast<unsigned>(p.m) * halfN;
  KILN_GRID_LOOP(o, pairs) {
    const unsigned i = static_cast<unsigned>(o) / mh, rest = static_cast<unsigned>(o) - i * mh;
    const unsigned r = rest / halfN, c = rest - r * halfN;
    const T* row = a + i * p.strideA + int64_t(r) * p.k;
    const T* column = b + i * p.strideB + 2 * c;
    float sum0 = 0.f, sum1 = 0.f;
    for (int j = 0; j < p.k; ++j) {
      const float x = toFloat(row[j]);
      float y[2];
      loadPack<2>(column, int64_t(j) * p.n, 1, y);
      sum0 = fmaf(x, y[0], sum0);
      sum1 = fmaf(x, y[1], sum1);
    }
    const float sums[2] = {sum0, sum1};
    storePack<2>(d, 2 * o, sums);
  }
}

}  // namespace

Status launchSmallBatchedMatMul(const SmallBatchedMatMul& p, cudaStream_t stream) {
  const int64_t outputs = p.batch * p.m * p.n;
  const bool aligned = reinterpret_cast<uintptr_t>(p.b) % 4 == 0 &&
                       reinterpret_cast<uintptr_t>(p.d) % 4 == 0 && p.strideB % 2 == 0;
  return dispatchDeviceType<device_types::kStorageFloats>(p.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* a = static_cast<const T*>(p.a);
    const T* b = static_cast<const T*>(p.b);
    T* d = static_cast<T*>(p.d);
    if constexpr (sizeof(T) == 2) {
      if (p.n % 2 == 0 && aligned) {
        smallBatchedMatMulPairsKernel<<<gridFor(outputs / 2), kBlockSize, 0, stream>>>(a, b, d, p,
                                                                                       outputs / 2);
        KILN_CUDA_CHECK_LAUNCH("smallBatchedMatMulPairsKernel");
        return Status::ok();
      }
    }
    smallBatchedMatMulKernel<<<gridFor(outputs), kBlockSize, 0, stream>>>(a, b, d, p, outputs);
    KILN_CUDA_CHECK_LAUNCH("smallBatchedMatMulKernel");
    return Status::ok();
  });
}

}  // namespace kiln::cuda
