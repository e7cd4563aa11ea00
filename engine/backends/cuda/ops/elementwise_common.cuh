// The elementwise family's device helpers (elementwise_impl.cu: unary math and activations;
// elementwise_binary_impl.cu: binary arithmetic, comparisons, logic, PRelu, SwiGLU, Pow;
// elementwise_nary_cast_impl.cu: Sum/Mean/Max/Min, Where, Cast, CastLike): operand
// indexing over the host's broadcast plan (elementwise_common.h), packed accesses, loads
// and stores, math overloads. Included by the family's _impl.cu files only.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/elementwise_common.h"

namespace kiln::cuda {
namespace ew {

// ---- Device helpers.

#define KILN_FOR_EACH_INDEX(i, n)                                           \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

__device__ __forceinline__ int64_t operandIndex(const Operand& o, int64_t i) {
  if (o.mode == kContiguous) return i;
  if (o.mode == kScalar) return 0;
  if (!o.small) return stridedOffset(o.info, i);
  uint32_t j = static_cast<uint32_t>(i);
  uint32_t offset = 0;
#pragma unroll
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (d >= o.info.rank) continue;
    const uint32_t dim = static_cast<uint32_t>(o.info.dims[d]);
    const uint32_t q = j / dim;
    offset += (j - q * dim) * static_cast<uint32_t>(o.info.strides[d]);
    j = q;
  }
  return offset;
}

// Consecutive elements moved as one aligned access: 16 bytes for the 4- and 2-byte types
// (4 float32 or 8 float16/bfloat16 values), 4 for 1-byte types, 32 for float64. Memory-
// bound kernels need wide accesses to reach bandwidth.
template <class T>
constexpr int kPackWidth = sizeof(T) == 2 ? 8 : 4;
template <class T>
struct alignas(sizeof(T) * kPackWidth<T>) Pack {
  T v[kPackWidth<T>];
};

// True when every pointer allows Pack accesses of T.
template <class T>
inline bool packAligned(std::initializer_list<const void*> pointers) {
  for (const void* p : pointers)
    if (reinterpret_cast<uintptr_t>(p) % (kPackWidth<T> * sizeof(T)) != 0) return false;
  return true;
}

template <class T>
constexpr bool kHalfLike = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <class T>
constexpr bool kFloatLike = kHalfLike<T> || std::is_floating_point_v<T>;
template <class T>
constexpr bool kIntegerLike = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <class T>
using Compute = typename ComputeType<T>::type;

template <class T>
__device__ __forceinline__ Compute<T> load(const T* p, int64_t i) {
  if constexpr (kHalfLike<T>)
    return toFloat(p[i]);
  else
    return p[i];
}

template <class T, class C>
__device__ __forceinline__ void store(T* p, int64_t i, C v) {
  if constexpr (kHalfLike<T>)
    p[i] = fromFloat<T>(static_cast<float>(v));
  else
    p[i] = static_cast<T>(v);
}

// Float math overloads: the float versions for float (and half/bfloat16 computed in
// float), the double versions for double.
#define KILN_MATH1(Name, floatFn, doubleFn)          \
  __device__ __forceinline__ float Name(float x) {   \
    return floatFn(x);                               \
  }                                                  \
  __device__ __forceinline__ double Name(double x) { \
    return doubleFn(x);                              \
  }
KILN_MATH1(mAbs, fabsf, fabs)
KILN_MATH1(mExp, expf, exp)
KILN_MATH1(mLog, logf, log)
KILN_MATH1(mLog1p, log1pf, log1p)
KILN_MATH1(mSqrt, sqrtf, sqrt)
KILN_MATH1(mFloor, floorf, floor)
KILN_MATH1(mCeil, ceilf, ceil)
KILN_MATH1(mRint, rintf, rint)
KILN_MATH1(mSin, sinf, sin)
KILN_MATH1(mCos, cosf, cos)
KILN_MATH1(mTan, tanf, tan)
KILN_MATH1(mAsin, asinf, asin)
KILN_MATH1(mAcos, acosf, acos)
KILN_MATH1(mAtan, atanf, atan)
KILN_MATH1(mSinh, sinhf, sinh)
KILN_MATH1(mCosh, coshf, cosh)
KILN_MATH1(mTanh, tanhf, tanh)
KILN_MATH1(mAsinh, asinhf, asinh)
KILN_MATH1(mAcosh, acoshf, acosh)
KILN_MATH1(mAtanh, atanhf, atanh)
KILN_MATH1(mErf, erff, erf)
#undef KILN_MATH1
__device__ __forceinline__ float mFmod(float x, float y) {
  return fmodf(x, y);
}
__device__ __forceinline__ double mFmod(double x, double y) {
  return fmod(x, y);
}
__device__ __forceinline__ float mPow(float x, float y) {
  return powf(x, y);
}
__device__ __forceinline__ double mPow(double x, double y) {
  return pow(x, y);
}

template <class C>
__device__ __forceinline__ bool isNan(C x) {
  if constexpr (std::is_floating_point_v<C>)
    return x != x;
  else
    return false;
}

// std::max / std::min exactly (NaN handling included): max(a, b) = a < b ? b : a.
template <class C>
__device__ __forceinline__ C stdMax(C a, C b) {
  return a < b ? b : a;
}
template <class C>
__device__ __forceinline__ C stdMin(C a, C b) {
  return b < a ? b : a;
}

// The unsigned type integer arithmetic wraps in (signed overflow is undefined).
template <class C>
using WrapType = std::make_unsigned_t<decltype(C{} + C{})>;

template <class C>
__device__ __forceinline__ C negate(C x) {
  return static_cast<C>(WrapType<C>(0) - WrapType<C>(x));
}

// float -> integer as the CPU's truncateToInteger: toward zero, NaN is 0, values outside
// int64 saturate there and then wrap to the target width like numpy's astype.
template <class To>
__device__ __forceinline__ To truncateToInteger(double value) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (value != value) return To{0};
  if constexpr (std::is_same_v<To, uint64_t>) {
    if (value >= 0) {
      return value >= 2 * kTwo63 ? std::numeric_limits<uint64_t>::max()
                                 : static_cast<uint64_t>(value);
    }
  }
  if (value >= kTwo63) return static_cast<To>(std::numeric_limits<int64_t>::max());
  if (value < -kTwo63) return static_cast<To>(std::numeric_limits<int64_t>::min());
  return static_cast<To>(static_cast<int64_t>(value));
}

}  // namespace ew
}  // namespace kiln::cuda
