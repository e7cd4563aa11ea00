// What the spatial and miscellaneous kernels share (spatial_misc.cu: GridSample, RoiAlign,
// AffineGrid; col2im_unpool.cu: Col2Im, MaxUnpool, CenterCropPad, TensorScatter): input
// checks, the float codes of a second float operand, the per-slot support check, and the
// device loads. Internal to kiln_cuda.
#pragma once

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/op_common.cuh"
#include "ops/spatial_params.h"

namespace kiln::cuda {

// Col2Im, MaxUnpool, CenterCropPad, TensorScatter (col2im_unpool.cu);
// registerSpatialMiscGpuKernels calls it.
void registerCol2ImUnpoolGpuKernels(GpuKernelRegistry& registry);

namespace sm {

// ============================ host helpers ============================

inline bool hasInput(const GpuKernelContext& ctx, size_t i) {
  return i < ctx.inputCount() && ctx.hasInput(i);
}

// Float storage types as a small code for kernels reading a second float operand.
enum FloatCode : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

inline int floatCode(DataType t) {
  return t == DataType::kFloat16 ? kF16 : t == DataType::kBFloat16 ? kBF16 : kF32;
}

// What the support predicates accept per input slot.
enum class Accept { kFloat, kIndex, kInteger, kAny };

inline std::string checkTypes(const std::vector<DataType>& types,
                              std::initializer_list<Accept> accept) {
  size_t i = 0;
  for (Accept a : accept) {
    const DataType t = i < types.size() ? types[i] : DataType::kUndefined;
    ++i;
    if (t == DataType::kUndefined) continue;
    bool ok = true;
    switch (a) {
      case Accept::kFloat:
        ok = isFloatStorage(t);
        break;
      case Accept::kIndex:
        ok = isIndexType(t);
        break;
      case Accept::kInteger:
        ok = isInteger(t);
        break;
      case Accept::kAny:
        ok = t != DataType::kString && dataTypeSize(t) >= 1 && packedElementBits(t) == 0;
        break;
    }
    if (!ok)
      return std::string("no GPU kernel for input ") + std::to_string(i - 1) + " of type " +
             dataTypeName(t);
  }
  return "";
}

// ============================ device helpers ============================

__device__ __forceinline__ double loadFloat(const void* p, int code, int64_t i) {
  if (code == kF16) return __half2float(static_cast<const __half*>(p)[i]);
  if (code == kBF16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

__device__ __forceinline__ int64_t loadIndex(const void* p, bool is64, int64_t i) {
  return is64 ? static_cast<const int64_t*>(p)[i]
              : static_cast<int64_t>(static_cast<const int32_t*>(p)[i]);
}

template <class T>
__device__ __forceinline__ T storeDouble(double v) {
  return fromFloat<T>(static_cast<float>(v));
}

}  // namespace sm
}  // namespace kiln::cuda
