// What the reduction kernels share (reduce_impl.cu: Reduce*, Softmax / LogSoftmax /
// Hardmax; arg_cumsum_impl.cu: ArgMax / ArgMin, CumSum): accumulator types, warp shuffles,
// the math and accumulation helpers, and the numeric type dispatch. Included by the device
// halves only; what the host halves share is reduce_common.h. Internal to kiln_cuda.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/type_dispatch.cuh"
#include "backends/cuda/ops/op_common.cuh"
#include "backends/cuda/row_kernels.cuh"

namespace kiln::cuda {
namespace rd {

// ---- Shared device helpers -----------------------------------------------------

// The accumulator of T: float for the 16-bit floats and float, double for double,
// int64 for the integer types.
template <class T>
struct AccumulatorOf {
  using type = std::conditional_t<std::is_integral_v<T>, int64_t,
                                  std::conditional_t<std::is_same_v<T, double>, double, float>>;
};
template <class T>
using Acc = typename AccumulatorOf<T>::type;

template <class A>
__device__ __forceinline__ A shuffleXor(A v, int mask) {
  if constexpr (std::is_same_v<A, int64_t>)
    return static_cast<int64_t>(__shfl_xor_sync(kFullMask, static_cast<long long>(v), mask));
  else
    return __shfl_xor_sync(kFullMask, v, mask);
}

template <class A>
__device__ __forceinline__ A shuffleUp(A v, int delta) {
  if constexpr (std::is_same_v<A, int64_t>)
    return static_cast<int64_t>(__shfl_up_sync(kFullMask, static_cast<long long>(v), delta));
  else
    return __shfl_up_sync(kFullMask, v, delta);
}

// Finite: neither NaN nor infinite (x - x is NaN exactly for those).
template <class A>
__device__ __forceinline__ bool isFiniteValue(A v) {
  return v - v == A(0);
}

template <class A>
__device__ __forceinline__ A mathExp(A v) {
  if constexpr (std::is_same_v<A, float>)
    return expf(v);
  else
    return exp(v);
}
template <class A>
__device__ __forceinline__ A mathLog(A v) {
  if constexpr (std::is_same_v<A, float>)
    return logf(v);
  else
    return log(v);
}
// Integer sums and products wrap like the CPU kernel (no signed overflow).
template <class A>
__device__ __forceinline__ A accAdd(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <class A>
__device__ __forceinline__ A accMul(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}

// ---- ArgMax / ArgMin's candidates (Hardmax picks its one with them too).

// A candidate (value, index); index -1 means none yet.
template <class A>
struct ArgBest {
  A v;
  int64_t idx;
};

// The better of two candidates from disjoint index sets. Ties go to the lower index
// (the higher with select_last_index). A NaN only ever sits at index 0 (see
// argFold) and then wins, as in the CPU's sequential scan.
template <class A>
__device__ __forceinline__ ArgBest<A> argBetter(ArgBest<A> a, ArgBest<A> b, bool isMax, bool last) {
  if (a.idx < 0) return b;
  if (b.idx < 0) return a;
  if (a.v != a.v) return a;
  if (b.v != b.v) return b;
  if (isMax ? b.v > a.v : b.v < a.v) return b;
  if (isMax ? a.v > b.v : a.v < b.v) return a;
  return (last ? b.idx > a.idx : b.idx < a.idx) ? b : a;
}

// Folds element k into a thread's candidate. The CPU scan starts from element 0 and
// a later NaN never compares better, so NaNs after index 0 are skipped.
template <class A>
__device__ __forceinline__ ArgBest<A> argFold(ArgBest<A> best, A v, int64_t k, bool isMax,
                                              bool last) {
  if (v != v && k != 0) return best;
  return argBetter(best, ArgBest<A>{v, k}, isMax, last);
}

template <class A>
__device__ __forceinline__ ArgBest<A> groupArg(ArgBest<A> a, bool isMax, bool last, bool warpMode,
                                               ArgBest<A>* partial) {
#pragma unroll
  for (int mask = 16; mask >= 1; mask >>= 1) {
    const ArgBest<A> other{shuffleXor(a.v, mask), shuffleXor(a.idx, mask)};
    a = argBetter(a, other, isMax, last);
  }
  if (warpMode) return a;
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (threadIdx.x % 32 == 0) partial[warp] = a;
  __syncthreads();
  a = partial[0];
  for (int w = 1; w < warps; ++w) a = argBetter(a, partial[w], isMax, last);
  __syncthreads();
  return a;
}

}  // namespace rd
}  // namespace kiln::cuda
