// LpNormalization, MeanVarianceNormalization and LRN on the CUDA backend, with the CPU
// kernels' opset ranges, attributes, defaults and error messages; the family's contract is
// normalization.cpp's header comment. This is the host half (checks, shapes, outputs,
// registration); the kernels are lp_mvn_lrn_impl.cu's (contract: lp_mvn_lrn_impl.h).
#include <string>
#include <vector>

#include "backends/cuda/ops/lp_mvn_lrn_impl.h"
#include "backends/cuda/ops/normalization_common.h"
#include "ops/axis_params.h"
#include "ops/normalization_params.h"

namespace kiln::cuda {
namespace {

using namespace nm;

// ---- LpNormalization -----------------------------------------------------------

std::string supportsLpNorm(const Node& node, const std::vector<DataType>& types) {
  const int64_t p = node.attrInt("p", 2);
  if (p != 1 && p != 2) return "attribute 'p' must be 1 or 2";
  return supportsSameFloatType(node, types);
}

Status lpNormKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  auto axisOr = ops::axisAttribute(ctx.node(), -1, rank, rank - 1);
  if (!axisOr.isOk()) return ctx.error(axisOr.status().message());
  const int64_t p = ctx.node().attrInt("p", 2);
  if (p != 1 && p != 2)
    return ctx.unsupported("attribute 'p' must be 1 or 2, got " + std::to_string(p));
  const ops::AxisSplit split = ops::splitAround(x.shape, *axisOr);
  const int64_t outer = split.outer, inner = split.inner, n = split.n;
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (x.numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireFloatType(ctx, x.type));
  LpNormLaunch launch;
  launch.x = x.data;
  launch.y = y.data;
  launch.type = x.type;
  launch.outer = outer;
  launch.n = n;
  launch.inner = inner;
  launch.p = static_cast<int>(p);
  return launchLpNorm(launch, ctx.stream());
}

// ---- MeanVarianceNormalization -------------------------------------------------

Status mvnKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& x = ctx.input(0);
  const int rank = x.rank();
  auto params = ops::mvnParams(ctx.node(), ctx.opset(), rank);
  if (!params.isOk()) return ctx.error(params.status().message());
  const std::vector<bool>& reduced = params->reduced;
  const bool normalizeVariance = params->normalizeVariance;
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (x.numel() == 0) return Status::ok();
  // Kept and reduced axes as runs (size-1 axes dropped) with the input's strides.
  StridedIndex kept, red;
  int64_t rows = 1, count = 1, stride = 1;
  bool lastReduced = false;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t size = x.shape[d];
    const bool r = reduced[d];
    (r ? count : rows) *= size;
    if (size != 1) {
      StridedIndex& info = r ? red : kept;
      if (info.rank > 0 && lastReduced == r && info.strides[0] * info.dims[0] == stride) {
        info.dims[0] *= size;  // extends the run just added (same kind, adjacent)
      } else {
        if (info.rank == kStridedMaxRank)
          return ctx.unsupported("too many alternating reduced axes");
        for (int i = info.rank; i > 0; --i) {  // runs are prepended: outermost first
          info.dims[i] = info.dims[i - 1];
          info.strides[i] = info.strides[i - 1];
        }
        info.dims[0] = size;
        info.strides[0] = stride;
        ++info.rank;
      }
      lastReduced = r;
    }
    stride *= size;
  }
  KILN_RETURN_IF_ERROR(requireFloatType(ctx, x.type));
  MvnLaunch launch;
  launch.x = x.data;
  launch.y = y.data;
  launch.type = x.type;
  launch.kept = kept;
  launch.reduced = red;
  launch.rows = rows;
  launch.count = count;
  launch.normalizeVariance = normalizeVariance;
  return launchMvn(launch, ctx.stream());
}

// ---- LRN -----------------------------------------------------------------------

Status lrnKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& x = ctx.input(0);
  if (x.rank() < 2)
    return ctx.error("input 'X' must have rank >= 2, got " + shapeToString(x.shape));
  LrnLaunch launch;
  LrnArgs& args = launch.args;
  args.size = ctx.node().attrInt("size", 0);
  if (args.size <= 0)
    return ctx.error("attribute 'size' must be positive, got " + std::to_string(args.size));
  args.alpha = ctx.node().attrFloat("alpha", 1e-4f);
  args.beta = ctx.node().attrFloat("beta", 0.75f);
  args.bias = ctx.node().attrFloat("bias", 1.0f);
  args.channels = x.shape[1];
  for (int d = 2; d < x.rank(); ++d) args.spatial *= x.shape[d];
  args.numel = x.numel();
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (args.numel == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireFloatType(ctx, x.type));
  launch.x = x.data;
  launch.y = y.data;
  launch.type = x.type;
  return launchLrn(launch, ctx.stream());
}

}  // namespace

void registerLpMvnLrnGpuKernels(GpuKernelRegistry& registry) {
  registry.add("LpNormalization", 1, 1000, &lpNormKernel, supportsLpNorm);
  registry.add("MeanVarianceNormalization", 1, 1000, &mvnKernel, supportsSameFloatType);
  registry.add("LRN", 1, 1000, &lrnKernel, supportsSameFloatType);
}

}  // namespace kiln::cuda
