// CUDA kernels for normalization: BatchNormalization (inference),
// InstanceNormalization, GroupNormalization, LayerNormalization and RMSNormalization here;
// LpNormalization, MeanVarianceNormalization and LRN in lp_mvn_lrn.cu (helpers of both:
// normalization_common.cuh).
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
#include <type_traits>
#include <vector>

#include "backends/cuda/ops/normalization_common.cuh"

namespace kiln::cuda {
namespace {

using namespace nm;

// ---- BatchNormalization --------------------------------------------------------

// y = x * a + (bias - mean * a), a = scale / sqrt(var + epsilon); parameter k of
// element i is (i / run) % params.
template <class T>
__global__ void batchNormApply(const T* x, T* y, const T* scale, const T* bias, const T* mean,
                               const T* var, int64_t numel, int64_t run, int64_t params,
                               Compute<T> epsilon) {
  using C = Compute<T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < numel;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = (i / run) % params;
    const C a = loadAs<C>(scale, k) / mathSqrt(loadAs<C>(var, k) + epsilon);
    const C b = loadAs<C>(bias, k) - loadAs<C>(mean, k) * a;
    y[i] = storeAs<T>(loadAs<C>(x, i) * a + b);
  }
}

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
  KILN_DISPATCH_FLOAT(x.type, ctx, {
    batchNormApply<T><<<gridFor(numel), kBlockSize, 0, ctx.stream()>>>(
        x.as<const T>(), y.as<T>(), ctx.input(1).as<const T>(), ctx.input(2).as<const T>(),
        ctx.input(3).as<const T>(), ctx.input(4).as<const T>(), numel, run, params,
        static_cast<Compute<T>>(epsilon));
    KILN_CUDA_CHECK_LAUNCH("batchNormApply");
  });
  return Status::ok();
}

// ---- InstanceNormalization / GroupNormalization ---------------------------------

// One row per (n, group) of perGroup * spatial contiguous elements. Channel c of a
// row uses parameter c (or the group's, with perGroupParams).
struct GroupNormArgs {
  int64_t rows = 0, rowLength = 0, spatial = 1, groups = 1, perGroup = 1;
  bool perGroupParams = false;
  double epsilon = 1e-5;
};

template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    groupNormRows(const T* x, T* y, const T* scale, const T* bias, GroupNormArgs args,
                  bool warpMode) {
  using C = Compute<T>;
  __shared__ C partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < args.rows; row += g.step) {
    const T* xr = x + row * args.rowLength;
    T* yr = y + row * args.rowLength;
    C mean, var;
    rowMoments(xr, args.rowLength, g, warpMode, partial, &mean, &var);
    const C invStd = C(1) / mathSqrt(var + C(args.epsilon));
    const int64_t group = row % args.groups;
    for (int64_t k = g.lane; k < args.rowLength; k += g.size) {
      const int64_t p = args.perGroupParams ? group : group * args.perGroup + k / args.spatial;
      const C a = loadAs<C>(scale, p) * invStd;
      yr[k] = storeAs<T>(loadAs<C>(xr, k) * a + (loadAs<C>(bias, p) - mean * a));
    }
  }
}

Status runGroupNorm(GpuKernelContext& ctx, const NcsShape& sh, int64_t groups,
                    bool perGroupParams) {
  const DeviceTensor& x = ctx.input(0);
  KILN_RETURN_IF_ERROR(requireSameType(ctx, x, ctx.input(1), "scale"));
  KILN_RETURN_IF_ERROR(requireSameType(ctx, x, ctx.input(2), "bias"));
  GroupNormArgs args;
  args.perGroup = sh.c / groups;
  args.rows = sh.n * groups;
  args.rowLength = args.perGroup * sh.s;
  args.spatial = sh.s;
  args.groups = groups;
  args.perGroupParams = perGroupParams;
  args.epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (x.numel() == 0) return Status::ok();
  const RowGeometry geo = rowGeometry(args.rows, args.rowLength);
  KILN_DISPATCH_FLOAT(x.type, ctx, {
    groupNormRows<T><<<geo.grid, geo.block, 0, ctx.stream()>>>(
        x.as<const T>(), y.as<T>(), ctx.input(1).as<const T>(), ctx.input(2).as<const T>(), args,
        geo.warpMode);
    KILN_CUDA_CHECK_LAUNCH("groupNormRows");
  });
  return Status::ok();
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

// Writes a statistic in the output's storage type.
template <class C>
__device__ __forceinline__ void storeStat(void* p, DataType type, int64_t i, C v) {
  switch (type) {
    case DataType::kFloat16:
      static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v));
      break;
    case DataType::kBFloat16:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v));
      break;
    case DataType::kFloat64:
      static_cast<double*>(p)[i] = static_cast<double>(v);
      break;
    default:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
  }
}

struct LayerNormArgs {
  int64_t rows = 0, cols = 0;
  ParamMap scaleMap, biasMap;
  double epsilon = 1e-5;
  void* meanOut = nullptr;  // optional statistics outputs, one per row
  void* invStdOut = nullptr;
  DataType statType = DataType::kFloat32;
};

template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    layerNormRows(const T* x, T* y, const T* scale, const T* bias, LayerNormArgs args,
                  bool warpMode) {
  using C = Compute<T>;
  __shared__ C partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < args.rows; row += g.step) {
    const T* xr = x + row * args.cols;
    T* yr = y + row * args.cols;
    C mean, var;
    rowMoments(xr, args.cols, g, warpMode, partial, &mean, &var);
    const C invStd = C(1) / mathSqrt(var + C(args.epsilon));
    for (int64_t k = g.lane; k < args.cols; k += g.size) {
      C v = (loadAs<C>(xr, k) - mean) * invStd * loadAs<C>(scale, paramOffset(args.scaleMap, k));
      if (bias) v += loadAs<C>(bias, paramOffset(args.biasMap, k));
      yr[k] = storeAs<T>(v);
    }
    if (g.lane == 0) {
      if (args.meanOut) storeStat(args.meanOut, args.statType, row, mean);
      if (args.invStdOut) storeStat(args.invStdOut, args.statType, row, invStd);
    }
  }
}

// Checks that a parameter broadcasts unidirectionally onto `target` (after dropping
// leading 1s beyond its rank) and maps its elements. The CPU's error message.
Status broadcastParam(const GpuKernelContext& ctx, const DeviceTensor& t, const char* name,
                      const Shape& target, const std::string& targetName, ParamMap* map) {
  auto broadcast = ops::paramBroadcastShape(name, t.shape, target, targetName);
  if (!broadcast.isOk()) return ctx.error(broadcast.status().message());
  const Shape& shape = *broadcast;
  map->direct = shapeNumel(shape) == shapeNumel(target);
  if (!map->direct) {
    if (target.size() > static_cast<size_t>(kMaxRank))
      return ctx.unsupported(std::string("broadcast input '") + name + "' of rank > 8");
    map->info = broadcastStrides(shape, target);
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
  LayerNormArgs args;
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
  const RowGeometry geo = rowGeometry(args.rows, args.cols);
  KILN_DISPATCH_FLOAT(x.type, ctx, {
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
    const T* bias = hasBias ? ctx.input(2).as<const T>() : nullptr;
    layerNormRows<T><<<geo.grid, geo.block, 0, ctx.stream()>>>(
        x.as<const T>(), y.as<T>(), ctx.input(1).as<const T>(), bias, args, geo.warpMode);
    KILN_CUDA_CHECK_LAUNCH("layerNormRows");
  });
  return Status::ok();
}

// ---- RMSNormalization ----------------------------------------------------------

// Y = round_T(X / sqrt(mean(X^2) + epsilon)) * scale, scale broadcast onto X (`direct`:
// one value per element of a row; else through the full index).
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    rmsNormRows(const T* x, const T* scale, T* y, int64_t rows, int64_t cols, ParamMap scaleMap,
                double epsilon, bool warpMode) {
  using C = Compute<T>;
  __shared__ C partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < rows; row += g.step) {
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    C sum = C(0);
    for (int64_t k = g.lane; k < cols; k += g.size) {
      const C v = loadAs<C>(xr, k);
      sum += v * v;
    }
    sum = groupSum(sum, warpMode, partial);
    const C meanSquare = cols > 0 ? sum / C(cols) : C(0);
    const C inv = C(1) / mathSqrt(meanSquare + C(epsilon));
    for (int64_t k = g.lane; k < cols; k += g.size) {
      // The spec casts the normalized value back to X's type before scaling.
      const T rounded = storeAs<T>(loadAs<C>(xr, k) * inv);
      const C normalized = loadAs<C>(&rounded, 0);
      const int64_t s = scaleMap.direct ? k : stridedOffset(scaleMap.info, row * cols + k);
      yr[k] = storeAs<T>(normalized * loadAs<C>(scale, s));
    }
  }
}

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
  ParamMap scaleMap;
  Shape stripped = scale.shape;
  while (!stripped.empty() && stripped.front() == 1) stripped.erase(stripped.begin());
  const Shape normShape(x.shape.begin() + axis, x.shape.end());
  Shape normStripped = normShape;
  while (!normStripped.empty() && normStripped.front() == 1)
    normStripped.erase(normStripped.begin());
  scaleMap.direct = stripped == normStripped;
  if (!scaleMap.direct) {
    if (rank > kMaxRank) return ctx.unsupported("broadcast input 'scale' with X of rank > 8");
    scaleMap.info = broadcastStrides(scale.shape, x.shape);
  }
  const double epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, scale.type, x.shape));
  if (x.numel() == 0) return Status::ok();
  const RowGeometry geo = rowGeometry(rows, cols);
  KILN_DISPATCH_FLOAT(x.type, ctx, {
    rmsNormRows<T><<<geo.grid, geo.block, 0, ctx.stream()>>>(x.as<const T>(), scale.as<const T>(),
                                                             y.as<T>(), rows, cols, scaleMap,
                                                             epsilon, geo.warpMode);
    KILN_CUDA_CHECK_LAUNCH("rmsNormRows");
  });
  return Status::ok();
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
