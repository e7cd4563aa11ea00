// The stem kernel's host/device contract (ai.kiln FusedConvMaxPool, host half:
// conv_max_pool.cpp, device half: conv_max_pool_impl.cu): its fixed geometry, the launch
// arguments the host works out once per layer state, the shared-memory size of a geometry,
// the occupancy query and the launch. Plain C++ (both compilers).
//
// The launchers assume the host half checked the node against the kernel's class (the
// geometry limits below, X float16 or bfloat16, Y channels-last) and that the geometry's
// shared memory is at most kStemSharedCap; an X of another type gives kUnsupported
// "data type X". CUDA failures come back as a Status naming the call or the kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/device_type_sets.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::stem {

// The X types the kernel computes in (Y: int8, or X's type).
constexpr uint32_t kStemTypes = device_types::kFloat16 | device_types::kBFloat16;

constexpr int kStemFilters = 64;
constexpr int kStemSteps = 11;                   // k16 steps of depth
constexpr int kStemFilterRows = 2 * kStemSteps;  // (c, r) rows of 8 taps
constexpr int kStemTaps = 8;                     // a filter row's taps (S padded)
constexpr int kStemDepth = kStemSteps * 16;
constexpr int kPoolTile = 8;                  // pooled outputs per tile side
constexpr int kStemThreads = 128;             // 4 warps
constexpr int kConvPitch = kStemFilters + 8;  // a conv pixel's row in shared memory (halves)
constexpr int kMaxPoolWindow = 3, kMaxPoolStride = 2;
constexpr int kStemMaxChannels = 4;
constexpr int kRowBatch = 8;  // region rows a warp has in flight
// Shared memory of the largest geometry the class allows (C <= 4, C * R <= 22, a
// 17 x 17 conv tile) is under 80 KiB: every launch sets this one limit, so no layer
// lowers another's.
constexpr int kStemSharedCap = 96 * 1024;

struct StemArgs {
  const void* x = nullptr;
  const uint32_t* w = nullptr;  // [64][kStemDepth] half pairs, k fastest
  const float* bias = nullptr;  // [64]
  void* y = nullptr;
  float yScale = 1.f, yInverseScale = 1.f;  // the latter rounded to nearest on the host
  int c = 0, h = 0, w_ = 0;
  int r = 0;
  int padTop = 0, padLeft = 0, convH = 0, convW = 0;
  int poolKH = 1, poolKW = 1, poolSH = 1, poolSW = 1, poolPadTop = 0, poolPadLeft = 0;
  int outH = 0, outW = 0;
  int tileRows = 0, tileCols = 0;  // conv pixels one pooled tile reads
  int tileColsMagic = 0;           // ceil(2^16 / tileCols): m / tileCols = m * it >> 16 (m < 512)
  int inRows = 0, inPitch = 0;     // the input region (rows, columns = pitch, even)
  int tilesH = 0, tilesW = 0, tiles = 0, mTiles = 0;
  bool relu = false;
  bool wordLoads = false;  // W even and X 4-byte aligned: the region in 32-bit loads
  // Byte offset in the region of filter row j = c * R + r (its first tap at a window's
  // start); 0 for the padding rows past C * R (zero weights).
  int rowOffset[kStemFilterRows] = {};
};

// Shared memory: the input region [c][inRows][inPitch], the filter [64][kFilterPitch]
// (ldmatrix rows 368 bytes apart: conflict-free), the conv tile [pixels + 1][kConvPitch]
// (the extra row takes the stores of the last m-tile's rows past the tile), the bias
// [64] floats.
constexpr int kFilterPitch = kStemDepth + 8;
constexpr int kStemWarps = kStemThreads / 32;

// Bytes of dynamic shared memory a launch of geometry `a` takes.
inline size_t stemSharedBytes(const StemArgs& a) {
  const size_t xsHalves = (static_cast<size_t>(a.c) * a.inRows * a.inPitch + 7) / 8 * 8;
  return (xsHalves + static_cast<size_t>(kStemFilters) * kFilterPitch +
          (static_cast<size_t>(a.tileRows) * a.tileCols + 1) * kConvPitch) *
             2 +
         kStemFilters * sizeof(float);
}

// How many blocks of the kernel for X of type `x` (int8 Y when `quantized`, else X's
// type) with `sharedBytes` of dynamic shared memory the device holds at once: its SM count
// and the blocks per SM (0 when none fits). Raises the kernel's dynamic shared-memory
// limit to kStemSharedCap first (once per layer state, before its first launch).
struct StemOccupancy {
  int sms = 0, blocksPerSm = 0;
};
Status stemOccupancy(DataType x, bool quantized, size_t sharedBytes, StemOccupancy* occupancy);

// Launches the kernel on `a` with `blocks` persistent blocks (each runs tiles blockIdx.x,
// + gridDim.x, ...) of kStemThreads threads and `sharedBytes` (stemSharedBytes(a)) of
// dynamic shared memory on `stream`; X and Y types as stemOccupancy's.
Status launchStemKernel(DataType x, bool quantized, const StemArgs& a, size_t sharedBytes,
                        int blocks, cudaStream_t stream);

}  // namespace kiln::cuda::stem
