// ai.kiln FusedMatMul (the fuse_matmul_bias_activation pass's node):
//   Y = act(MatMul(A, B) + bias [+ Z])
// A and B as MatMul's (the pass writes a constant [K, N] B), bias [N] over the last
// dim, Z an optional residual of Y's shape and type (fuse_matmul_residual: the Add after
// the GEMM, added before act as FusedConv adds its Z), act one of FusedConv's
// (none, relu, leaky_relu, clip, sigmoid, tanh, hard_sigmoid, hard_swish, silu;
// formulas and activation_alpha / activation_beta: fused_conv.cpp) or
//   gelu_erf (Gelu: x * 0.5 * (1 + erf(x / sqrt(2)))),
//   gelu_tanh (Gelu, approximate = tanh: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))).
// The reference computes in float (double for float64) through the MatMul plan, as
// MatMul + Add + the activation's op would, and rounds once to the storage type.
#include <string>

#include "backends/cpu/ops/conv_epilogue.h"
#include "backends/cpu/ops/matmul_plan.h"
#include "kiln/passes.h"

namespace kiln::cpu {
namespace {

template <class T>
Status fusedTyped(const MatMulPlan& plan, const Tensor& a, const Tensor& b, const Tensor& bias,
                  const Tensor* residual, const Epilogue& act, Tensor& out) {
  using C = BlasType<T>;
  ComputeView<C> av(a.data<T>(), a.numel());
  ComputeView<C> bv(b.data<T>(), b.numel());
  ComputeView<C> biasView(bias.data<T>(), bias.numel());
  std::vector<C> y(static_cast<size_t>(out.numel()));
  runMatMulPlan(plan, av.data(), bv.data(), y.data());
  const int64_t n = plan.n;
  if (residual) {
    ComputeView<C> z(residual->data<T>(), residual->numel());
    for (size_t i = 0; i < y.size(); ++i)
      y[i] = activate(y[i] + biasView.data()[i % n] + z.data()[i], act);
  } else {
    for (size_t i = 0; i < y.size(); ++i) y[i] = activate(y[i] + biasView.data()[i % n], act);
  }
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
  const Tensor* residual = ctx.inputCount() > 3 && ctx.hasInput(3) ? &ctx.input(3) : nullptr;
  if (residual && (residual->type() != a.type() || residual->shape() != plan.outShape))
    return ctx.error("residual " + shapeToString(residual->shape()) +
                     " must have A's type and the output's shape " + shapeToString(plan.outShape));
  Epilogue act;
  KILN_RETURN_IF_ERROR(parseEpilogue(ctx, &act, true));
  Tensor& out = ctx.allocateOutput(0, a.type(), plan.outShape);
  if (out.numel() == 0) return Status::ok();
  Status status = dispatchFloatTypes(a.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return fusedTyped<T>(plan, a, b, bias, residual, act, out);
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

}  // namespace

void registerFusedNormalizationKernels(KernelRegistry& registry);  // fused_normalization.cpp
void registerFusedConvKernels(KernelRegistry& registry);           // fused_conv.cpp
void registerConvMaxPoolKernel(KernelRegistry& registry);          // conv_max_pool.cpp
void registerFusedAttentionKernels(KernelRegistry& registry);      // fused_attention.cpp
void registerQuantizedLayerKernels(KernelRegistry& registry);      // quantized_layers.cpp
void registerFp8LayerKernels(KernelRegistry& registry);            // fp8_matmul.cpp

void registerFusedKernels(KernelRegistry& registry) {
  registry.add("FusedMatMul", 1, 1000, &fusedMatMulKernel, kKilnDomain);
  registerFusedNormalizationKernels(registry);  // ScaledMaskedSoftmax, AddLayerNorm
  registerFusedConvKernels(registry);           // FusedConv
  registerConvMaxPoolKernel(registry);          // FusedConvMaxPool (fuse_conv_max_pool)
  registerFusedAttentionKernels(registry);      // FusedAttention
  registerQuantizedLayerKernels(registry);      // QuantizedConv, QuantizedMatMul (fold_qdq)
  registerFp8LayerKernels(registry);            // Fp8MatMul (fold_qdq, float8e4m3fn)
}

}  // namespace kiln::cpu
