// ai.kiln FusedMatMul (the fuse_matmul_bias_activation pass's node): Y =
// act(MatMul(A, B) + bias), bias [N] over the last dim, act one of none, relu,
// gelu_erf (x * 0.5 * (1 + erf(x / sqrt(2)))). The reference computes in float
// (double for float64) through the MatMul plan, as MatMul + Add + act would.
#include <cmath>
#include <string>

#include "backends/cpu/ops/matmul_plan.h"
#include "kiln/passes.h"

namespace kiln::cpu {
namespace {

enum class Activation { kNone, kRelu, kGeluErf };

Status parseActivation(const KernelContext& ctx, Activation* out) {
  const std::string name = ctx.node().attrString("activation", "none");
  if (name == "none")
    *out = Activation::kNone;
  else if (name == "relu")
    *out = Activation::kRelu;
  else if (name == "gelu_erf")
    *out = Activation::kGeluErf;
  else
    return ctx.error("unknown activation '" + name + "' (none, relu, gelu_erf)");
  return Status::ok();
}

template <class C>
C activate(C x, Activation act) {
  switch (act) {
    case Activation::kRelu:
      return x > C(0) ? x : C(0);
    case Activation::kGeluErf:
      return x * C(0.5) * (C(1) + std::erf(x / std::sqrt(C(2))));
    default:
      return x;
  }
}

template <class T>
Status fusedTyped(const MatMulPlan& plan, const Tensor& a, const Tensor& b, const Tensor& bias,
                  Activation act, Tensor& out) {
  using C = BlasType<T>;
  ComputeView<C> av(a.data<T>(), a.numel());
  ComputeView<C> bv(b.data<T>(), b.numel());
  ComputeView<C> biasView(bias.data<T>(), bias.numel());
  std::vector<C> y(static_cast<size_t>(out.numel()));
  runMatMulPlan(plan, av.data(), bv.data(), y.data());
  const int64_t n = plan.n;
  for (size_t i = 0; i < y.size(); ++i) y[i] = activate(y[i] + biasView.data()[i % n], act);
  convertFromBuffer(y.data(), out.numel(), out.data<T>());
  return Status::ok();
}

Status fusedMatMulKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  MatMulPlan plan;
  KILN_RETURN_IF_ERROR(prepareMatMulNode(ctx, &plan));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor& bias = ctx.input(2);
  if (bias.type() != a.type()) return ctx.error("bias must have the type of A");
  if (bias.rank() != 1 || bias.dim(0) != plan.n)
    return ctx.error("bias " + shapeToString(bias.shape()) + " must be [" + std::to_string(plan.n) +
                     "]");
  Activation act;
  KILN_RETURN_IF_ERROR(parseActivation(ctx, &act));
  Tensor& out = ctx.allocateOutput(0, a.type(), plan.outShape);
  if (out.numel() == 0) return Status::ok();
  Status status = dispatchFloatTypes(a.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return fusedTyped<T>(plan, a, b, bias, act, out);
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

}  // namespace

void registerFusedNormalizationKernels(KernelRegistry& registry);  // fused_normalization.cpp
void registerFusedConvKernels(KernelRegistry& registry);           // fused_conv.cpp
void registerFusedAttentionKernels(KernelRegistry& registry);      // fused_attention.cpp
void registerQuantizedLayerKernels(KernelRegistry& registry);      // quantized_layers.cpp

void registerFusedKernels(KernelRegistry& registry) {
  registry.add("FusedMatMul", 1, 1000, &fusedMatMulKernel, kKilnDomain);
  registerFusedNormalizationKernels(registry);  // ScaledMaskedSoftmax, AddLayerNorm
  registerFusedConvKernels(registry);           // FusedConv
  registerFusedAttentionKernels(registry);      // FusedAttention
  registerQuantizedLayerKernels(registry);      // QuantizedConv, QuantizedMatMul (fold_qdq)
}

}  // namespace kiln::cpu
