// The contract between the host half (pool.cpp) and the device half (pool_impl.cu) of
// MaxPool, AveragePool, LpPool and their global forms (channels-first). Plain C++ (both
// compilers).
//
// Each launcher runs one kernel on `stream` and returns the launch's status (a failed
// launch comes back as a Status naming the kernel). It assumes the host half checked
// everything: `type` in the launcher's set (otherwise it returns kUnsupported "data type X",
// which the host half reports as ctx.unsupported before calling), at least one plane and
// one output element, a non-empty spatial extent, X and Y (and the indices) allocated
// with the sizes the parameters describe.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_type_sets.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::pool {

enum PoolKind : int { kPoolMax = 0, kPoolAverage = 1, kPoolLp = 2 };

// What the windowed pools take: the floats, and int8 / uint8 for MaxPool only.
constexpr uint32_t kPoolWindowTypes =
    device_types::kFloats | device_types::kInt8 | device_types::kUInt8;
// What the global pools take.
constexpr uint32_t kGlobalPoolTypes = device_types::kFloats;

// The geometry as three axes (leading unit axes for spatial ranks 1 and 2).
struct PoolParams {
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], padBegin[3], padEnd[3];
  int64_t planes = 0, inSize = 0, outSize = 0;
  int kind = kPoolMax;
  bool countIncludePad = false;
  bool columnMajor = false;  // MaxPool storage_order = 1
  double p = 2.0;
};

// Y [planes, outSize] = pool of X [planes, inSize] under `pp`, one thread per output
// element walking its window in the CPU's order (sums in float, double for float64; int8 /
// uint8 compared in float, exactly, an empty window giving the type's lowest). MaxPool also
// writes `indices` (int64, flat over N * C * spatial, row- or column-major) when not null.
// `type` in kPoolWindowTypes; the host half refuses integer pools other than MaxPool.
Status launchPoolWindow(const PoolParams& pp, DataType type, const void* x, void* y,
                        int64_t* indices, cudaStream_t stream);

// Y[plane] = the global pool of X[plane, 0 .. size) for `planes` planes: one warp per plane
// when size <= 1024, the whole block otherwise. Max keeps the CPU's semantics (the first
// element when it is NaN, else the largest non-NaN element); LpPool uses `p`. `type` in
// kGlobalPoolTypes.
Status launchGlobalPool(DataType type, const void* x, void* y, int64_t planes, int64_t size,
                        int kind, double p, cudaStream_t stream);

}  // namespace kiln::cuda::pool
