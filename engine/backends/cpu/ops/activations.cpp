// Activation kernels: the Relu family, sigmoids, softplus/softsign, Gelu, Mish, Shrink and
// Clip. All are unary maps over the input computed in float (double for float64).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "backends/cpu/ops/elementwise.h"

namespace kiln::cpu {
namespace {

// For x below about -88 (float) exp(-x) overflows to infinity and the result is 0, an
// absolute error under 1e-38; everywhere else this is accurate to a few ulps and, unlike a
// two-sided formula, has no branch to mispredict.
template <class C>
C sigmoid(C x) {
  return C(1) / (C(1) + std::exp(-x));
}

// log(1 + exp(x)) without overflow for large x.
template <class C>
C softplus(C x) {
  if (x > C(0)) return x + std::log1p(std::exp(-x));
  return std::log1p(std::exp(x));
}

float attr(const KernelContext& ctx, const char* name, float fallback) {
  return ctx.node().attrFloat(name, fallback);
}

Status reluKernel(KernelContext& ctx) {
  // NaN stays NaN, as numpy's maximum(x, 0).
  return unaryKernel<TypeSet::kSigned>(ctx, [](auto x) -> decltype(x) {
    using C = decltype(x);
    return selectValue(x < C(0), C(0), x);
  });
}

Status leakyReluKernel(KernelContext& ctx) {
  const float alpha = attr(ctx, "alpha", 0.01f);
  return unaryKernel<TypeSet::kFloat>(ctx, [alpha](auto x) -> decltype(x) {
    using C = decltype(x);
    return selectValue(x < C(0), C(alpha) * x, x);
  });
}

Status eluKernel(KernelContext& ctx) {
  const float alpha = attr(ctx, "alpha", 1.0f);
  return unaryKernel<TypeSet::kFloat>(ctx, [alpha](auto x) -> decltype(x) {
    using C = decltype(x);
    return x < 0 ? C(alpha) * (std::exp(x) - C(1)) : x;
  });
}

Status seluKernel(KernelContext& ctx) {
  const float alpha = attr(ctx, "alpha", 1.67326319217681884765625f);
  const float gamma = attr(ctx, "gamma", 1.05070102214813232421875f);
  return unaryKernel<TypeSet::kFloat>(ctx, [alpha, gamma](auto x) -> decltype(x) {
    using C = decltype(x);
    return x > 0 ? C(gamma) * x : C(gamma) * (C(alpha) * std::exp(x) - C(alpha));
  });
}

Status celuKernel(KernelContext& ctx) {
  const float alpha = attr(ctx, "alpha", 1.0f);
  if (alpha == 0.0f) return ctx.error("attribute alpha must not be 0");
  return unaryKernel<TypeSet::kFloat>(ctx, [alpha](auto x) -> decltype(x) {
    using C = decltype(x);
    return std::max(C(0), x) + std::min(C(0), C(alpha) * (std::exp(x / C(alpha)) - C(1)));
  });
}

Status sigmoidKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return sigmoid(x); });
}

Status hardSigmoidKernel(KernelContext& ctx) {
  const float alpha = attr(ctx, "alpha", 0.2f);
  const float beta = attr(ctx, "beta", 0.5f);
  return unaryKernel<TypeSet::kFloat>(ctx, [alpha, beta](auto x) -> decltype(x) {
    using C = decltype(x);
    return std::max(C(0), std::min(C(1), C(alpha) * x + C(beta)));
  });
}

// HardSwish(x) = x * HardSigmoid(x) with alpha = 1/6, beta = 0.5.
Status hardSwishKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) -> decltype(x) {
    using C = decltype(x);
    return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5)));
  });
}

Status tanhKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return std::tanh(x); });
}

Status softplusKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return softplus(x); });
}

Status softsignKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx,
                                      [](auto x) { return x / (decltype(x)(1) + std::fabs(x)); });
}

Status thresholdedReluKernel(KernelContext& ctx) {
  const float alpha = attr(ctx, "alpha", 1.0f);
  return unaryKernel<TypeSet::kFloat>(
      ctx, [alpha](auto x) -> decltype(x) { return x > decltype(x)(alpha) ? x : decltype(x)(0); });
}

Status geluKernel(KernelContext& ctx) {
  const std::string approximate = ctx.node().attrString("approximate", "none");
  if (approximate == "none") {
    return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) -> decltype(x) {
      using C = decltype(x);
      return C(0.5) * x * (C(1) + std::erf(x * C(0.7071067811865476)));
    });
  }
  if (approximate == "tanh") {
    return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) -> decltype(x) {
      using C = decltype(x);
      const C kScale = C(0.7978845608028654);  // sqrt(2 / pi)
      return C(0.5) * x * (C(1) + std::tanh(kScale * (x + C(0.044715) * x * x * x)));
    });
  }
  return ctx.error("attribute approximate must be 'none' or 'tanh', got '" + approximate + "'");
}

Status mishKernel(KernelContext& ctx) {
  return unaryKernel<TypeSet::kFloat>(ctx, [](auto x) { return x * std::tanh(softplus(x)); });
}

// Shrink takes integer tensors too; the float attributes apply in double and the result
// converts back like a Cast.
Status shrinkKernel(KernelContext& ctx) {
  const double lambd = attr(ctx, "lambd", 0.5f);
  const double bias = attr(ctx, "bias", 0.0f);
  return unaryKernel<TypeSet::kNumeric>(ctx, [lambd, bias](auto x) -> decltype(x) {
    using C = decltype(x);
    const double v = static_cast<double>(x);
    const double r = v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0);
    if constexpr (kIsInteger<C>)
      return truncateToInteger<C>(r);
    else
      return static_cast<C>(r);
  });
}

// ---- Clip: bounds are attributes before opset 11 and optional scalar inputs since.

template <class T>
Status clipWithBounds(KernelContext& ctx, ComputeType<T> lo, ComputeType<T> hi) {
  using C = ComputeType<T>;
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.allocateOutput(0, x.type(), x.shape());
  // max then min: when lo > hi every element becomes hi, as the spec requires; NaN stays.
  mapUnary(x.data<T>(), out.data<T>(), x.numel(),
           [lo, hi](T v) { return static_cast<T>(std::min(std::max(C(v), lo), hi)); });
  return Status::ok();
}

Status clipAttributeKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const float lo = attr(ctx, "min", std::numeric_limits<float>::lowest());
  const float hi = attr(ctx, "max", std::numeric_limits<float>::max());
  return dispatchTypeSet<TypeSet::kFloat>(ctx, ctx.input(0).type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    return clipWithBounds<T>(ctx, C(lo), C(hi));
  });
}

// Reads optional bound input `index` (one element of X's type) into *value.
template <class T>
Status readBound(KernelContext& ctx, size_t index, const char* name, ComputeType<T>* value) {
  const Tensor* bound = ctx.inputOrNull(index);
  if (!bound) return Status::ok();
  if (bound->type() != ctx.input(0).type()) {
    return ctx.error(std::string("input ") + name + " must have the type of input");
  }
  if (bound->numel() != 1) {
    return ctx.error(std::string("input ") + name + " must be a scalar, got shape " +
                     shapeToString(bound->shape()));
  }
  *value = ComputeType<T>(bound->data<T>()[0]);
  return Status::ok();
}

Status clipInputKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  return dispatchTypeSet<TypeSet::kNumeric>(ctx, ctx.input(0).type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    C lo = std::numeric_limits<C>::lowest();
    C hi = std::numeric_limits<C>::max();
    if constexpr (std::is_floating_point_v<C>) {
      lo = -std::numeric_limits<C>::infinity();
      hi = std::numeric_limits<C>::infinity();
    }
    KILN_RETURN_IF_ERROR(readBound<T>(ctx, 1, "min", &lo));
    KILN_RETURN_IF_ERROR(readBound<T>(ctx, 2, "max", &hi));
    return clipWithBounds<T>(ctx, lo, hi);
  });
}

}  // namespace

void registerActivationKernels(KernelRegistry& registry) {
  registry.add("Relu", 1, 1000, &reluKernel);
  registry.add("LeakyRelu", 1, 1000, &leakyReluKernel);
  registry.add("Elu", 1, 1000, &eluKernel);
  registry.add("Selu", 1, 1000, &seluKernel);
  registry.add("Celu", 12, 1000, &celuKernel);
  registry.add("Sigmoid", 1, 1000, &sigmoidKernel);
  registry.add("HardSigmoid", 1, 1000, &hardSigmoidKernel);
  registry.add("HardSwish", 14, 1000, &hardSwishKernel);
  registry.add("Tanh", 1, 1000, &tanhKernel);
  registry.add("Softplus", 1, 1000, &softplusKernel);
  registry.add("Softsign", 1, 1000, &softsignKernel);
  registry.add("ThresholdedRelu", 10, 1000, &thresholdedReluKernel);
  registry.add("Gelu", 20, 1000, &geluKernel);
  registry.add("Mish", 18, 1000, &mishKernel);
  registry.add("Shrink", 9, 1000, &shrinkKernel);
  registry.add("Clip", 1, 10, &clipAttributeKernel);
  registry.add("Clip", 11, 1000, &clipInputKernel);
}

}  // namespace kiln::cpu
