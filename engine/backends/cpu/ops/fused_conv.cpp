// ai.kiln FusedConv (the fuse_conv_bias_activation pass's node):
//   Y = act(Conv(X, W) + B + Z)
// X, W and the Conv attributes as ONNX Conv; B [M] an optional per-channel bias; Z an
// optional residual of Y's shape; act one of
//   none, relu, leaky_relu (x >= 0 ? x : alpha * x), clip (min(max(x, alpha), beta)),
//   sigmoid, tanh, hard_sigmoid (clamp(alpha * x + beta, 0, 1)),
//   hard_swish (x * clamp(x / 6 + 0.5, 0, 1)), silu (x * sigmoid(x)),
//   gelu_erf (x * 0.5 * (1 + erf(x / sqrt(2)))), gelu_tanh (Gelu's tanh approximation)
// with alpha = activation_alpha, beta = activation_beta. The reference runs Conv's own
// convolution (bias included) and applies Z and act to its float (double for
// float64) result before the one rounding to the storage type.
#include <algorithm>
#include <cmath>
#include <string>

#include "backends/cpu/ops/conv.h"
#include "backends/cpu/ops/conv_epilogue.h"
#include "kiln/passes.h"

namespace kiln::cpu {
namespace {

// Z: Y's shape and X's type, when present.
Status checkResidual(const KernelContext& ctx, const Tensor* z, const Shape& outShape) {
  if (!z) return Status::ok();
  if (z->type() != ctx.input(0).type()) return ctx.error("input Z must have the type of X");
  if (z->shape() != outShape)
    return ctx.error("input Z " + shapeToString(z->shape()) + " must have the output's shape " +
                     shapeToString(outShape));
  return Status::ok();
}

}  // namespace

Status fusedConvKernel(KernelContext& ctx) {
  ConvProblem problem;
  KILN_RETURN_IF_ERROR(prepareConvNode(ctx, &problem));
  Epilogue epilogue;
  KILN_RETURN_IF_ERROR(parseEpilogue(ctx, &epilogue, /*withGelu=*/true));
  const Tensor& x = ctx.input(0);
  const Shape outShape = spatialOutputShape(problem.batch, problem.outChannels, problem.geometry);
  const Tensor* z = ctx.inputOrNull(3);
  KILN_RETURN_IF_ERROR(checkResidual(ctx, z, outShape));
  Tensor& out = ctx.allocateOutput(0, x.type(), outShape);
  if (out.numel() == 0) return Status::ok();
  Status status = dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return runTypedConvolution<T>(
        ctx, problem, out,
        [&](const ConvProblem& q, const auto* xd, const auto* wd, const auto* bias, auto* y) {
          using C = std::remove_const_t<std::remove_pointer_t<decltype(xd)>>;
          runConvolution(q, xd, wd, bias, y);
          const int64_t n = out.numel();
          if (z) {
            ComputeView<C> zv(z->data<T>(), n);
            for (int64_t i = 0; i < n; ++i) y[i] = activate(y[i] + zv.data()[i], epilogue);
          } else {
            for (int64_t i = 0; i < n; ++i) y[i] = activate(y[i], epilogue);
          }
        });
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

void registerFusedConvKernels(KernelRegistry& registry) {
  registry.add("FusedConv", 1, 1000, &fusedConvKernel, kKilnDomain);
}

}  // namespace kiln::cpu
