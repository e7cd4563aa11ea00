// The contract between the host half (spatial_misc.cpp) and the device half
// (spatial_misc_impl.cu) of GridSample, RoiAlign and AffineGrid. Plain C++ (both compilers).
//
// Each launcher runs one grid-stride kernel on `stream` (gridFor(n) blocks of kBlockSize,
// one thread per output element; AffineGrid: per grid point) and returns the launch's
// status. It assumes the host half checked everything: `type` in
// device_types::kStorageFloats (outside it the launcher returns kUnsupported "data type X";
// the host half reports that as ctx.unsupported before calling), n > 0, the params filled
// from validated shapes and attributes, the second operands' codes (FloatCode, int64 or
// int32 indices) matching their buffers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/ops/spatial_misc_common.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::sm {

// ============================ GridSample ============================

enum GridMode : int { kLinear = 0, kNearest = 1, kCubic = 2 };
enum GridPadding : int { kZeros = 0, kBorder = 1, kReflection = 2 };
constexpr int kMaxGridDims = 3;

// Per spatial dim d (0 = outermost of X's spatial dims): X's size and packed stride, and
// the [lo, hi] pixel range of align_corners.
struct GridParams {
  int dims = 0;
  int mode = kLinear, padding = kZeros;
  bool alignCorners = false;
  int gridCode = kF32;
  int64_t size[kMaxGridDims] = {};
  int64_t stride[kMaxGridDims] = {};
  double lo[kMaxGridDims] = {}, hi[kMaxGridDims] = {};
  int64_t channels = 0, locations = 0, plane = 0;
};

// Y[n, c, loc...] = X[n, c] sampled at grid[n, loc..., :] (the CPU's stencil, in double).
struct GridSampleLaunch {
  const void* x = nullptr;             // [N, C, spatial...] of `type`
  const void* grid = nullptr;          // [N, locations..., dims], float storage params.gridCode
  void* y = nullptr;                   // [N, C, locations...] of `type`
  DataType type = DataType::kFloat32;  // X's and Y's
  int64_t count = 0;                   // Y's elements
  GridParams params;
};
Status launchGridSample(const GridSampleLaunch& args, cudaStream_t stream);

// ============================ RoiAlign ============================

struct RoiParams {
  int64_t batch = 0, channels = 0, height = 0, width = 0, outH = 1, outW = 1;
  int64_t samplingRatio = 0;
  double spatialScale = 1.0;
  bool maxMode = false, halfPixel = true;
  int roisCode = kF32;
  bool indices64 = true;
};

// Y[r, c, ph, pw]: the bin of roi r over X[batch_indices[r], c]. A roi the CPU would
// refuse (batch index out of range, non-finite coordinates, over 2^26 samples) gets NaN.
struct RoiAlignLaunch {
  const void* x = nullptr;             // [N, C, H, W] of `type`
  const void* rois = nullptr;          // [num_rois, 4], float storage params.roisCode
  const void* batchIndices = nullptr;  // [num_rois], int64 (params.indices64) or int32
  void* y = nullptr;                   // [num_rois, C, outH, outW] of `type`
  DataType type = DataType::kFloat32;  // X's and Y's
  int64_t count = 0;                   // Y's elements
  RoiParams params;
};
Status launchRoiAlign(const RoiAlignLaunch& args, cudaStream_t stream);

// ============================ AffineGrid ============================

struct AffineParams {
  int spatial = 2;
  int64_t batch = 0, depth = 1, height = 0, width = 0;
  bool alignCorners = false;
};

// out[n, (d,) h, w, :] = theta[n] * (x, y, (z,) 1) of the base grid, in double.
struct AffineGridLaunch {
  const void* theta = nullptr;         // [N, spatial, spatial + 1] of `type`
  void* out = nullptr;                 // [N, (D,) H, W, spatial] of `type`
  DataType type = DataType::kFloat32;  // theta's and out's
  int64_t points = 0;                  // N * D * H * W, one thread each
  AffineParams params;
};
Status launchAffineGrid(const AffineGridLaunch& args, cudaStream_t stream);

}  // namespace kiln::cuda::sm
