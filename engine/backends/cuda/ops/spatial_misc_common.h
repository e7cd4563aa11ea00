// What the host halves of the spatial and miscellaneous kernels share (spatial_misc.cpp:
// GridSample, RoiAlign, AffineGrid; col2im_unpool.cpp: Col2Im, MaxUnpool, CenterCropPad,
// TensorScatter): input checks with the CPU kernels' messages, the float codes of a second
// float operand (read by the device halves through spatial_misc_common.cuh), and the
// per-slot support check. Plain C++ (both compilers); internal to kiln_cuda.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include "backends/cuda/device_shapes.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/op_common.h"
#include "kiln/data_type.h"

namespace kiln::cuda {

// Col2Im, MaxUnpool, CenterCropPad, TensorScatter (col2im_unpool.cpp);
// registerSpatialMiscGpuKernels calls it.
void registerCol2ImUnpoolGpuKernels(GpuKernelRegistry& registry);

namespace sm {

// The largest rank the fixed-size parameter arrays hold (device_shapes.h's kMaxRank).
constexpr int kMaxTensorRank = kMaxRank;

// Float storage types as a small code for kernels reading a second float operand.
enum FloatCode : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

inline int floatCode(DataType t) {
  return t == DataType::kFloat16 ? kF16 : t == DataType::kBFloat16 ? kBF16 : kF32;
}

// ============================ host checks ============================

// op_common.h's and device_type_sets.h's, as this family's files name them.
using cuda::dims;
using cuda::isFloatStorage;
using cuda::isIndexType;
using cuda::isWordSized;
using cuda::requireInputs;

inline bool hasInput(const GpuKernelContext& ctx, size_t i) {
  return i < ctx.inputCount() && ctx.hasInput(i);
}
// ============================ support predicates ============================

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

}  // namespace sm
}  // namespace kiln::cuda
