// The contract between the host half (resize.cpp) and the device half (resize_impl.cu) of
// Resize and Upsample. Plain C++ (both compilers).
//
// The host half resolves every term of the coordinate mapping that does not depend on
// the output position (ResizeAxis, with the CPU's expressions); the device computes the
// coordinates, nearest indices and interpolation taps in double exactly as the CPU does.
// Each launcher enqueues its kernels on `stream` and returns the first failed launch's
// status (naming the kernel). It assumes the host half checked everything: the rank at
// most kResizeMaxRank, no empty input axis resized to a non-empty one, a non-empty
// output, `type` in the launcher's set (otherwise kUnsupported "data type X", which the
// host half reports as ctx.unsupported before calling), buffers sized as described.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_shapes.h"
#include "backends/cuda/device_type_sets.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::resize {

// The largest rank nearest resize takes (device_shapes.h's kMaxRank).
constexpr int kResizeMaxRank = kMaxRank;

// What linear and cubic interpolation take.
constexpr uint32_t kInterpolatedTypes = device_types::kFloats;

enum ResizeCoordMode : int {
  kHalfPixel,
  kAsymmetric,
  kAlignCorners,
  kPytorchHalfPixel,
  kTfHalfPixelForNn,
  kHalfPixelSymmetric,
  kTfCropAndResize,
};
enum NearestMode : int {
  kRoundPreferFloor,
  kRoundPreferCeil,
  kNearestFloor,
  kNearestCeil,
  kSimple
};

// One axis's coordinate mapping; the terms that do not depend on the output
// position are computed on the host with the CPU's expressions.
struct ResizeAxis {
  int64_t inDim = 1, outDim = 1;
  double scale = 1.0;
  double length = 1.0;           // output length as scale * in (or out when from sizes)
  double symmetricOffset = 0.0;  // half_pixel_symmetric
  double roiStart = 0.0, roiEnd = 1.0;
  double cropOffset = 0.0;  // roiStart * (in - 1)
  int64_t mapOffset = 0;    // nearest: where this axis's map starts
  int64_t inStride = 1;     // nearest: element stride of the input
};

struct ResizeSetup {
  int rank = 0;
  int coordMode = kHalfPixel;
  int nearestMode = kRoundPreferFloor;
  ResizeAxis axes[kResizeMaxRank];
};

// maps[axes[d].mapOffset + y] = the input index of output position y of axis d, for every
// axis (-1: outside tf_crop_and_resize's crop, extrapolate). `mapEntries` = the sum of the
// output dims, > 0.
Status launchNearestMap(const ResizeSetup& s, int64_t* maps, int64_t mapEntries,
                        cudaStream_t stream);

// out[e] = in[the element the maps select], or `fill` on the border, for the `total`
// elements of out. Moves raw elements: dataTypeSize(type) is 1, 2, 4 or 8 (anything else:
// kUnsupported "data type X"); `fill` points to one element's bytes on the host (the
// extrapolation value in the input's type).
Status launchNearestGather(const ResizeSetup& s, DataType type, const void* in, void* out,
                           const int64_t* maps, const void* fill, int64_t total,
                           cudaStream_t stream);

// The taps of one axis for linear / cubic.
struct TapsParams {
  ResizeAxis axis;
  int coordMode = kHalfPixel;
  bool cubic = false;
  double cubicA = -0.75;
  bool excludeOutside = false;
  bool normalize = false;  // antialias or exclude_outside
  double kernelScale = 1.0;
  int64_t first = 0, taps = 2;
};

// One separable pass of linear / cubic interpolation along taps.axis: src [outer, inDim,
// inner] -> dst [outer, outDim, inner] (outNumel elements). src / dst are `type` (the
// tensors) or its compute type (float, double for float64: the intermediates).
struct ResizePassLaunch {
  TapsParams taps;
  int64_t outer = 1, inner = 1;
  int64_t outNumel = 0;
  DataType type = DataType::kFloat32;  // in kInterpolatedTypes
  const void* src = nullptr;
  bool srcIsT = false;
  void* dst = nullptr;
  bool dstIsT = false;
  double extrapolation = 0.0;
  // Scratch for the taps of this pass (reused pass after pass, stream-ordered):
  // outDim * taps indices and weights, outDim outside flags.
  int64_t* index = nullptr;
  double* weight = nullptr;
  uint8_t* outside = nullptr;
};

// Computes the pass's taps (the CPU's interpolationTaps), then runs the weighted pass.
Status launchResizePass(const ResizePassLaunch& args, cudaStream_t stream);

// The two passes of a resize of the last two axes alone ([planes, H, W] -> [planes, outH,
// outW]) in one kernel: each output element takes the passes' sums in their order (a
// column sum over the H taps in the compute type, then the W taps' weighted sum of those),
// so the values are the two passes' bit for bit, without the intermediate tensor or a
// division per element. For every coordinate mode but tf_crop_and_resize (whose outside
// rows and columns the passes fill in their own order) and at most kResize2dMaxTaps taps
// per axis. `rows` computes along H (its axis's inDim = H), `columns` along W; their
// index / weight / outside scratch must not overlap.
constexpr int64_t kResize2dMaxTaps = 8;

// With `inner` > 1 the two axes are the ones before a kept innermost axis of `inner`
// elements ([planes, H, W, inner] -> [planes, outH, outW, inner]: NHWC images), for 2 or 4
// taps on both axes (linear, cubic) and 16- or 32-bit floats only (kInternal otherwise);
// outW * inner must stay below 2^32 (kUnsupported otherwise). Linear and cubic taps run a
// kernel with the taps fixed at compile time (vector accesses along `inner` where aligned).
struct Resize2dLaunch {
  ResizePassLaunch rows, columns;
  int64_t planes = 1;
  int64_t inner = 1;
  DataType type = DataType::kFloat32;  // in kInterpolatedTypes
  const void* in = nullptr;
  void* out = nullptr;
};

Status launchResize2d(const Resize2dLaunch& args, cudaStream_t stream);

}  // namespace kiln::cuda::resize
