// CUDA kernels for normalization: BatchNormalization (inference),
// InstanceNormalization, GroupNormalization, LayerNormalization and RMSNormalization here;
// LpNormalization, MeanVarianceNormalization and LRN in lp_mvn_lrn.cpp (helpers of both:
// normalization_common.h on the host, normalization_common.cuh on the device). This is the
// host half (checks, shapes, outputs, registration); the kernels are normalization_impl.cu's
// (contract: normalization_impl.h).
//
// Contract: the same opset ranges, attributes, defaults and error messages as the
// CPU kernels (cpu/ops/normalization.cpp, rms_norm.cpp, axis_normalization.cpp).
// Statistics are computed in float (double for double) with two passes (mean, then
// the mean squared deviation). Row-wise norms give each normalized row a warp (rows
// up to kWarpRowLimit elements) or a whole block. Parameters (scale, bias, mean,
// var) must have X's storage type; the support predicates send other combinations,
// and BatchNormalization in training mode, to the host fallback.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/layer_norm_packed.h"
#include "backends/cuda/ops/normalization_common.h"
#include "backends/cuda/ops/normalization_impl.h"
#include "ops/normalization_params.h"

namespace kiln::cuda {
namespace {

using namespace nm;

// ---- BatchNormalization --------------------------------------------------------

bool batchNormTraining(const Node& node) {
  if (node.opset >= 14) return node.attrInt("training_mode", 0) != 0;
  for (size_t i = 1; i < node.outputs.size() && i < 5; ++i) {
    if (!node.outputs[i].empty()) return true;
  }
  return false;
}

std::string supportsBatchNorm(const Node& node, const std::vector<DataType>& types) {
  if (batchNormTraining(node)) return "training mode runs on the host";
  return supportsSameFloatType(node, types);
}

Status batchNormKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 5));
  const DeviceTensor& x = ctx.input(0);
  NcsShape sh;
  KILN_RETURN_IF_ERROR(splitNcs(ctx, x, &sh));
  const double epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  // Opset 14 made training an attribute; before, asking for the statistics outputs meant it.
  const bool training = ctx.opset() >= 14 ? ctx.node().attrInt("training_mode", 0) != 0
                                          : ctx.wantsOutput(1) || ctx.wantsOutput(2) ||
                                                ctx.wantsOutput(3) || ctx.wantsOutput(4);
  if (training) return ctx.unsupported("training mode");
  // Opsets < 9 had spatial = 0: one parameter per (channel, spatial position).
  const bool perElement = ctx.opset() < 9 && ctx.node().attrInt("spatial", 1) == 0;
  const int64_t params = perElement ? sh.c * sh.s : sh.c;
  const int64_t run = perElement ? 1 : sh.s;
  static const char* const kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (int i = 1; i < 5; ++i) {
    KILN_RETURN_IF_ERROR(requireNumel(ctx, ctx.input(i), kNames[i], params));
    KILN_RETURN_IF_ERROR(requireSameType(ctx, x, ctx.input(i), kNames[i]));
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  const int64_t numel = x.numel();
  if (numel == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireFloatType(ctx, x.type));
  BatchNormLaunch launch;
  launch.x = x.data;
  launch.y = y.data;
  launch.scale = ctx.input(1).data;
  launch.bias = ctx.input(2).data;
  launch.mean = ctx.input(3).data;
  launch.var = ctx.input(4).data;
  launch.type = x.type;
  launch.numel = numel;
  launch.run = run;
  launch.params = params;
  launch.epsilon = epsilon;
  return launchBatchNorm(launch, ctx.stream());
}

// ---- InstanceNormalization / GroupNormalization ---------------------------------

Status runGroupNorm(GpuKernelContext& ctx, const NcsShape& sh, int64_t groups,
                    bool perGroupParams) {
  const DeviceTensor& x = ctx.input(0);
  KILN_RETURN_IF_ERROR(requireSameType(ctx, x, ctx.input(1), "scale"));
  KILN_RETURN_IF_ERROR(requireSameType(ctx, x, ctx.input(2), "bias"));
  GroupNormLaunch launch;
  GroupNormArgs& args = launch.args;
  args.perGroup = sh.c / groups;
  args.rows = sh.n * groups;
  args.rowLength = args.perGroup * sh.s;
  args.spatial = sh.s;
  args.groups = groups;
  args.perGroupParams = perGroupParams;
  args.epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (x.numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireFloatType(ctx, x.type));
  launch.x = x.data;
  launch.y = y.data;
  launch.scale = ctx.input(1).data;
  launch.bias = ctx.input(2).data;
  launch.type = x.type;
  if (const size_t bytes = groupNormWorkspaceBytes(args, x.type); bytes > 0) {
    KILN_ASSIGN_OR_RETURN(launch.workspace, ctx.workspace(bytes));
  }
  return launchGroupNorm(launch, ctx.stream());
}

Status instanceNormKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  NcsShape sh;
  KILN_RETURN_IF_ERROR(splitNcs(ctx, ctx.input(0), &sh));
  KILN_RETURN_IF_ERROR(requireNumel(ctx, ctx.input(1), "scale", sh.c));
  KILN_RETURN_IF_ERROR(requireNumel(ctx, ctx.input(2), "B", sh.c));
  if (sh.c == 0) {  // no channels: an empty output
    auto y = ctx.allocateOutput(0, ctx.input(0).type, ctx.input(0).shape);
    return y.isOk() ? Status::ok() : y.status();
  }
  return runGroupNorm(ctx, sh, sh.c, false);  // one group per channel
}

Status groupNormKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  NcsShape sh;
  KILN_RETURN_IF_ERROR(splitNcs(ctx, ctx.input(0), &sh));
  auto params = ops::groupNormParams(ctx.node(), ctx.opset(), sh.c, ctx.input(1).numel(),
                                     ctx.input(2).numel());
  if (!params.isOk()) return ctx.error(params.status().message());
  return runGroupNorm(ctx, sh, params->groups, params->perGroupParams);
}

// ---- LayerNormalization --------------------------------------------------------

// Checks that a parameter broadcasts unidirectionally onto `target` (after dropping
// leading 1s beyond its rank) and maps its elements. The CPU's error message.
Status broadcastParam(const GpuKernelContext& ctx, const DeviceTensor& t, const char* name,
                      const Shape& target, const std::string& targetName, ParamBroadcast* map) {
  auto broadcast = ops::paramBroadcastShape(name, t.shape, target, targetName);
  if (!broadcast.isOk()) return ctx.error(broadcast.status().message());
  const Shape& shape = *broadcast;
  map->direct = shapeNumel(shape) == shapeNumel(target);
  if (!map->direct) {
    if (target.size() > static_cast<size_t>(kStridedMaxRank))
      return ctx.unsupported(std::string("broadcast input '") + name + "' of rank > 8");
    map->index = broadcastIndex(shape, target);
  }
  return Status::ok();
}

Status layerNormKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& x = ctx.input(0);
  auto geometry = ops::layerNormGeometry(ctx.node(), x.shape);
  if (!geometry.isOk()) return ctx.error(geometry.status().message());
  const Shape& normShape = geometry->normShape;
  const Shape& statShape = geometry->statShape;
  LayerNormLaunch args;
  args.cols = geometry->cols;
  args.rows = geometry->rows;
  args.epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  const std::string target = "normalized shape";
  KILN_RETURN_IF_ERROR(
      broadcastParam(ctx, ctx.input(1), "Scale", normShape, target, &args.scaleMap));
  KILN_RETURN_IF_ERROR(requireSameType(ctx, x, ctx.input(1), "Scale"));
  const bool hasBias = ctx.hasInput(2);
  if (hasBias) {
    KILN_RETURN_IF_ERROR(broadcastParam(ctx, ctx.input(2), "B", normShape, target, &args.biasMap));
    KILN_RETURN_IF_ERROR(requireSameType(ctx, x, ctx.input(2), "B"));
  }
  // Mean and InvStdDev are float32 (stored as the engine's float type) unless X is double.
  args.statType =
      x.type == DataType::kFloat64 ? DataType::kFloat64 : ctx.storageType(DataType::kFloat32);
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (ctx.wantsOutput(1)) {
    KILN_ASSIGN_OR_RETURN(DeviceTensor mean, ctx.allocateOutput(1, args.statType, statShape));
    args.meanOut = mean.data;
  }
  if (ctx.wantsOutput(2)) {
    KILN_ASSIGN_OR_RETURN(DeviceTensor invStd, ctx.allocateOutput(2, args.statType, statShape));
    args.invStdOut = invStd.data;
  }
  if (args.rows == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireFloatType(ctx, x.type));
  const PackedLayerNorm packed{args.rows,
                               args.cols,
                               args.scaleMap.direct,
                               !hasBias || args.biasMap.direct,
                               args.meanOut != nullptr || args.invStdOut != nullptr,
                               static_cast<float>(args.epsilon)};
  if (launchLayerNormPacked(x, y, ctx.input(1), hasBias ? &ctx.input(2) : nullptr, packed,
                            ctx.stream())) {
    KILN_CUDA_CHECK_LAUNCH("layerNormPacked");
    return Status::ok();
  }
  args.x = x.data;
  args.y = y.data;
  args.scale = ctx.input(1).data;
  args.bias = hasBias ? ctx.input(2).data : nullptr;
  args.type = x.type;
  return launchLayerNormRows(args, ctx.stream());
}

// ---- RMSNormalization ----------------------------------------------------------

Status rmsNormKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& scale = ctx.input(1);
  const int64_t rank = x.rank();
  if (rank < 1) return ctx.error("input 'X' must have rank >= 1");
  const int64_t axisAttr = ctx.node().attrInt("axis", -1);
  if (axisAttr < -rank || axisAttr >= rank) {
    return ctx.error("attribute 'axis': axis " + std::to_string(axisAttr) +
                     " is out of range for rank " + std::to_string(rank));
  }
  const int64_t axis = axisAttr < 0 ? axisAttr + rank : axisAttr;
  bool broadcasts = scale.rank() <= rank;
  for (int i = 1; broadcasts && i <= scale.rank(); ++i) {
    const int64_t s = scale.shape[scale.rank() - i], d = x.shape[rank - i];
    broadcasts = s == d || s == 1;
  }
  if (!broadcasts) {
    return ctx.error("input 'scale' " + shapeToString(scale.shape) + " does not broadcast to X " +
                     shapeToString(x.shape));
  }
  KILN_RETURN_IF_ERROR(requireSameType(ctx, x, scale, "scale"));
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? rows : cols) *= x.shape[d];
  // Direct when scale holds exactly X's normalized axes (leading 1s aside).
  ParamBroadcast scaleMap;
  Shape stripped = scale.shape;
  while (!stripped.empty() && stripped.front() == 1) stripped.erase(stripped.begin());
  const Shape normShape(x.shape.begin() + axis, x.shape.end());
  Shape normStripped = normShape;
  while (!normStripped.empty() && normStripped.front() == 1)
    normStripped.erase(normStripped.begin());
  scaleMap.direct = stripped == normStripped;
  if (!scaleMap.direct) {
    if (rank > kStridedMaxRank)
      return ctx.unsupported("broadcast input 'scale' with X of rank > 8");
    scaleMap.index = broadcastIndex(scale.shape, x.shape);
  }
  const double epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, scale.type, x.shape));
  if (x.numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireFloatType(ctx, x.type));
  RmsNormLaunch launch;
  launch.x = x.data;
  launch.scale = scale.data;
  launch.y = y.data;
  launch.type = x.type;
  launch.rows = rows;
  launch.cols = cols;
  launch.scaleMap = scaleMap;
  launch.epsilon = epsilon;
  return launchRmsNorm(launch, ctx.stream());
}

}  // namespace

void registerNormalizationGpuKernels(GpuKernelRegistry& registry) {
  registry.add("BatchNormalization", 6, 1000, &batchNormKernel, supportsBatchNorm);
  registry.add("InstanceNormalization", 6, 1000, &instanceNormKernel, supportsSameFloatType);
  registry.add("GroupNormalization", 18, 1000, &groupNormKernel, supportsSameFloatType);
  registry.add("LayerNormalization", 17, 1000, &layerNormKernel, supportsSameFloatType);
  registry.add("RMSNormalization", 23, 1000, &rmsNormKernel, supportsSameFloatType);
  registerLpMvnLrnGpuKernels(registry);
}

}  // namespace kiln::cuda
