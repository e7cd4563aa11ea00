// Kernels of the unary elementwise ops: math, activations and Clip (contract:
// elementwise_impl.h; host half: elementwise.cpp; the family's other kernels:
// elementwise_binary_impl.cu, elementwise_nary_cast_impl.cu; what they share:
// elementwise_common.cuh). Semantics (types, opsets, attributes, NaN handling, integer
// wrapping and truncation) follow the CPU kernels in backends/cpu/ops/elementwise_*.cpp,
// activations.cpp, gated_activations.cpp and cast.cpp.
//
// Contract of the family's kernels: one kernel template per storage type with a runtime op
// enum inside (uniform branches), so compile time stays bounded: unary, binary, pow,
// variadic and cast kernels per numeric type; Where per element byte size. Half and
// bfloat16 compute in float, float64 in double. Broadcast operands are read contiguously,
// as a scalar, or through coalesced strides (at most kMaxRank merged dims). Nothing here
// reads device data on the host: Clip bounds and Pow exponents are read by the kernels.
//
// Deliberate difference from the CPU: integer Div/Mod by zero is not an error here (that
// needs the divisor on the host); x / 0 and x % 0 give 0.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/cuda/ops/elementwise_common.cuh"
#include "backends/cuda/ops/elementwise_impl.h"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda {
namespace {

using namespace ew;

template <class C>
__device__ __forceinline__ C softplus(C x) {
  if (x > C(0)) return x + mLog1p(mExp(-x));
  return mLog1p(mExp(x));
}

// Shrink computes in double and converts back like a Cast.
template <class C>
__device__ __forceinline__ C shrink(C x, const UnaryParams& p) {
  const double v = static_cast<double>(x);
  const double r = v < -p.lambd ? v + p.bias : (v > p.lambd ? v - p.bias : 0.0);
  if constexpr (kIntegerLike<C>)
    return truncateToInteger<C>(r);
  else
    return static_cast<C>(r);
}

// C is float or double.
template <class C>
__device__ __forceinline__ C floatUnary(const UnaryParams& p, C x, C lo, C hi) {
  switch (p.op) {
    case UnaryOp::kAbs:
      return mAbs(x);
    case UnaryOp::kNeg:
      return -x;
    case UnaryOp::kSign:
      if (x > C(0)) return C(1);
      if (x < C(0)) return C(-1);
      return x == C(0) ? C(0) : x;  // NaN stays NaN
    case UnaryOp::kExp:
      return mExp(x);
    case UnaryOp::kLog:
      return mLog(x);
    case UnaryOp::kSqrt:
      return mSqrt(x);
    case UnaryOp::kReciprocal:
      return C(1) / x;
    case UnaryOp::kFloor:
      return mFloor(x);
    case UnaryOp::kCeil:
      return mCeil(x);
    case UnaryOp::kRound:
      return mRint(x);  // halves to even
    case UnaryOp::kSin:
      return mSin(x);
    case UnaryOp::kCos:
      return mCos(x);
    case UnaryOp::kTan:
      return mTan(x);
    case UnaryOp::kAsin:
      return mAsin(x);
    case UnaryOp::kAcos:
      return mAcos(x);
    case UnaryOp::kAtan:
      return mAtan(x);
    case UnaryOp::kSinh:
      return mSinh(x);
    case UnaryOp::kCosh:
      return mCosh(x);
    case UnaryOp::kAsinh:
      return mAsinh(x);
    case UnaryOp::kAcosh:
      return mAcosh(x);
    case UnaryOp::kAtanh:
      return mAtanh(x);
    case UnaryOp::kErf:
      return mErf(x);
    case UnaryOp::kRelu:
      return x < C(0) ? C(0) : x;
    case UnaryOp::kLeakyRelu:
      return x < C(0) ? C(p.alpha) * x : x;
    case UnaryOp::kElu:
      return x < C(0) ? C(p.alpha) * (mExp(x) - C(1)) : x;
    case UnaryOp::kSelu:
      return x > C(0) ? C(p.gamma) * x : C(p.gamma) * (C(p.alpha) * mExp(x) - C(p.alpha));
    case UnaryOp::kCelu:
      return stdMax(C(0), x) + stdMin(C(0), C(p.alpha) * (mExp(x / C(p.alpha)) - C(1)));
    case UnaryOp::kSigmoid:
      return C(1) / (C(1) + mExp(-x));
    case UnaryOp::kHardSigmoid:
      return stdMax(C(0), stdMin(C(1), C(p.alpha) * x + C(p.beta)));
    case UnaryOp::kHardSwish:
      return x * stdMax(C(0), stdMin(C(1), x / C(6) + C(0.5)));
    case UnaryOp::kSoftplus:
      return softplus(x);
    case UnaryOp::kSoftsign:
      return x / (C(1) + mAbs(x));
    case UnaryOp::kTanh:
      return mTanh(x);
    case UnaryOp::kGelu:
      return C(0.5) * x * (C(1) + mErf(x * C(0.7071067811865476)));
    case UnaryOp::kGeluTanh: {
      const C kScale = C(0.7978845608028654);  // sqrt(2 / pi)
      return C(0.5) * x * (C(1) + mTanh(kScale * (x + C(0.044715) * x * x * x)));
    }
    case UnaryOp::kMish:
      return x * mTanh(softplus(x));
    case UnaryOp::kThresholdedRelu:
      return x > C(p.alpha) ? x : C(0);
    case UnaryOp::kSwish:
      return x / (C(1) + mExp(-C(p.alpha) * x));
    case UnaryOp::kShrink:
      return shrink(x, p);
    case UnaryOp::kClip:
      return stdMin(stdMax(x, lo), hi);  // lo > hi gives hi; NaN stays
    default:
      return x;
  }
}

template <class C>
__device__ __forceinline__ bool floatPredicate(const UnaryParams& p, C x) {
  if (p.op == UnaryOp::kIsNaN) return x != x;
  const C inf = C(INFINITY);
  if (x == inf) return p.detectPositive;
  if (x == -inf) return p.detectNegative;
  return false;
}

// C is an integer type.
template <class C>
__device__ __forceinline__ C integerUnary(const UnaryParams& p, C x, C lo, C hi) {
  switch (p.op) {
    case UnaryOp::kAbs:
      if constexpr (std::is_signed_v<C>) return x < C(0) ? negate(x) : x;
      return x;
    case UnaryOp::kNeg:
      return negate(x);
    case UnaryOp::kSign:
      if (x > C(0)) return C(1);
      if constexpr (std::is_signed_v<C>) {
        if (x < C(0)) return C(-1);
      }
      return C(0);
    case UnaryOp::kRelu:
      if constexpr (std::is_signed_v<C>) return x < C(0) ? C(0) : x;
      return x;
    case UnaryOp::kErf:
      return truncateToInteger<C>(erf(static_cast<double>(x)));
    case UnaryOp::kBitwiseNot:
      return static_cast<C>(~x);
    case UnaryOp::kShrink:
      return shrink(x, p);
    case UnaryOp::kClip:
      return stdMin(stdMax(x, lo), hi);
    default:
      return x;
  }
}

// Clip's bounds in the compute type of T.
template <class T>
__device__ __forceinline__ void clipBounds(const UnaryParams& p, Compute<T>* lo, Compute<T>* hi) {
  using C = Compute<T>;
  if constexpr (std::is_floating_point_v<C>) {
    *lo = p.clipAttributes ? C(p.alpha) : -C(INFINITY);
    *hi = p.clipAttributes ? C(p.beta) : C(INFINITY);
  } else {
    *lo = std::numeric_limits<C>::lowest();
    *hi = std::numeric_limits<C>::max();
  }
  if (p.clipMin) *lo = load(static_cast<const T*>(p.clipMin), 0);
  if (p.clipMax) *hi = load(static_cast<const T*>(p.clipMax), 0);
}

template <class T>
__global__ void unaryKernel(const T* x, void* y, int64_t n, UnaryParams p, bool packed) {
  using C = Compute<T>;
  C lo{}, hi{};
  if (p.op == UnaryOp::kClip) clipBounds<T>(p, &lo, &hi);
  if constexpr (kFloatLike<T>) {
    if (packed && p.op != UnaryOp::kIsNaN && p.op != UnaryOp::kIsInf) {
      // Four elements per thread per step, then the scalar tail.
      T* out = static_cast<T*>(y);
      constexpr int W = kPackWidth<T>;
      const int64_t packs = n / W;
      KILN_FOR_EACH_INDEX(v, packs) {
        const Pack<T> in = reinterpret_cast<const Pack<T>*>(x)[v];
        Pack<T> r;
#pragma unroll
        for (int j = 0; j < W; ++j) store(r.v, j, floatUnary<C>(p, load(in.v, j), lo, hi));
        reinterpret_cast<Pack<T>*>(out)[v] = r;
      }
      for (int64_t i = packs * W + blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
           i += int64_t(gridDim.x) * blockDim.x)
        store(out, i, floatUnary<C>(p, load(x, i), lo, hi));
      return;
    }
  }
  if constexpr (std::is_same_v<T, bool>) {
    bool* out = static_cast<bool*>(y);
    KILN_FOR_EACH_INDEX(i, n) out[i] = !x[i];  // Not
  } else if constexpr (kFloatLike<T>) {
    if (p.op == UnaryOp::kIsNaN || p.op == UnaryOp::kIsInf) {
      bool* out = static_cast<bool*>(y);
      KILN_FOR_EACH_INDEX(i, n) out[i] = floatPredicate(p, load(x, i));
    } else {
      T* out = static_cast<T*>(y);
      KILN_FOR_EACH_INDEX(i, n) store(out, i, floatUnary<C>(p, load(x, i), lo, hi));
    }
  } else {
    T* out = static_cast<T*>(y);
    KILN_FOR_EACH_INDEX(i, n) out[i] = integerUnary<C>(p, x[i], lo, hi);
  }
}

}  // namespace

namespace ew {

Status launchUnary(const UnaryLaunch& launch, cudaStream_t stream) {
  KILN_RETURN_IF_ERROR(dispatchDeviceType<kElementwiseDeviceTypes>(launch.type, [&](auto tag) {
    using T = decltype(tag);
    const bool packed = packAligned<T>({launch.x, launch.y});
    const int64_t n = launch.n;
    const int64_t work = packed ? (n + kPackWidth<T> - 1) / kPackWidth<T> : n;
    unaryKernel<T><<<gridFor(work), kBlockSize, 0, stream>>>(static_cast<const T*>(launch.x),
                                                             launch.y, n, launch.params, packed);
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("unaryKernel");
  return Status::ok();
}

}  // namespace ew
}  // namespace kiln::cuda
