// Binary elementwise kernels of the CUDA backend, the host half (kernels:
// elementwise_binary_impl.cu; their contract: elementwise_binary_impl.h): arithmetic,
// comparisons, logic, BitShift, Mod, PRelu, SwiGLU with numpy broadcasting, and Pow with an
// exponent of another numeric type; each registered op checks its inputs, selects a
// BinaryOp (or a PowMode), allocates the output and plans the operands' broadcast. The
// family's contract is elementwise_impl.cu's header comment.
#include <cstdint>
#include <string>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/elementwise_binary_impl.h"
#include "backends/cuda/ops/elementwise_common.h"

namespace kiln::cuda {
namespace {

using namespace ew;

bool isComparison(BinaryOp op) {
  return op == BinaryOp::kEqual || op == BinaryOp::kLess || op == BinaryOp::kLessOrEqual ||
         op == BinaryOp::kGreater || op == BinaryOp::kGreaterOrEqual;
}

// Checks two same-typed inputs from `allowed` and computes their broadcast shape.
Status prepareBinary(GpuKernelContext& ctx, TypeSet allowed, Shape* shape) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& b = ctx.input(1);
  KILN_RETURN_IF_ERROR(checkType(ctx, "input A", a.type, allowed));
  if (a.type != b.type) {
    return ctx.error(std::string("inputs A and B differ in type (") + dataTypeName(a.type) +
                     " vs " + dataTypeName(b.type) + ")");
  }
  return broadcastPair(ctx, a.shape, b.shape, shape);
}

// out = op(a, b) over `shape` (already checked), written as T or bool.
Status runBinary(GpuKernelContext& ctx, const BinaryParams& params, const Shape& shape) {
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& b = ctx.input(1);
  KILN_ASSIGN_OR_RETURN(DeviceTensor out,
                        ctx.allocateOutput(0, params.boolOut ? DataType::kBool : a.type, shape));
  const int64_t n = shapeNumel(shape);
  if (n == 0) return Status::ok();
  BinaryLaunch launch;
  KILN_RETURN_IF_ERROR(planOperands(ctx, shape, {&a.shape, &b.shape}, launch.operands));
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, a.type, kElementwiseDeviceTypes));
  launch.a = a.data;
  launch.b = b.data;
  launch.out = out.data;
  launch.type = a.type;
  launch.n = n;
  launch.params = params;
  return launchBinary(launch, ctx.stream());
}

Status binary(GpuKernelContext& ctx, BinaryOp op, TypeSet set) {
  Shape shape;
  KILN_RETURN_IF_ERROR(prepareBinary(ctx, set, &shape));
  BinaryParams params;
  params.op = op;
  params.boolOut = isComparison(op);
  return runBinary(ctx, params, shape);
}

#define KILN_BINARY_KERNEL(fnName, op, set)         \
  Status fnName(GpuKernelContext& ctx) {            \
    return binary(ctx, BinaryOp::op, TypeSet::set); \
  }
KILN_BINARY_KERNEL(addKernel, kAdd, kNumeric)
KILN_BINARY_KERNEL(subKernel, kSub, kNumeric)
KILN_BINARY_KERNEL(mulKernel, kMul, kNumeric)
KILN_BINARY_KERNEL(divKernel, kDiv, kNumeric)
KILN_BINARY_KERNEL(andKernel, kBitAnd, kBool)
KILN_BINARY_KERNEL(orKernel, kBitOr, kBool)
KILN_BINARY_KERNEL(xorKernel, kBitXor, kBool)
KILN_BINARY_KERNEL(bitwiseAndKernel, kBitAnd, kInteger)
KILN_BINARY_KERNEL(bitwiseOrKernel, kBitOr, kInteger)
KILN_BINARY_KERNEL(bitwiseXorKernel, kBitXor, kInteger)
KILN_BINARY_KERNEL(equalKernel, kEqual, kAll)
KILN_BINARY_KERNEL(lessKernel, kLess, kNumeric)
KILN_BINARY_KERNEL(lessOrEqualKernel, kLessOrEqual, kNumeric)
KILN_BINARY_KERNEL(greaterKernel, kGreater, kNumeric)
KILN_BINARY_KERNEL(greaterOrEqualKernel, kGreaterOrEqual, kNumeric)
#undef KILN_BINARY_KERNEL

Status modKernel(GpuKernelContext& ctx) {
  const int64_t fmod = ctx.node().attrInt("fmod", 0);
  if (fmod != 0 && fmod != 1) return ctx.error("attribute fmod must be 0 or 1");
  return binary(ctx, fmod ? BinaryOp::kFmod : BinaryOp::kMod, TypeSet::kNumeric);
}

Status bitShiftKernel(GpuKernelContext& ctx) {
  const std::string direction = ctx.node().attrString("direction", "");
  if (direction == "LEFT") return binary(ctx, BinaryOp::kShiftLeft, TypeSet::kInteger);
  if (direction == "RIGHT") return binary(ctx, BinaryOp::kShiftRight, TypeSet::kInteger);
  return ctx.error("attribute direction must be LEFT or RIGHT, got '" + direction + "'");
}

// PRelu: y = x < 0 ? slope * x : x, with slope broadcast to X's shape (never the reverse).
Status preluKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& slope = ctx.input(1);
  KILN_RETURN_IF_ERROR(checkType(ctx, "input X", x.type, TypeSet::kNumeric));
  if (slope.type != x.type) return ctx.error("input slope must have the type of X");
  Shape shape;
  KILN_RETURN_IF_ERROR(broadcastPair(ctx, x.shape, slope.shape, &shape));
  if (shape != x.shape) {
    return ctx.error("slope shape " + shapeToString(slope.shape) +
                     " does not broadcast to X shape " + shapeToString(x.shape));
  }
  BinaryParams params;
  params.op = BinaryOp::kPRelu;
  return runBinary(ctx, params, shape);
}

// SwiGLU (opset 28): Swish(A) * B; A and B have one shape and type.
Status swiGluKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& b = ctx.input(1);
  if (a.type != b.type) return ctx.error("inputs A and B must have one data type");
  if (a.shape != b.shape) {
    return ctx.error("inputs A " + shapeToString(a.shape) + " and B " + shapeToString(b.shape) +
                     " must have one shape (no broadcasting)");
  }
  KILN_RETURN_IF_ERROR(checkType(ctx, "input", a.type, TypeSet::kFloat));
  BinaryParams params;
  params.op = BinaryOp::kSwiGlu;
  params.alpha = attr(ctx, "alpha", 1.0f);
  return runBinary(ctx, params, a.shape);
}

Status powKernelFn(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& b = ctx.input(1);
  KILN_RETURN_IF_ERROR(checkType(ctx, "input X", a.type, TypeSet::kNumeric));
  KILN_RETURN_IF_ERROR(checkType(ctx, "input Y", b.type, TypeSet::kNumeric));
  Shape shape;
  KILN_RETURN_IF_ERROR(broadcastPair(ctx, a.shape, b.shape, &shape));
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, a.type, shape));
  const int64_t n = shapeNumel(shape);
  if (n == 0) return Status::ok();
  PowLaunch launch;
  launch.mode = PowMode::kFloatExponent;
  if (a.type == b.type && inTypeSet(a.type, TypeSet::kFloat))
    launch.mode = PowMode::kSameFloat;
  else if (inTypeSet(b.type, TypeSet::kInteger))
    launch.mode = PowMode::kIntExponent;
  KILN_RETURN_IF_ERROR(planOperands(ctx, shape, {&a.shape, &b.shape}, launch.operands));
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, a.type, kElementwiseDeviceTypes));
  if (a.type == DataType::kBool) return ctx.unsupported("Pow of bool");
  launch.a = a.data;
  launch.b = b.data;
  launch.aType = a.type;
  launch.bType = b.type;
  launch.out = out.data;
  launch.n = n;
  return launchPow(launch, ctx.stream());
}

}  // namespace

void registerBinaryElementwiseGpuKernels(GpuKernelRegistry& registry) {
  using namespace ew;
  registry.add("SwiGLU", 28, 1000, swiGluKernel, kSupportsFloat);
  registry.add("PRelu", 7, 1000, preluKernel, kSupportsNumeric);
  registry.add("Add", 7, 1000, addKernel, kSupportsNumeric);
  registry.add("Sub", 7, 1000, subKernel, kSupportsNumeric);
  registry.add("Mul", 7, 1000, mulKernel, kSupportsNumeric);
  registry.add("Div", 7, 1000, divKernel, kSupportsNumeric);
  registry.add("Pow", 7, 1000, powKernelFn, kSupportsNumeric);
  registry.add("Mod", 10, 1000, modKernel, kSupportsNumeric);
  registry.add("BitShift", 11, 1000, bitShiftKernel, kSupportsInteger);
  registry.add("And", 7, 1000, andKernel, kSupportsBool);
  registry.add("Or", 7, 1000, orKernel, kSupportsBool);
  registry.add("Xor", 7, 1000, xorKernel, kSupportsBool);
  registry.add("BitwiseAnd", 18, 1000, bitwiseAndKernel, kSupportsInteger);
  registry.add("BitwiseOr", 18, 1000, bitwiseOrKernel, kSupportsInteger);
  registry.add("BitwiseXor", 18, 1000, bitwiseXorKernel, kSupportsInteger);
  registry.add("Equal", 7, 1000, equalKernel, kSupportsAll);
  registry.add("Less", 7, 1000, lessKernel, kSupportsNumeric);
  registry.add("LessOrEqual", 12, 1000, lessOrEqualKernel, kSupportsNumeric);
  registry.add("Greater", 7, 1000, greaterKernel, kSupportsNumeric);
  registry.add("GreaterOrEqual", 12, 1000, greaterOrEqualKernel, kSupportsNumeric);
}

}  // namespace kiln::cuda
