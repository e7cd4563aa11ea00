// The variadic Sum / Mean / Max / Min, Where and the conversions Cast and CastLike of the
// CUDA backend, the host half (kernels: elementwise_nary_cast_impl.cu; their contract:
// elementwise_nary_cast_impl.h): the checks, the output, the broadcast plans and the
// launches (a variadic op in batches of kMaxVariadic inputs). The family's contract is
// elementwise_impl.cu's header comment.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/elementwise_common.h"
#include "backends/cuda/ops/elementwise_nary_cast_impl.h"

namespace kiln::cuda {
namespace {

using namespace ew;

// ---- Variadic Sum, Mean, Max, Min.

// One launch over inputs[first, first + count), after `withOutput` the accumulated output.
Status foldBatch(GpuKernelContext& ctx, const DeviceTensor& out, bool withOutput, size_t first,
                 size_t count, VariadicOp op, int meanDivisor) {
  VariadicLaunch launch;
  launch.op = op;
  launch.meanDivisor = meanDivisor;
  std::vector<const Shape*> shapes;
  if (withOutput) {
    launch.data[launch.count++] = out.data;
    shapes.push_back(&out.shape);
  }
  for (size_t k = first; k < first + count; ++k) {
    launch.data[launch.count++] = ctx.input(k).data;
    shapes.push_back(&ctx.input(k).shape);
  }
  KILN_RETURN_IF_ERROR(planOperands(ctx, out.shape, shapes, launch.operands));
  launch.out = out.data;
  launch.type = ctx.input(0).type;  // every input's (checked by variadic)
  launch.n = out.numel();
  return launchVariadic(launch, ctx.stream());
}

// Folds all inputs into `out`, kMaxVariadic per launch; later launches read the partial
// result from `out` first. Mean divides in the last launch.
Status foldInputs(GpuKernelContext& ctx, const DeviceTensor& out, VariadicOp op, bool mean) {
  const size_t count = ctx.inputCount();
  size_t done = 0;
  while (done < count) {
    const bool withOutput = done > 0;
    const size_t take =
        std::min(count - done, static_cast<size_t>(kMaxVariadic - (withOutput ? 1 : 0)));
    const bool last = done + take == count;
    KILN_RETURN_IF_ERROR(foldBatch(ctx, out, withOutput, done, take, op,
                                   mean && last ? static_cast<int>(count) : 0));
    done += take;
  }
  return Status::ok();
}

Status variadic(GpuKernelContext& ctx, VariadicOp op, TypeSet set, bool mean) {
  const size_t count = ctx.inputCount();
  if (count == 0) return ctx.error("needs at least one input");
  KILN_RETURN_IF_ERROR(requireInputs(ctx, count));
  const DataType type = ctx.input(0).type;
  KILN_RETURN_IF_ERROR(checkType(ctx, "input", type, set));
  Shape shape = ctx.input(0).shape;
  for (size_t i = 1; i < count; ++i) {
    const DeviceTensor& in = ctx.input(i);
    if (in.type != type) {
      return ctx.error("input " + std::to_string(i) + " has type " + dataTypeName(in.type) +
                       " but input 0 has " + dataTypeName(type));
    }
    Shape next;
    KILN_RETURN_IF_ERROR(broadcastPair(ctx, shape, in.shape, &next));
    shape = next;
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, type, shape));
  if (out.numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, type, kElementwiseDeviceTypes));
  if (type == DataType::kBool) return ctx.unsupported("bool inputs");
  return foldInputs(ctx, out, op, mean);
}

Status sumKernel(GpuKernelContext& ctx) {
  return variadic(ctx, VariadicOp::kSum, TypeSet::kFloat, false);
}
Status meanKernel(GpuKernelContext& ctx) {
  return variadic(ctx, VariadicOp::kSum, TypeSet::kFloat, true);
}
Status maxKernel(GpuKernelContext& ctx) {
  return variadic(ctx, VariadicOp::kMax, TypeSet::kNumeric, false);
}
Status minKernel(GpuKernelContext& ctx) {
  return variadic(ctx, VariadicOp::kMin, TypeSet::kNumeric, false);
}

// ---- Where: cond ? x : y over the broadcast of all three.

Status whereKernelFn(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DeviceTensor& cond = ctx.input(0);
  const DeviceTensor& x = ctx.input(1);
  const DeviceTensor& y = ctx.input(2);
  if (cond.type != DataType::kBool) return ctx.error("input condition must be bool");
  if (x.type != y.type) return ctx.error("inputs X and Y must have the same type");
  KILN_RETURN_IF_ERROR(checkType(ctx, "input X", x.type, TypeSet::kAll));
  Shape partial;
  Shape shape;
  KILN_RETURN_IF_ERROR(broadcastPair(ctx, cond.shape, x.shape, &partial));
  KILN_RETURN_IF_ERROR(broadcastPair(ctx, partial, y.shape, &shape));
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, x.type, shape));
  const int64_t n = shapeNumel(shape);
  if (n == 0) return Status::ok();
  WhereLaunch launch;
  KILN_RETURN_IF_ERROR(
      planOperands(ctx, shape, {&cond.shape, &x.shape, &y.shape}, launch.operands));
  const size_t elementBytes = dataTypeSize(x.type);
  if (elementBytes != 1 && elementBytes != 2 && elementBytes != 4 && elementBytes != 8)
    return unsupportedType(ctx, x.type);
  launch.cond = cond.data;
  launch.x = x.data;
  launch.y = y.data;
  launch.out = out.data;
  launch.type = x.type;
  launch.n = n;
  return launchWhere(launch, ctx.stream());
}

// ---- Cast and CastLike among the numeric types and bool.

// Casts input 0 into storage type `to`.
Status castInto(GpuKernelContext& ctx, DataType to) {
  const DeviceTensor& in = ctx.input(0);
  if (!inTypeSet(in.type, TypeSet::kAll)) {
    return ctx.unsupported(std::string("input has data type ") + dataTypeName(in.type));
  }
  if (!inTypeSet(to, TypeSet::kAll)) {
    return ctx.unsupported(std::string("cannot cast to data type ") + dataTypeName(to));
  }
  const std::string roundMode = ctx.node().attrString("round_mode", "up");
  if (roundMode != "up" && roundMode != "down" && roundMode != "nearest")
    return ctx.error("attribute 'round_mode' = '" + roundMode + "' is not up, down or nearest");
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, to, in.shape));
  const int64_t n = in.numel();
  if (n == 0) return Status::ok();
  if (in.type == to) {
    KILN_CUDA_CHECK(
        cudaMemcpyAsync(out.data, in.data, in.byteSize(), cudaMemcpyDeviceToDevice, ctx.stream()));
    return Status::ok();
  }
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, in.type, kElementwiseDeviceTypes));
  CastLaunch launch;
  launch.src = in.data;
  launch.from = in.type;
  launch.dst = out.data;
  launch.to = to;
  launch.n = n;
  return launchCast(launch, ctx.stream());
}

Status castKernelFn(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  if (!ctx.node().hasAttr("to")) return ctx.error("attribute 'to' is required");
  const int64_t to = ctx.node().attrInt("to", 0);
  if (to <= 0 || to > kLastDataTypeCode) {
    return ctx.unsupported("attribute 'to' = " + std::to_string(to) + " is not a known data type");
  }
  return castInto(ctx, ctx.storageType(static_cast<DataType>(to)));
}

// CastLike: Cast to the (storage) type of input 1, whose values are ignored.
Status castLikeKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  return castInto(ctx, ctx.input(1).type);
}

}  // namespace

void registerNaryAndCastGpuKernels(GpuKernelRegistry& registry) {
  using namespace ew;
  registry.add("Max", 1, 1000, maxKernel, kSupportsNumeric);
  registry.add("Min", 1, 1000, minKernel, kSupportsNumeric);
  registry.add("Sum", 1, 1000, sumKernel, kSupportsFloat);
  registry.add("Mean", 1, 1000, meanKernel, kSupportsFloat);
  registry.add("Where", 9, 1000, whereKernelFn, supportsWhere);
  registry.add("Cast", 6, 1000, castKernelFn, supportsCast);
  registry.add("CastLike", 15, 1000, castLikeKernel, supportsCastLike);
}

}  // namespace kiln::cuda
