// CUDA kernels for normalization: BatchNormalization (inference),
// InstanceNormalization, GroupNormalization, LayerNormalization, RMSNormalization,
// LpNormalization, MeanVarianceNormalization and LRN.
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

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/layer_norm_packed.h"
#include "backends/cuda/row_kernels.cuh"
#include "ops/axis_params.h"
#include "ops/normalization_params.h"

namespace kiln::cuda {
namespace {

// ---- Shared device helpers -----------------------------------------------------

// Compute type: double for double, float otherwise.
template <class T>
using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class C>
__device__ __forceinline__ C mathPow(C base, C exponent) {
  if constexpr (std::is_same_v<C, float>)
    return powf(base, exponent);
  else
    return pow(base, exponent);
}

// Sums `v` across the row group; every thread gets the result. `partial` holds one
// value per warp (block mode only).
template <class C>
__device__ __forceinline__ C groupSum(C v, bool warpMode, C* partial) {
#pragma unroll
  for (int mask = 16; mask >= 1; mask >>= 1) v += __shfl_xor_sync(kFullMask, v, mask);
  if (warpMode) return v;
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (threadIdx.x % 32 == 0) partial[warp] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < warps; ++w) v += partial[w];
  __syncthreads();  // `partial` is reused by the next call
  return v;
}

// Mean and population variance of a row of n elements `stride` apart, two-pass.
template <class C, class T>
__device__ __forceinline__ void rowMoments(const T* x, int64_t n, const RowGroup& g, bool warpMode,
                                           C* partial, C* mean, C* var) {
  C sum = C(0);
  for (int64_t k = g.lane; k < n; k += g.size) sum += loadAs<C>(x, k);
  sum = groupSum(sum, warpMode, partial);
  const C m = n > 0 ? sum / C(n) : C(0);
  C squares = C(0);
  for (int64_t k = g.lane; k < n; k += g.size) {
    const C d = loadAs<C>(x, k) - m;
    squares += d * d;
  }
  squares = groupSum(squares, warpMode, partial);
  *mean = m;
  *var = n > 0 ? squares / C(n) : C(0);
}

// ---- Host helpers ----------------------------------------------------------------

bool isFloatType(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 ||
         t == DataType::kFloat64;
}

Status requireInputs(const GpuKernelContext& ctx, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (!ctx.hasInput(i)) return ctx.error("required input " + std::to_string(i) + " is missing");
  }
  return Status::ok();
}

Status requireNumel(const GpuKernelContext& ctx, const DeviceTensor& t, const char* name,
                    int64_t n) {
  if (t.numel() == n) return Status::ok();
  return ctx.error(std::string("input '") + name + "' has shape " + shapeToString(t.shape) +
                   ", expected " + std::to_string(n) + " elements");
}

// Parameters are read in X's storage type (the predicates make sure of it).
Status requireSameType(const GpuKernelContext& ctx, const DeviceTensor& x, const DeviceTensor& t,
                       const char* name) {
  if (t.type == x.type) return Status::ok();
  return ctx.unsupported(std::string("input '") + name + "' of type " + dataTypeName(t.type) +
                         " with X of type " + dataTypeName(x.type));
}

// (N, C, spatial...) split into N, C and the spatial element count S.
struct NcsShape {
  int64_t n = 1, c = 1, s = 1;
};
Status splitNcs(const GpuKernelContext& ctx, const DeviceTensor& x, NcsShape* out) {
  if (x.rank() < 2)
    return ctx.error("input 'X' must have rank >= 2, got " + shapeToString(x.shape));
  out->n = x.shape[0];
  out->c = x.shape[1];
  out->s = 1;
  for (int d = 2; d < x.rank(); ++d) out->s *= x.shape[d];
  return Status::ok();
}

// "" when every present input is a float type and all share one type.
std::string supportsSameFloatType(const Node& node, const std::vector<DataType>& types) {
  DataType first = DataType::kUndefined;
  for (DataType t : types) {
    if (t == DataType::kUndefined) continue;
    if (!isFloatType(t))
      return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(t);
    if (first == DataType::kUndefined) first = t;
    if (t != first) return "inputs of mixed float types";
  }
  return "";
}

// Where a parameter element sits: `direct` when it is laid out like the elements it
// scales (offset = index), else broadcast through `info`.
struct ParamMap {
  ShapeInfo info;
  bool direct = true;
};
__device__ __forceinline__ int64_t paramOffset(const ParamMap& map, int64_t i) {
  return map.direct ? i : stridedOffset(map.info, i);
}

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
  const int64_t groups = ctx.node().attrInt("num_groups", 0);
  if (groups <= 0 || sh.c % groups != 0) {
    return ctx.error("attribute 'num_groups' (" + std::to_string(groups) +
                     ") must be positive and divide the channel count " + std::to_string(sh.c));
  }
  const int64_t count = ctx.input(1).numel();
  if (count != ctx.input(2).numel()) return ctx.error("inputs 'scale' and 'bias' differ in size");
  // Opset 18 has one scale/bias per group, opset 21 one per channel. Per-channel
  // parameters are accepted before 21 too when that size is unambiguous.
  bool perGroupParams = false;
  if (ctx.opset() < 21 && count == groups && count != sh.c) {
    perGroupParams = true;
  } else if (count != sh.c) {
    return ctx.error("input 'scale' has " + std::to_string(count) + " elements, expected " +
                     std::to_string(ctx.opset() < 21 ? groups : sh.c));
  }
  return runGroupNorm(ctx, sh, groups, perGroupParams);
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

// ---- LpNormalization -----------------------------------------------------------

template <class C>
__device__ __forceinline__ C lpTerm(C v, int p) {
  return p == 1 ? (v < C(0) ? -v : v) : v * v;
}

// A zero vector stays zero rather than becoming 0/0 = NaN.
template <class C>
__device__ __forceinline__ C lpScale(C accumulated, int p) {
  const C norm = p == 2 ? mathSqrt(accumulated) : accumulated;
  return norm == C(0) ? C(0) : C(1) / norm;
}

// [rows, n] contiguous rows.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    lpNormRowsKernel(const T* x, T* y, int64_t rows, int64_t n, int p, bool warpMode) {
  using C = Compute<T>;
  __shared__ C partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < rows; row += g.step) {
    const T* xr = x + row * n;
    T* yr = y + row * n;
    C sum = C(0);
    for (int64_t k = g.lane; k < n; k += g.size) sum += lpTerm(loadAs<C>(xr, k), p);
    const C scale = lpScale(groupSum(sum, warpMode, partial), p);
    for (int64_t k = g.lane; k < n; k += g.size) yr[k] = storeAs<T>(loadAs<C>(xr, k) * scale);
  }
}

// [outer, n, inner], inner > 1: one thread per column of n elements `inner` apart.
template <class T>
__global__ void lpNormColumnsKernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner,
                                    int p) {
  using C = Compute<T>;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < outer * inner;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = idx / inner, i = idx - o * inner;
    const int64_t base = o * n * inner + i;
    C sum = C(0);
    for (int64_t k = 0; k < n; ++k) sum += lpTerm(loadAs<C>(x, base + k * inner), p);
    const C scale = lpScale(sum, p);
    for (int64_t k = 0; k < n; ++k)
      y[base + k * inner] = storeAs<T>(loadAs<C>(x, base + k * inner) * scale);
  }
}

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
  KILN_DISPATCH_FLOAT(x.type, ctx, {
    if (inner == 1) {
      const RowGeometry geo = rowGeometry(outer, n);
      lpNormRowsKernel<T><<<geo.grid, geo.block, 0, ctx.stream()>>>(
          x.as<const T>(), y.as<T>(), outer, n, static_cast<int>(p), geo.warpMode);
      KILN_CUDA_CHECK_LAUNCH("lpNormRowsKernel");
    } else {
      lpNormColumnsKernel<T><<<gridFor(outer * inner), kBlockSize, 0, ctx.stream()>>>(
          x.as<const T>(), y.as<T>(), outer, n, inner, static_cast<int>(p));
      KILN_CUDA_CHECK_LAUNCH("lpNormColumnsKernel");
    }
  });
  return Status::ok();
}

// ---- MeanVarianceNormalization -------------------------------------------------

// One row group per statistics element: its `count` elements sit at
// stridedOffset(kept, row) + stridedOffset(reduced, r). Y = (X - mean) /
// (sqrt(variance) + 1e-9), or X - mean without normalizeVariance.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    mvnRows(const T* x, T* y, ShapeInfo kept, ShapeInfo reduced, int64_t rows, int64_t count,
            bool normalizeVariance, bool warpMode) {
  using C = Compute<T>;
  __shared__ C partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < rows; row += g.step) {
    const int64_t base = stridedOffset(kept, row);
    C sum = C(0);
    for (int64_t r = g.lane; r < count; r += g.size)
      sum += loadAs<C>(x, base + stridedOffset(reduced, r));
    const C mean = groupSum(sum, warpMode, partial) / C(count);
    C squares = C(0);
    for (int64_t r = g.lane; r < count; r += g.size) {
      const C d = loadAs<C>(x, base + stridedOffset(reduced, r)) - mean;
      squares += d * d;
    }
    squares = groupSum(squares, warpMode, partial);
    const C scale = normalizeVariance ? C(1) / (mathSqrt(squares / C(count)) + C(1e-9)) : C(1);
    for (int64_t r = g.lane; r < count; r += g.size) {
      const int64_t offset = base + stridedOffset(reduced, r);
      y[offset] = storeAs<T>((loadAs<C>(x, offset) - mean) * scale);
    }
  }
}

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
  ShapeInfo kept, red;
  int64_t rows = 1, count = 1, stride = 1;
  bool lastReduced = false;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t size = x.shape[d];
    const bool r = reduced[d];
    (r ? count : rows) *= size;
    if (size != 1) {
      ShapeInfo& info = r ? red : kept;
      if (info.rank > 0 && lastReduced == r && info.strides[0] * info.dims[0] == stride) {
        info.dims[0] *= size;  // extends the run just added (same kind, adjacent)
      } else {
        if (info.rank == kMaxRank) return ctx.unsupported("too many alternating reduced axes");
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
  const RowGeometry geo = rowGeometry(rows, count);
  KILN_DISPATCH_FLOAT(x.type, ctx, {
    mvnRows<T><<<geo.grid, geo.block, 0, ctx.stream()>>>(
        x.as<const T>(), y.as<T>(), kept, red, rows, count, normalizeVariance, geo.warpMode);
    KILN_CUDA_CHECK_LAUNCH("mvnRows");
  });
  return Status::ok();
}

// ---- LRN -----------------------------------------------------------------------

// y = x / (bias + alpha / size * sum of x^2 over channels [c - lo, c + hi])^beta
// with lo = floor((size - 1) / 2), hi = ceil((size - 1) / 2), clipped to [0, C).
struct LrnArgs {
  int64_t numel = 0, channels = 1, spatial = 1, size = 1;
  double alpha = 1e-4, beta = 0.75, bias = 1.0;
};

template <class T>
__global__ void lrnApply(const T* x, T* y, LrnArgs args) {
  using C = Compute<T>;
  const int64_t lo = (args.size - 1) / 2;
  const int64_t hi = args.size - 1 - lo;
  const C alphaOverSize = C(args.alpha / static_cast<double>(args.size));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < args.numel;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = i % args.spatial;
    const int64_t c = (i / args.spatial) % args.channels;
    const int64_t batchBase = i - s - c * args.spatial;
    const int64_t first = c - lo < 0 ? 0 : c - lo;
    const int64_t last = c + hi > args.channels - 1 ? args.channels - 1 : c + hi;
    C sum = C(0);
    for (int64_t k = first; k <= last; ++k) {
      const C v = loadAs<C>(x, batchBase + k * args.spatial + s);
      sum += v * v;
    }
    y[i] = storeAs<T>(loadAs<C>(x, i) / mathPow(C(args.bias) + alphaOverSize * sum, C(args.beta)));
  }
}

Status lrnKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& x = ctx.input(0);
  if (x.rank() < 2)
    return ctx.error("input 'X' must have rank >= 2, got " + shapeToString(x.shape));
  LrnArgs args;
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
  KILN_DISPATCH_FLOAT(x.type, ctx, {
    lrnApply<T>
        <<<gridFor(args.numel), kBlockSize, 0, ctx.stream()>>>(x.as<const T>(), y.as<T>(), args);
    KILN_CUDA_CHECK_LAUNCH("lrnApply");
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
  registry.add("LpNormalization", 1, 1000, &lpNormKernel, supportsLpNorm);
  registry.add("MeanVarianceNormalization", 1, 1000, &mvnKernel, supportsSameFloatType);
  registry.add("LRN", 1, 1000, &lrnKernel, supportsSameFloatType);
}

}  // namespace kiln::cuda
