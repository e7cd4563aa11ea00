// Swish (opset 24): x * sigmoid(alpha * x), and SwiGLU (opset 28): Swish(A) * B, the gated
// unit of LLaMA-style feed-forward blocks. Both default alpha to 1 (SiLU). com.microsoft
// QuickGelu (ONNX Runtime's contrib op, which its transformer optimizer writes for CLIP's
// QuickGELU) is Swish with alpha 1.702 by default.
#include <cmath>

#include "backends/cpu/ops/elementwise.h"

namespace kiln::cpu {
namespace {

template <class C>
C swish(C x, C alpha) {
  return x / (C(1) + std::exp(-alpha * x));
}

Status swishWithDefault(KernelContext& ctx, float defaultAlpha) {
  const float alpha = ctx.node().attrFloat("alpha", defaultAlpha);
  return unaryKernel<TypeSet::kFloat>(ctx, [alpha](auto x) {
    using C = decltype(x);
    return swish(x, static_cast<C>(alpha));
  });
}

Status swishKernel(KernelContext& ctx) {
  return swishWithDefault(ctx, 1.0f);
}

Status quickGeluKernel(KernelContext& ctx) {
  return swishWithDefault(ctx, 1.702f);
}

// A and B have one shape and type; SwiGLU does not broadcast.
Status swiGluKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.type() != b.type()) return ctx.error("inputs A and B must have one data type");
  if (a.shape() != b.shape()) {
    return ctx.error("inputs A " + shapeToString(a.shape()) + " and B " + shapeToString(b.shape()) +
                     " must have one shape (no broadcasting)");
  }
  const float alpha = ctx.node().attrFloat("alpha", 1.0f);
  return dispatchTypeSet<TypeSet::kFloat>(ctx, a.type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    Tensor& y = ctx.allocateOutput(0, a.type(), a.shape());
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* out = y.data<T>();
    for (int64_t i = 0; i < a.numel(); ++i) {
      out[i] = static_cast<T>(swish(static_cast<C>(pa[i]), static_cast<C>(alpha)) *
                              static_cast<C>(pb[i]));
    }
    return Status::ok();
  });
}

}  // namespace

void registerGatedActivationKernels(KernelRegistry& registry) {
  registry.add("Swish", 24, 1000, &swishKernel);
  registry.add("SwiGLU", 28, 1000, &swiGluKernel);
  registry.add("QuickGelu", 1, 1000, &quickGeluKernel, "com.microsoft");
}

}  // namespace kiln::cpu
