// Reductions along axes on the CUDA backend, the host half: the Reduce* family and
// Softmax / LogSoftmax / Hardmax here (kernels: reduce_impl.cu, contract: reduce_impl.h);
// ArgMax / ArgMin and CumSum in arg_cumsum.cpp (shared host checks: reduce_common.h).
//
// Contract: the same opset ranges, attributes, defaults and error messages as the
// CPU kernels (cpu/ops/reduce.cpp, softmax.cpp, scan_ops.cpp). Float types
// accumulate in float (double for double), int32/int64 in int64 with wrap-around
// like the CPU. A reduction collapses the input into alternating runs of kept and
// reduced axes; one reduced run is read as [outer, n, inner], several reduced runs go
// through a general kernel with one thread per output element (reduce_impl.cu).
// ReduceLogSumExp runs twice and keeps the largest finite value per output in the
// context's workspace between the passes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/reduce_common.h"
#include "backends/cuda/ops/reduce_impl.h"
#include "ops/axis_params.h"
#include "ops/reduce_params.h"

namespace kiln::cuda {
namespace {

using namespace rd;

// ---- Reduce* ---------------------------------------------------------------------

// The input as runs of kept/reduced axes (size-1 axes dropped), as the CPU plans it.
struct ReducePlan {
  Shape outShape;  // keepdims applied
  std::vector<int64_t> dims;
  std::vector<bool> runReduced;
  int64_t outNumel = 1;
  int64_t count = 1;
};

ReducePlan makePlan(const Shape& in, const std::vector<bool>& reduced, bool keepDims) {
  ReducePlan plan;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) {
      plan.count *= in[d];
      if (keepDims) plan.outShape.push_back(1);
    } else {
      plan.outShape.push_back(in[d]);
      plan.outNumel *= in[d];
    }
    if (in[d] == 1) continue;
    if (!plan.runReduced.empty() && plan.runReduced.back() == reduced[d]) {
      plan.dims.back() *= in[d];
    } else {
      plan.dims.push_back(in[d]);
      plan.runReduced.push_back(reduced[d]);
    }
  }
  return plan;
}

// The axes to reduce (ops/reduce_params.h); input 1 copied to the host when given.
Status resolveReducedAxes(GpuKernelContext& ctx, bool axesFromInput, int rank,
                          std::vector<bool>* reduced) {
  Tensor axesInput;
  const bool given = axesFromInput && ctx.hasInput(1);
  if (given) {
    KILN_ASSIGN_OR_RETURN(axesInput, ctx.hostInput(1));
  }
  auto axes = ops::reducedAxes(ctx.node(), axesFromInput, rank, given ? &axesInput : nullptr);
  if (!axes.isOk()) return ctx.error(axes.status().message());
  *reduced = std::move(axes.value());
  return Status::ok();
}

// Where each pass of the reduction reads: two or more reduced runs as the kept and the
// reduced axes (the general kernel), otherwise [outer, n, inner].
Status describeReduceGeometry(GpuKernelContext& ctx, const ReducePlan& plan, ReduceLaunch* args) {
  int reducedRuns = 0;
  size_t firstReduced = 0;
  for (size_t r = 0; r < plan.dims.size(); ++r) {
    if (!plan.runReduced[r]) continue;
    if (reducedRuns++ == 0) firstReduced = r;
  }
  if (reducedRuns >= 2) {
    args->general = true;
    int64_t keptStride = 1;
    std::vector<int64_t> strides(plan.dims.size());
    for (int r = static_cast<int>(plan.dims.size()) - 1; r >= 0; --r) {
      strides[r] = keptStride;
      keptStride *= plan.dims[r];
    }
    for (size_t r = 0; r < plan.dims.size(); ++r) {
      ReduceAxes& info = plan.runReduced[r] ? args->reduced : args->kept;
      if (info.rank == kReduceMaxRank) return ctx.unsupported("too many alternating reduced axes");
      info.dims[info.rank] = plan.dims[r];
      info.strides[info.rank] = strides[r];
      ++info.rank;
    }
    return Status::ok();
  }
  // [outer, n, inner]; without a reduced run (noop or size-1 axes) n is 1.
  int64_t outer = 1, n = 1, inner = 1;
  for (size_t r = 0; r < plan.dims.size(); ++r) {
    if (reducedRuns == 0 || r > firstReduced)
      inner *= plan.dims[r];
    else if (r < firstReduced)
      outer *= plan.dims[r];
    else
      n = plan.dims[r];
  }
  args->outer = outer;
  args->n = n;
  args->inner = inner;
  return Status::ok();
}

const char* reduceName(ReduceOp op) {
  static const char* const kNames[] = {
      "ReduceSum", "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",
      "ReduceL1",  "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  return kNames[static_cast<int>(op)];
}

// Ops that also run on int32/int64 data.
bool reduceAcceptsIntegers(const std::string& opType) {
  return opType == "ReduceSum" || opType == "ReduceMean" || opType == "ReduceMax" ||
         opType == "ReduceMin" || opType == "ReduceProd";
}

Status runReduce(GpuKernelContext& ctx, ReduceOp op) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& input = ctx.input(0);
  // ReduceSum took axes as an input from opset 13, the others from opset 18.
  const bool axesFromInput = ctx.opset() >= (op == ReduceOp::kSum ? 13 : 18);
  std::vector<bool> reduced;
  KILN_RETURN_IF_ERROR(resolveReducedAxes(ctx, axesFromInput, input.rank(), &reduced));
  const bool keepDims = ctx.node().attrInt("keepdims", 1) != 0;
  const ReducePlan plan = makePlan(input.shape, reduced, keepDims);
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, input.type, plan.outShape));
  if (plan.outNumel == 0) return Status::ok();
  const bool integers = reduceAcceptsIntegers(reduceName(op));
  KILN_RETURN_IF_ERROR(requireDeviceType(
      ctx, input.type, device_types::kFloats | (integers ? device_types::kIndexIntegers : 0u)));
  ReduceLaunch args;
  args.x = input.data;
  args.y = out.data;
  args.type = input.type;
  args.op = op;
  args.count = plan.count;
  args.outputs = plan.outNumel;
  if (op == ReduceOp::kLogSumExp) {
    size_t bytes = 0;
    KILN_RETURN_IF_ERROR(reduceScratchBytes(input.type, plan.outNumel, &bytes));
    KILN_ASSIGN_OR_RETURN(args.scratch, ctx.workspace(bytes));
  }
  KILN_RETURN_IF_ERROR(describeReduceGeometry(ctx, plan, &args));
  return launchReduce(args, ctx.stream());
}

template <ReduceOp kOp>
Status reduceKernel(GpuKernelContext& ctx) {
  return runReduce(ctx, kOp);
}

std::string supportsReduce(const Node& node, const std::vector<DataType>& types) {
  const DataType x = types.empty() ? DataType::kUndefined : types[0];
  const bool integers = reduceAcceptsIntegers(node.opType);
  if (x != DataType::kUndefined && !isFloatData(x) && !(integers && isIndexType(x)))
    return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(x);
  if (types.size() > 1 && types[1] != DataType::kUndefined && !isIndexType(types[1]))
    return std::string("input 'axes' of type ") + dataTypeName(types[1]);
  return "";
}

// ---- Softmax / LogSoftmax / Hardmax -------------------------------------------------

template <SoftmaxKind kKind>
Status softmaxKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& input = ctx.input(0);
  const int64_t rank = input.rank();
  const bool coerce2d = ctx.opset() < 13;
  // Opset < 13 allows axis == rank (the 2-D form's column count is then 1).
  auto axisOr = ops::axisAttribute(ctx.node(), coerce2d ? 1 : -1, rank,
                                   std::max<int64_t>(coerce2d ? rank : rank - 1, 0));
  if (!axisOr.isOk()) return ctx.error(axisOr.status().message());
  const Shape& shape = input.shape;
  const ops::AxisSplit split = ops::splitAround(shape, *axisOr, coerce2d);
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, input.type, shape));
  if (input.numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, input.type, device_types::kFloats));
  SoftmaxLaunch args;
  args.x = input.data;
  args.y = out.data;
  args.type = input.type;
  args.kind = kKind;
  args.outer = split.outer;
  args.n = split.n;
  args.inner = split.inner;
  return launchSoftmax(args, ctx.stream());
}

std::string supportsFloatData(const Node& node, const std::vector<DataType>& types) {
  for (DataType t : types) {
    if (t != DataType::kUndefined && !isFloatData(t))
      return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(t);
  }
  return "";
}

}  // namespace

void registerReduceGpuKernels(GpuKernelRegistry& registry) {
  // Each reduce kernel picks the axes attribute or input by opset itself.
  registry.add("ReduceSum", 1, 1000, &reduceKernel<ReduceOp::kSum>, supportsReduce);
  registry.add("ReduceMean", 1, 1000, &reduceKernel<ReduceOp::kMean>, supportsReduce);
  registry.add("ReduceMax", 1, 1000, &reduceKernel<ReduceOp::kMax>, supportsReduce);
  registry.add("ReduceMin", 1, 1000, &reduceKernel<ReduceOp::kMin>, supportsReduce);
  registry.add("ReduceProd", 1, 1000, &reduceKernel<ReduceOp::kProd>, supportsReduce);
  registry.add("ReduceL1", 1, 1000, &reduceKernel<ReduceOp::kL1>, supportsReduce);
  registry.add("ReduceL2", 1, 1000, &reduceKernel<ReduceOp::kL2>, supportsReduce);
  registry.add("ReduceLogSum", 1, 1000, &reduceKernel<ReduceOp::kLogSum>, supportsReduce);
  registry.add("ReduceLogSumExp", 1, 1000, &reduceKernel<ReduceOp::kLogSumExp>, supportsReduce);
  registry.add("ReduceSumSquare", 1, 1000, &reduceKernel<ReduceOp::kSumSquare>, supportsReduce);
  // Each softmax kernel branches on opset 13 (2-D coercion before, single axis after).
  registry.add("Softmax", 1, 1000, &softmaxKernel<SoftmaxKind::kSoftmax>, supportsFloatData);
  registry.add("LogSoftmax", 1, 1000, &softmaxKernel<SoftmaxKind::kLogSoftmax>, supportsFloatData);
  registry.add("Hardmax", 1, 1000, &softmaxKernel<SoftmaxKind::kHardmax>, supportsFloatData);
  registerArgCumSumGpuKernels(registry);
}

}  // namespace kiln::cuda
