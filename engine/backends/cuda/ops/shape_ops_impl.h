// Device half of the shape ops (host half: shape_ops.cpp). Shape and Size, when their
// input's shape is only known at run time, write their int64 values with a kernel whose
// parameters carry the values (capturable, no host copy).
//
// Contract: launchWriteInt64s writes values.values[0, values.count) to `out` on `stream`
// with one block of kMaxShapeValues threads; the host half has checked that count is in
// [1, kMaxShapeValues] and allocated `out` (int64, at least count elements). A failed
// launch comes back as a Status naming writeInt64sKernel.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_shapes.h"
#include "kiln/status.h"

namespace kiln::cuda {

// The most values one launch writes: device_shapes.h's kMaxRank (a shape's dims).
constexpr int kMaxShapeValues = kMaxRank;

// Up to kMaxShapeValues int64 values, passed to the kernel by value.
struct SmallInt64s {
  int count = 0;
  int64_t values[kMaxShapeValues] = {};
};

Status launchWriteInt64s(const SmallInt64s& values, int64_t* out, cudaStream_t stream);

}  // namespace kiln::cuda
