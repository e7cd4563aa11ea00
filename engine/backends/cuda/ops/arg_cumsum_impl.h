// The contract between the host half of ArgMax / ArgMin and CumSum (arg_cumsum.cpp:
// attributes, the axis, outputs) and their device half (arg_cumsum_impl.cu: kernels and
// launch geometry). Plain C++, included by both compilers.
//
// Both launchers read the input as [outer, n, inner] (packed row-major, the axis in the
// middle) and run on `stream`. They assume the host checked the data type against
// kArgCumSumDeviceTypes and that outer * inner > 0 (ArgMax / ArgMin, with n > 0) or the
// input has elements (CumSum). They return a failed launch's status by kernel name, and
// kUnsupported "data type X" for a type outside the set (the host checks first).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_type_sets.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {

constexpr uint32_t kArgCumSumDeviceTypes = device_types::kFloats | device_types::kIndexIntegers;

// ArgMax (`isMax`) or ArgMin along n: y[outer, inner] int64 indices. Ties go to the first
// index, or the last with `last` (select_last_index).
struct ArgReduceLaunch {
  const void* x = nullptr;
  int64_t* y = nullptr;
  DataType type = DataType::kUndefined;  // of x
  int64_t outer = 1, n = 1, inner = 1;
  bool isMax = true;
  bool last = false;
};

Status launchArgReduce(const ArgReduceLaunch& args, cudaStream_t stream);

// The running sum along n, y of x's type and shape; `exclusive` leaves each element out of
// its own sum, `reverse` sums from the end.
struct CumSumLaunch {
  const void* x = nullptr;
  void* y = nullptr;
  DataType type = DataType::kUndefined;  // of x and y
  int64_t outer = 1, n = 1, inner = 1;
  bool exclusive = false;
  bool reverse = false;
};

Status launchCumSum(const CumSumLaunch& args, cudaStream_t stream);

}  // namespace kiln::cuda
