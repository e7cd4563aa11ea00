// GPU kernels of the elementwise family: unary math and activations and Clip here; binary
// arithmetic, comparisons and logic with numpy broadcasting, PRelu, SwiGLU and Pow with mixed
// types in elementwise_binary.cu; the variadic Sum/Mean/Max/Min, Where, Cast and CastLike in
// elementwise_nary_cast.cu; what they share in elementwise_common.cuh. Semantics (types, opsets,
// attributes, NaN handling, integer wrapping and truncation) follow the CPU kernels in
// backends/cpu/ops/elementwise_*.cpp, activations.cpp, gated_activations.cpp and cast.cpp.
//
// Contract: one kernel template per storage type with a runtime op enum inside (uniform
// branches), so compile time stays bounded: unary, binary, pow, variadic and cast kernels
// per numeric type; Where per element byte size. Half and bfloat16 compute in float,
// float64 in double. Broadcast operands are read contiguously, as a scalar, or through
// coalesced strides (at most kMaxRank merged dims). Nothing here reads device data on
// the host: Clip bounds and Pow exponents are read by the kernels.
//
// Deliberate difference from the CPU: integer Div/Mod by zero is not an error here (that
// needs the divisor on the host); x / 0 and x % 0 give 0.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/ops/elementwise_common.cuh"

namespace kiln::cuda {
namespace {

using namespace ew;

// ---- Unary ops.

enum class UnaryOp : int {
  kAbs,
  kNeg,
  kSign,
  kExp,
  kLog,
  kSqrt,
  kReciprocal,
  kFloor,
  kCeil,
  kRound,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kErf,
  kNot,
  kBitwiseNot,
  kIsNaN,
  kIsInf,
  kRelu,
  kLeakyRelu,
  kElu,
  kSelu,
  kCelu,
  kSigmoid,
  kHardSigmoid,
  kHardSwish,
  kSoftplus,
  kSoftsign,
  kTanh,
  kGelu,
  kGeluTanh,
  kMish,
  kThresholdedRelu,
  kSwish,
  kShrink,
  kClip,
};

struct UnaryParams {
  UnaryOp op = UnaryOp::kAbs;
  float alpha = 0.f;
  float beta = 0.f;
  float gamma = 0.f;
  double lambd = 0.0;          // Shrink
  double bias = 0.0;           // Shrink
  bool detectPositive = true;  // IsInf
  bool detectNegative = true;  // IsInf
  // Clip: device scalars of X's type (nullptr: none); without them alpha/beta when
  // clipAttributes (Clip-6), else the type's full range.
  const void* clipMin = nullptr;
  const void* clipMax = nullptr;
  bool clipAttributes = false;
};

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

// Y = op(X) for X in `set`; IsNaN/IsInf write bool.
Status runUnary(GpuKernelContext& ctx, TypeSet set, const UnaryParams& params) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& x = ctx.input(0);
  KILN_RETURN_IF_ERROR(checkType(ctx, "input", x.type, set));
  const bool boolOut = params.op == UnaryOp::kIsNaN || params.op == UnaryOp::kIsInf;
  KILN_ASSIGN_OR_RETURN(DeviceTensor out,
                        ctx.allocateOutput(0, boolOut ? DataType::kBool : x.type, x.shape));
  const int64_t n = x.numel();
  if (n == 0) return Status::ok();
  KILN_DISPATCH_NUMERIC(x.type, ctx, {
    const bool packed = packAligned<T>({x.data, out.data});
    const int64_t work = packed ? (n + kPackWidth<T> - 1) / kPackWidth<T> : n;
    unaryKernel<T>
        <<<gridFor(work), kBlockSize, 0, ctx.stream()>>>(x.as<T>(), out.data, n, params, packed);
  });
  KILN_CUDA_CHECK_LAUNCH("unaryKernel");
  return Status::ok();
}

Status unary(GpuKernelContext& ctx, UnaryOp op, TypeSet set) {
  UnaryParams params;
  params.op = op;
  return runUnary(ctx, set, params);
}

// One kernel function per registered op.
#define KILN_UNARY_KERNEL(fnName, op, set)        \
  Status fnName(GpuKernelContext& ctx) {          \
    return unary(ctx, UnaryOp::op, TypeSet::set); \
  }
KILN_UNARY_KERNEL(absKernel, kAbs, kNumeric)
KILN_UNARY_KERNEL(negKernel, kNeg, kSigned)
KILN_UNARY_KERNEL(signKernel, kSign, kNumeric)
KILN_UNARY_KERNEL(expKernel, kExp, kFloat)
KILN_UNARY_KERNEL(logKernel, kLog, kFloat)
KILN_UNARY_KERNEL(sqrtKernel, kSqrt, kFloat)
KILN_UNARY_KERNEL(reciprocalKernel, kReciprocal, kFloat)
KILN_UNARY_KERNEL(floorKernel, kFloor, kFloat)
KILN_UNARY_KERNEL(ceilKernel, kCeil, kFloat)
KILN_UNARY_KERNEL(roundKernel, kRound, kFloat)
KILN_UNARY_KERNEL(sinKernel, kSin, kFloat)
KILN_UNARY_KERNEL(cosKernel, kCos, kFloat)
KILN_UNARY_KERNEL(tanKernel, kTan, kFloat)
KILN_UNARY_KERNEL(asinKernel, kAsin, kFloat)
KILN_UNARY_KERNEL(acosKernel, kAcos, kFloat)
KILN_UNARY_KERNEL(atanKernel, kAtan, kFloat)
KILN_UNARY_KERNEL(sinhKernel, kSinh, kFloat)
KILN_UNARY_KERNEL(coshKernel, kCosh, kFloat)
KILN_UNARY_KERNEL(asinhKernel, kAsinh, kFloat)
KILN_UNARY_KERNEL(acoshKernel, kAcosh, kFloat)
KILN_UNARY_KERNEL(atanhKernel, kAtanh, kFloat)
KILN_UNARY_KERNEL(erfKernel, kErf, kNumeric)
KILN_UNARY_KERNEL(notKernel, kNot, kBool)
KILN_UNARY_KERNEL(bitwiseNotKernel, kBitwiseNot, kInteger)
KILN_UNARY_KERNEL(isNanKernel, kIsNaN, kFloat)
KILN_UNARY_KERNEL(reluKernel, kRelu, kSigned)
KILN_UNARY_KERNEL(sigmoidKernel, kSigmoid, kFloat)
KILN_UNARY_KERNEL(hardSwishKernel, kHardSwish, kFloat)
KILN_UNARY_KERNEL(softplusKernel, kSoftplus, kFloat)
KILN_UNARY_KERNEL(softsignKernel, kSoftsign, kFloat)
KILN_UNARY_KERNEL(tanhKernel, kTanh, kFloat)
KILN_UNARY_KERNEL(mishKernel, kMish, kFloat)
#undef KILN_UNARY_KERNEL

Status isInfKernel(GpuKernelContext& ctx) {
  UnaryParams params;
  params.op = UnaryOp::kIsInf;
  params.detectPositive = ctx.node().attrInt("detect_positive", 1) != 0;
  params.detectNegative = ctx.node().attrInt("detect_negative", 1) != 0;
  return runUnary(ctx, TypeSet::kFloat, params);
}

// Activations with an alpha attribute (and its CPU default).
Status alphaUnary(GpuKernelContext& ctx, UnaryOp op, float defaultAlpha) {
  UnaryParams params;
  params.op = op;
  params.alpha = attr(ctx, "alpha", defaultAlpha);
  return runUnary(ctx, TypeSet::kFloat, params);
}
Status leakyReluKernel(GpuKernelContext& ctx) {
  return alphaUnary(ctx, UnaryOp::kLeakyRelu, 0.01f);
}
Status eluKernel(GpuKernelContext& ctx) {
  return alphaUnary(ctx, UnaryOp::kElu, 1.0f);
}
Status thresholdedReluKernel(GpuKernelContext& ctx) {
  return alphaUnary(ctx, UnaryOp::kThresholdedRelu, 1.0f);
}
Status swishKernel(GpuKernelContext& ctx) {
  return alphaUnary(ctx, UnaryOp::kSwish, 1.0f);
}
// com.microsoft QuickGelu: Swish with alpha 1.702 by default.
Status quickGeluKernel(GpuKernelContext& ctx) {
  return alphaUnary(ctx, UnaryOp::kSwish, 1.702f);
}

Status celuKernel(GpuKernelContext& ctx) {
  if (attr(ctx, "alpha", 1.0f) == 0.0f) return ctx.error("attribute alpha must not be 0");
  return alphaUnary(ctx, UnaryOp::kCelu, 1.0f);
}

Status seluKernel(GpuKernelContext& ctx) {
  UnaryParams params;
  params.op = UnaryOp::kSelu;
  params.alpha = attr(ctx, "alpha", 1.67326319217681884765625f);
  params.gamma = attr(ctx, "gamma", 1.05070102214813232421875f);
  return runUnary(ctx, TypeSet::kFloat, params);
}

Status hardSigmoidKernel(GpuKernelContext& ctx) {
  UnaryParams params;
  params.op = UnaryOp::kHardSigmoid;
  params.alpha = attr(ctx, "alpha", 0.2f);
  params.beta = attr(ctx, "beta", 0.5f);
  return runUnary(ctx, TypeSet::kFloat, params);
}

Status geluKernel(GpuKernelContext& ctx) {
  const std::string approximate = ctx.node().attrString("approximate", "none");
  if (approximate == "none") return unary(ctx, UnaryOp::kGelu, TypeSet::kFloat);
  if (approximate == "tanh") return unary(ctx, UnaryOp::kGeluTanh, TypeSet::kFloat);
  return ctx.error("attribute approximate must be 'none' or 'tanh', got '" + approximate + "'");
}

Status shrinkKernel(GpuKernelContext& ctx) {
  UnaryParams params;
  params.op = UnaryOp::kShrink;
  params.lambd = attr(ctx, "lambd", 0.5f);
  params.bias = attr(ctx, "bias", 0.0f);
  return runUnary(ctx, TypeSet::kNumeric, params);
}

// Clip-6: float bounds from attributes.
Status clipAttributeKernel(GpuKernelContext& ctx) {
  UnaryParams params;
  params.op = UnaryOp::kClip;
  params.clipAttributes = true;
  params.alpha = attr(ctx, "min", std::numeric_limits<float>::lowest());
  params.beta = attr(ctx, "max", std::numeric_limits<float>::max());
  return runUnary(ctx, TypeSet::kFloat, params);
}

// Checks optional bound input `index` (one element of X's type); *data is its device
// pointer, or stays nullptr when the input is omitted.
Status clipBound(GpuKernelContext& ctx, size_t index, const char* name, const void** data) {
  if (index >= ctx.inputCount() || !ctx.hasInput(index)) return Status::ok();
  const DeviceTensor& bound = ctx.input(index);
  if (bound.type != ctx.input(0).type) {
    return ctx.error(std::string("input ") + name + " must have the type of input");
  }
  if (bound.numel() != 1) {
    return ctx.error(std::string("input ") + name + " must be a scalar, got shape " +
                     shapeToString(bound.shape));
  }
  *data = bound.data;
  return Status::ok();
}

// Clip-11+: optional scalar min/max inputs, read by the kernel on the device.
Status clipInputKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  KILN_RETURN_IF_ERROR(checkType(ctx, "input", ctx.input(0).type, TypeSet::kNumeric));
  UnaryParams params;
  params.op = UnaryOp::kClip;
  KILN_RETURN_IF_ERROR(clipBound(ctx, 1, "min", &params.clipMin));
  KILN_RETURN_IF_ERROR(clipBound(ctx, 2, "max", &params.clipMax));
  return runUnary(ctx, TypeSet::kNumeric, params);
}

}  // namespace

void registerElementwiseGpuKernels(GpuKernelRegistry& registry) {
  using namespace ew;
  registry.add("Abs", 1, 1000, absKernel, kSupportsNumeric);
  registry.add("Neg", 1, 1000, negKernel, kSupportsSigned);
  registry.add("Sign", 9, 1000, signKernel, kSupportsNumeric);
  registry.add("Exp", 1, 1000, expKernel, kSupportsFloat);
  registry.add("Log", 1, 1000, logKernel, kSupportsFloat);
  registry.add("Sqrt", 1, 1000, sqrtKernel, kSupportsFloat);
  registry.add("Reciprocal", 1, 1000, reciprocalKernel, kSupportsFloat);
  registry.add("Floor", 1, 1000, floorKernel, kSupportsFloat);
  registry.add("Ceil", 1, 1000, ceilKernel, kSupportsFloat);
  registry.add("Round", 11, 1000, roundKernel, kSupportsFloat);
  registry.add("Sin", 7, 1000, sinKernel, kSupportsFloat);
  registry.add("Cos", 7, 1000, cosKernel, kSupportsFloat);
  registry.add("Tan", 7, 1000, tanKernel, kSupportsFloat);
  registry.add("Asin", 7, 1000, asinKernel, kSupportsFloat);
  registry.add("Acos", 7, 1000, acosKernel, kSupportsFloat);
  registry.add("Atan", 7, 1000, atanKernel, kSupportsFloat);
  registry.add("Sinh", 9, 1000, sinhKernel, kSupportsFloat);
  registry.add("Cosh", 9, 1000, coshKernel, kSupportsFloat);
  registry.add("Asinh", 9, 1000, asinhKernel, kSupportsFloat);
  registry.add("Acosh", 9, 1000, acoshKernel, kSupportsFloat);
  registry.add("Atanh", 9, 1000, atanhKernel, kSupportsFloat);
  registry.add("Erf", 9, 1000, erfKernel, kSupportsNumeric);
  registry.add("Not", 1, 1000, notKernel, kSupportsBool);
  registry.add("BitwiseNot", 18, 1000, bitwiseNotKernel, kSupportsInteger);
  registry.add("IsNaN", 9, 1000, isNanKernel, kSupportsFloat);
  registry.add("IsInf", 10, 1000, isInfKernel, kSupportsFloat);
  registry.add("Relu", 1, 1000, reluKernel, kSupportsSigned);
  registry.add("LeakyRelu", 1, 1000, leakyReluKernel, kSupportsFloat);
  registry.add("Elu", 1, 1000, eluKernel, kSupportsFloat);
  registry.add("Selu", 1, 1000, seluKernel, kSupportsFloat);
  registry.add("Celu", 12, 1000, celuKernel, kSupportsFloat);
  registry.add("Sigmoid", 1, 1000, sigmoidKernel, kSupportsFloat);
  registry.add("HardSigmoid", 1, 1000, hardSigmoidKernel, kSupportsFloat);
  registry.add("HardSwish", 14, 1000, hardSwishKernel, kSupportsFloat);
  registry.add("Tanh", 1, 1000, tanhKernel, kSupportsFloat);
  registry.add("Softplus", 1, 1000, softplusKernel, kSupportsFloat);
  registry.add("Softsign", 1, 1000, softsignKernel, kSupportsFloat);
  registry.add("ThresholdedRelu", 10, 1000, thresholdedReluKernel, kSupportsFloat);
  registry.add("Gelu", 20, 1000, geluKernel, kSupportsFloat);
  registry.add("Mish", 18, 1000, mishKernel, kSupportsFloat);
  registry.add("Shrink", 9, 1000, shrinkKernel, kSupportsNumeric);
  registry.add("Swish", 24, 1000, swishKernel, kSupportsFloat);
  GpuKernelEntry quickGelu;
  quickGelu.domain = "com.microsoft";
  quickGelu.opType = "QuickGelu";
  quickGelu.fn = quickGeluKernel;
  quickGelu.supports = kSupportsFloat;
  registry.add(quickGelu);
  registry.add("Clip", 1, 10, clipAttributeKernel, kSupportsFloat);
  registry.add("Clip", 11, 1000, clipInputKernel, kSupportsNumeric);
  registerBinaryElementwiseGpuKernels(registry);
  registerNaryAndCastGpuKernels(registry);
}

}  // namespace kiln::cuda
