// Unary elementwise math kernels: Abs, Neg, Exp, Log, Sqrt, Reciprocal, rounding, Sign,
// trigonometric and hyperbolic functions, Erf, logical/bitwise Not, IsNaN and IsInf.
// Activation functions (Relu, Sigmoid, Clip, ...) are in activations.cpp.
#include <cmath>

#include "backends/cpu/ops/elementwise.h"

namespace kiln::cpu {
namespace {

// Integer negation wraps (-INT_MIN == INT_MIN, as numpy) instead of overflowing.
template <class C>
C negate(C x) {
  if constexpr (kIsInteger<C>)
    return static_cast<C>(WrapType<C>(0) - WrapType<C>(x));
  else
    return -x;
}

Status absKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kNumeric>(ctx, [](auto x) -> decltype(x) {
    if constexpr (std::is_floating_point_v<decltype(x)>)
      return std::fabs(x);
    else if constexpr (std::is_unsigned_v<decltype(x)>)
      return x;
    else
      return x < 0 ? negate(x) : x;
  });
}
Status negKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kSigned>(ctx, [](auto x) { return negate(x); });
}
// Sign of NaN is NaN.
Status signKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kNumeric>(ctx, [](auto x) -> decltype(x) {
    using C = decltype(x);
    if (x > C(0)) return C(1);
    if constexpr (std::is_signed_v<C>) {
      if (x < C(0)) return C(-1);
    }
    return x == C(0) ? C(0) : x;
  });
}

Status expKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::exp(x); });
}
Status logKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::log(x); });
}
Status sqrtKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::sqrt(x); });
}
Status reciprocalKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return decltype(x)(1) / x; });
}
Status floorKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::floor(x); });
}
Status ceilKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::ceil(x); });
}
// Halves round to even; nearbyint does so in the default rounding mode, which Kiln never
// changes.
Status roundKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::nearbyint(x); });
}

Status sinKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::sin(x); });
}
Status cosKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::cos(x); });
}
Status tanKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::tan(x); });
}
Status asinKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::asin(x); });
}
Status acosKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::acos(x); });
}
Status atanKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::atan(x); });
}
Status sinhKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::sinh(x); });
}
Status coshKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::cosh(x); });
}
Status asinhKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::asinh(x); });
}
Status acoshKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::acosh(x); });
}
Status atanhKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::atanh(x); });
}
// Erf also takes integer tensors (opset 9); results truncate toward zero like a Cast.
Status erfKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kNumeric>(ctx, [](auto x) -> decltype(x) {
    using C = decltype(x);
    if constexpr (kIsInteger<C>)
      return truncateToInteger<C>(std::erf(double(x)));
    else
      return std::erf(x);
  });
}

Status notKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kBool>(ctx, [](bool x) { return !x; });
}
Status bitwiseNotKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kInteger>(ctx, [](auto x) { return static_cast<decltype(x)>(~x); });
}

Status isNanKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat, true>(ctx, [](auto x) { return std::isnan(x); });
}
Status isInfKernel(KernelContext& ctx) {
  const bool positive = ctx.node().attrInt("detect_positive", 1) != 0;
  const bool negative = ctx.node().attrInt("detect_negative", 1) != 0;
  return unaryKernel<TypeSet::kFloat, true>(
      ctx, [positive, negative](auto x) { return std::isinf(x) && (x > 0 ? positive : negative); });
}

}  // namespace

void registerElementwiseUnaryKernels(KernelRegistry& registry) {
  // Opsets 1-5 of the oldest ops only added the ignored `consumed_inputs` attribute; later
  // versions added types.
  registry.add("Abs", 1, 1000, &absKernel);
  registry.add("Neg", 1, 1000, &negKernel);
  registry.add("Sign", 9, 1000, &signKernel);
  registry.add("Exp", 1, 1000, &expKernel);
  registry.add("Log", 1, 1000, &logKernel);
  registry.add("Sqrt", 1, 1000, &sqrtKernel);
  registry.add("Reciprocal", 1, 1000, &reciprocalKernel);
  registry.add("Floor", 1, 1000, &floorKernel);
  registry.add("Ceil", 1, 1000, &ceilKernel);
  registry.add("Round", 11, 1000, &roundKernel);
  registry.add("Sin", 7, 1000, &sinKernel);
  registry.add("Cos", 7, 1000, &cosKernel);
  registry.add("Tan", 7, 1000, &tanKernel);
  registry.add("Asin", 7, 1000, &asinKernel);
  registry.add("Acos", 7, 1000, &acosKernel);
  registry.add("Atan", 7, 1000, &atanKernel);
  registry.add("Sinh", 9, 1000, &sinhKernel);
  registry.add("Cosh", 9, 1000, &coshKernel);
  registry.add("Asinh", 9, 1000, &asinhKernel);
  registry.add("Acosh", 9, 1000, &acoshKernel);
  registry.add("Atanh", 9, 1000, &atanhKernel);
  registry.add("Erf", 9, 1000, &erfKernel);
  registry.add("Not", 1, 1000, &notKernel);
  registry.add("BitwiseNot", 18, 1000, &bitwiseNotKernel);
  registry.add("IsNaN", 9, 1000, &isNanKernel);
  registry.add("IsInf", 10, 1000, &isInfKernel);
  registerActivationKernels(registry);
}

}  // namespace kiln::cpu
