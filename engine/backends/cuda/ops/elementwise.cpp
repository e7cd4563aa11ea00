// GPU kernels of the elementwise family, the host half of the unary ops (kernels:
// elementwise_impl.cu; their contract: elementwise_impl.h): unary math and activations and
// Clip here, each registered op selecting a UnaryOp and its attributes; binary arithmetic,
// comparisons and logic with numpy broadcasting, PRelu, SwiGLU and Pow with mixed types in
// elementwise_binary.cpp; the variadic Sum/Mean/Max/Min, Where, Cast and CastLike in
// elementwise_nary_cast.cpp; what they share in elementwise_common.h (host) and
// elementwise_common.cuh (device). Semantics (types, opsets, attributes, NaN handling,
// integer wrapping and truncation) follow the CPU kernels in backends/cpu/ops/elementwise_*.cpp,
// activations.cpp, gated_activations.cpp and cast.cpp; the kernels' contract is
// elementwise_impl.cu's header comment.
#include <cstdint>
#include <limits>
#include <string>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/elementwise_common.h"
#include "backends/cuda/ops/elementwise_impl.h"

namespace kiln::cuda {
namespace {

using namespace ew;

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
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, x.type, kElementwiseDeviceTypes));
  UnaryLaunch launch;
  launch.x = x.data;
  launch.y = out.data;
  launch.type = x.type;
  launch.n = n;
  launch.params = params;
  return launchUnary(launch, ctx.stream());
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
