// The contract between lp_mvn_lrn.cpp (host: checks, shapes, outputs, registration) and
// lp_mvn_lrn_impl.cu (device: the kernels of LpNormalization, MeanVarianceNormalization and
// LRN).
//
// Each launcher enqueues its kernel on `stream` for the element type `type` and returns the
// launch's status ("data type X", kUnsupported, outside float32 / float16 / bfloat16 /
// float64). It assumes the host half checked: the type is in device_types::kFloats, the
// output is allocated with X's shape and type, and X has at least one element. Arithmetic is
// in float (double for double).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/ops/normalization_common.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::nm {

// X as [outer, n, inner], normalized over n (p = 1 or 2; a zero vector stays zero): a row
// group per row when inner == 1, else one thread per column of n elements `inner` apart.
struct LpNormLaunch {
  const void* x = nullptr;
  void* y = nullptr;
  DataType type = DataType::kFloat32;
  int64_t outer = 1, n = 1, inner = 1;
  int p = 2;
};
Status launchLpNorm(const LpNormLaunch& launch, cudaStream_t stream);

// One row group per statistics element: its `count` elements sit at
// stridedOffset(kept, row) + stridedOffset(reduced, r). Y = (X - mean) /
// (sqrt(variance) + 1e-9), or X - mean without normalizeVariance.
struct MvnLaunch {
  const void* x = nullptr;
  void* y = nullptr;
  DataType type = DataType::kFloat32;
  StridedIndex kept, reduced;
  int64_t rows = 1, count = 1;
  bool normalizeVariance = true;
};
Status launchMvn(const MvnLaunch& launch, cudaStream_t stream);

// y = x / (bias + alpha / size * sum of x^2 over channels [c - lo, c + hi])^beta
// with lo = floor((size - 1) / 2), hi = ceil((size - 1) / 2), clipped to [0, C).
// Passed to the kernel as is.
struct LrnArgs {
  int64_t numel = 0, channels = 1, spatial = 1, size = 1;
  double alpha = 1e-4, beta = 0.75, bias = 1.0;
};
struct LrnLaunch {
  const void* x = nullptr;
  void* y = nullptr;
  DataType type = DataType::kFloat32;
  LrnArgs args;
};
Status launchLrn(const LrnLaunch& launch, cudaStream_t stream);

}  // namespace kiln::cuda::nm
