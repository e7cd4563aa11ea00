// What the normalization family's halves share on the host (normalization.cpp:
// BatchNormalization, Instance/GroupNormalization, LayerNormalization, RMSNormalization;
// lp_mvn_lrn.cpp: LpNormalization, MeanVarianceNormalization, LRN; fused_normalization.cpp:
// the broadcast index): input and shape checks, the support predicate, and the host form of
// device_common.cuh's broadcast index. The device helpers are normalization_common.cuh's.
// A plain C++ header (no device syntax), internal to kiln_cuda.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/device_shapes.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/op_common.h"

namespace kiln::cuda {

// LpNormalization, MeanVarianceNormalization, LRN (lp_mvn_lrn.cpp);
// registerNormalizationGpuKernels calls it.
void registerLpMvnLrnGpuKernels(GpuKernelRegistry& registry);

namespace nm {

// ---- The broadcast index, as host code sees it -----------------------------------

// The broadcast index is device_shapes.h's ShapeInfo, under the name these files use.
constexpr int kStridedMaxRank = kMaxRank;
using StridedIndex = ShapeInfo;

// Strides of `shape` read as if broadcast to `outShape` (device_shapes.h's broadcastStrides;
// `outShape` has at most kStridedMaxRank dims, the caller checks).
inline StridedIndex broadcastIndex(const Shape& shape, const Shape& outShape) {
  return broadcastStrides(shape, outShape);
}

// ---- Host checks (op_common.h's, and those of this family) ------------------------

using cuda::isFloatData;
using cuda::requireInputs;

// X's storage type is one the kernels take (float32, float16, bfloat16, float64), else the
// unsupported "data type X".
inline Status requireFloatType(const GpuKernelContext& ctx, DataType type) {
  return requireDeviceType(ctx, type, device_types::kFloats);
}

inline Status requireNumel(const GpuKernelContext& ctx, const DeviceTensor& t, const char* name,
                           int64_t n) {
  if (t.numel() == n) return Status::ok();
  return ctx.error(std::string("input '") + name + "' has shape " + shapeToString(t.shape) +
                   ", expected " + std::to_string(n) + " elements");
}

// Parameters are read in X's storage type (the predicates make sure of it).
inline Status requireSameType(const GpuKernelContext& ctx, const DeviceTensor& x,
                              const DeviceTensor& t, const char* name) {
  if (t.type == x.type) return Status::ok();
  return ctx.unsupported(std::string("input '") + name + "' of type " + dataTypeName(t.type) +
                         " with X of type " + dataTypeName(x.type));
}

// (N, C, spatial...) split into N, C and the spatial element count S.
struct NcsShape {
  int64_t n = 1, c = 1, s = 1;
};
inline Status splitNcs(const GpuKernelContext& ctx, const DeviceTensor& x, NcsShape* out) {
  if (x.rank() < 2)
    return ctx.error("input 'X' must have rank >= 2, got " + shapeToString(x.shape));
  out->n = x.shape[0];
  out->c = x.shape[1];
  out->s = 1;
  for (int d = 2; d < x.rank(); ++d) out->s *= x.shape[d];
  return Status::ok();
}

// "" when every present input is a float type and all share one type.
inline std::string supportsSameFloatType(const Node& node, const std::vector<DataType>& types) {
  DataType first = DataType::kUndefined;
  for (DataType t : types) {
    if (t == DataType::kUndefined) continue;
    if (!isFloatData(t))
      return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(t);
    if (first == DataType::kUndefined) first = t;
    if (t != first) return "inputs of mixed float types";
  }
  return "";
}

}  // namespace nm
}  // namespace kiln::cuda
