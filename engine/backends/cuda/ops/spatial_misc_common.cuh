// What the device halves of the spatial and miscellaneous kernels share
// (spatial_misc_impl.cu: GridSample, RoiAlign, AffineGrid; col2im_unpool_impl.cu: Col2Im,
// MaxUnpool, CenterCropPad, TensorScatter): the device loads of a second float operand and
// of an index operand, and the store of a double result. Included by those two .cu files
// only; their host halves share spatial_misc_common.h.
#pragma once

#include <cstdint>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/op_common.cuh"
#include "backends/cuda/ops/spatial_misc_common.h"

namespace kiln::cuda {
namespace sm {

// Element i of a float storage operand (FloatCode `code`), in double.
__device__ __forceinline__ double loadFloat(const void* p, int code, int64_t i) {
  if (code == kF16) return __half2float(static_cast<const __half*>(p)[i]);
  if (code == kBF16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

// Element i of an int64 (is64) or int32 index operand.
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
