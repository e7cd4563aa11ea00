// The contract between the host half of the reductions (reduce.cpp: attributes, axes, the
// collapsed plan, outputs and workspace) and their device half (reduce_impl.cu: kernels
// and launch geometry), for Reduce* and Softmax / LogSoftmax / Hardmax. Plain C++, included
// by both compilers.
//
// launchReduce runs one Reduce* op on `stream` (ReduceLogSumExp: both of its passes). It
// assumes the host checked the data type (kFloats, and kIndexIntegers for the ops that take
// integers), that `x` holds the input the geometry describes, `y` `outputs` > 0 elements of
// the same type, and, for LogSumExp, `scratch` reduceScratchBytes(type, outputs) bytes.
// launchSoftmax runs Softmax / LogSoftmax / Hardmax over [outer, n, inner] (a float type,
// at least one element). Both return a failed launch's status by kernel name, and
// kUnsupported "data type X" for a type outside their sets (the host checks first).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/device_shapes.h"
#include "backends/cuda/device_type_sets.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {

// Every type a device half below takes: the host narrows it per op.
constexpr uint32_t kReduceDeviceTypes = device_types::kFloats | device_types::kIndexIntegers;
constexpr uint32_t kSoftmaxDeviceTypes = device_types::kFloats;

// kMaxFinite and kSumExpShifted are the two passes of ReduceLogSumExp.
enum class ReduceOp : int {
  kSum,
  kMean,
  kMax,
  kMin,
  kProd,
  kL1,
  kL2,
  kLogSum,
  kLogSumExp,
  kSumSquare,
  kMaxFinite,
  kSumExpShifted
};

// The most axes in a run group.
constexpr int kReduceMaxRank = kMaxRank;

// Dims and element strides of a group of axes (device_shapes.h's ShapeInfo).
using ReduceAxes = ShapeInfo;

// One Reduce* op over the input collapsed into alternating runs of kept and reduced axes.
struct ReduceLaunch {
  const void* x = nullptr;
  void* y = nullptr;
  DataType type = DataType::kUndefined;  // of x and y
  ReduceOp op = ReduceOp::kSum;
  int64_t count = 1;        // input elements per output element
  int64_t outputs = 0;      // output elements
  void* scratch = nullptr;  // ReduceLogSumExp only: a float / double / int64 per output
  // Two or more reduced runs: the kept and the reduced runs, one thread per output.
  bool general = false;
  ReduceAxes kept, reduced;
  // Otherwise [outer, n, inner], n the one reduced run (1 when none).
  int64_t outer = 1, n = 1, inner = 1;
};

// The bytes of ReduceLaunch::scratch for `outputs` outputs of `type` (its accumulator).
Status reduceScratchBytes(DataType type, int64_t outputs, size_t* bytes);
Status launchReduce(const ReduceLaunch& args, cudaStream_t stream);

enum class SoftmaxKind : int { kSoftmax, kLogSoftmax, kHardmax };

// The input read as [outer, n, inner], normalized along n.
struct SoftmaxLaunch {
  const void* x = nullptr;
  void* y = nullptr;
  DataType type = DataType::kUndefined;  // of x and y
  SoftmaxKind kind = SoftmaxKind::kSoftmax;
  int64_t outer = 1, n = 1, inner = 1;
};

Status launchSoftmax(const SoftmaxLaunch& args, cudaStream_t stream);

}  // namespace kiln::cuda
