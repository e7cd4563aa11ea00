// ArgMax / ArgMin and CumSum on the CUDA backend, the host half (kernels:
// arg_cumsum_impl.cu, contract: arg_cumsum_impl.h), with the CPU kernels' opset ranges,
// attributes, defaults and error messages (cpu/ops/reduce.cpp, scan_ops.cpp); the family's
// contract is reduce.cpp's header comment.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/arg_cumsum_impl.h"
#include "backends/cuda/ops/reduce_common.h"
#include "ops/axis_params.h"

namespace kiln::cuda {
namespace {

using namespace rd;

// ---- ArgMax / ArgMin ---------------------------------------------------------------

template <bool kMax>
Status argKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& input = ctx.input(0);
  const int64_t rank = input.rank();
  auto axisOr = ops::axisAttribute(ctx.node(), 0, rank, std::max<int64_t>(rank - 1, 0));
  if (!axisOr.isOk()) return ctx.error(axisOr.status().message());
  const int64_t axis = *axisOr;
  const bool keepDims = ctx.node().attrInt("keepdims", 1) != 0;
  const bool last = ctx.node().attrInt("select_last_index", 0) != 0;
  const Shape& shape = input.shape;
  const ops::AxisSplit split = ops::splitAround(shape, axis);
  const int64_t outer = split.outer, n = split.n, inner = split.inner;
  const Shape outShape = ops::shapeWithoutAxis(shape, axis, keepDims);
  if (n == 0 && outer * inner > 0) return ctx.error("cannot take the arg of an empty axis");
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, DataType::kInt64, outShape));
  if (outer * inner == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, input.type, kArgCumSumDeviceTypes));
  ArgReduceLaunch args;
  args.x = input.data;
  args.y = out.as<int64_t>();
  args.type = input.type;
  args.outer = outer;
  args.n = n;
  args.inner = inner;
  args.isMax = kMax;
  args.last = last;
  return launchArgReduce(args, ctx.stream());
}

std::string supportsFloatOrIndex(const Node& node, const std::vector<DataType>& types) {
  for (DataType t : types) {
    if (t != DataType::kUndefined && !isFloatData(t) && !isIndexType(t))
      return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(t);
  }
  return "";
}

// ---- CumSum -------------------------------------------------------------------------

Status cumSumKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& input = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(Tensor axisTensor, ctx.hostInput(1));
  if (axisTensor.type() != DataType::kInt64 && axisTensor.type() != DataType::kInt32) {
    return ctx.error(std::string("input 'axis' must be int32 or int64, got ") +
                     dataTypeName(axisTensor.type()));
  }
  if (axisTensor.numel() != 1 || axisTensor.rank() > 1) {
    return ctx.error("input 'axis' must hold one value, got shape " +
                     shapeToString(axisTensor.shape()));
  }
  const int64_t rank = input.rank();
  const int64_t axisValue = axisTensor.valueAsInt64(0);
  if (axisValue < -rank || axisValue >= rank) {
    return ctx.error("input 'axis' " + std::to_string(axisValue) + " is out of range for rank " +
                     std::to_string(rank));
  }
  const int64_t axis = axisValue < 0 ? axisValue + rank : axisValue;
  const bool exclusive = ctx.node().attrInt("exclusive", 0) != 0;
  const bool reverse = ctx.node().attrInt("reverse", 0) != 0;
  int64_t outer = 1, inner = 1;
  const int64_t n = input.shape[axis];
  for (int64_t d = 0; d < axis; ++d) outer *= input.shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= input.shape[d];
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, input.type, input.shape));
  if (input.numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, input.type, kArgCumSumDeviceTypes));
  CumSumLaunch args;
  args.x = input.data;
  args.y = out.data;
  args.type = input.type;
  args.outer = outer;
  args.n = n;
  args.inner = inner;
  args.exclusive = exclusive;
  args.reverse = reverse;
  return launchCumSum(args, ctx.stream());
}

}  // namespace

void registerArgCumSumGpuKernels(GpuKernelRegistry& registry) {
  registry.add("ArgMax", 1, 1000, &argKernel<true>, supportsFloatOrIndex);
  registry.add("ArgMin", 1, 1000, &argKernel<false>, supportsFloatOrIndex);
  registry.add("CumSum", 11, 1000, &cumSumKernel, supportsFloatOrIndex);
}

}  // namespace kiln::cuda
