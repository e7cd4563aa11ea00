// Device half of TopK, CumProd, Dropout (inference) and NonZero (host half, with the op
// contract: selection.cpp).
//
// Contract: each launcher enqueues its kernels on `stream` and returns a failed launch as
// a Status naming the kernel; an element type outside the launcher's set comes back as a
// kUnsupported "data type X" status. The host half has checked the inputs and the type
// (inDeviceTypes with the set named here), allocated the outputs and skipped empty work.
// - launchTopK: the first k of each row of n elements (rows = outer * inner, row r at
//   x[(r / inner) * n * inner + r % inner], stride inner) in the CPU's TopKOrder: larger
//   (or smaller) first, NaN above every number, equal values by lower index. Rows up to
//   kTopKBitonicMax long are bitonic-sorted in shared memory, longer ones run k selection
//   passes, for which k <= kTopKSelectMaxK.
// - launchCumProd: the cumulative product along n of x [outer, n, inner], one thread per
//   column: float types in double, integers in wrapping uint64.
// - launchFillOnes: n ones of a float type (Dropout's opset < 10 mask).
// - launchNonZeroCount / launchNonZeroWrite: NonZero's two passes over x's n elements in
//   `blocks` chunks of `chunk`: counts per chunk, scanned into each chunk's first output
//   slot (counts[blocks] = the total), then the coordinates of the hits in row-major
//   order. An element is non-zero when a bit other than a float's sign bit is set.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_shapes.h"
#include "backends/cuda/device_type_sets.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {

// ---- TopK
constexpr int64_t kTopKBitonicMax = 4096;  // (4 or 8-byte key + int32 index) * 4096 <= 48 KiB
constexpr int64_t kTopKSelectMaxK = 256;
constexpr uint32_t kTopKTypes = device_types::kFloats | device_types::kByteAndIndexIntegers;

struct TopKLaunch {
  const void* x = nullptr;
  void* values = nullptr;      // [outer, k, inner] of x's type
  int64_t* indices = nullptr;  // [outer, k, inner]
  DataType type = DataType::kUndefined;
  int64_t rows = 0, n = 0, inner = 1, k = 0;  // rows > 0, 0 < k <= n
  bool largest = true;
};
Status launchTopK(const TopKLaunch& args, cudaStream_t stream);

// ---- CumProd
constexpr uint32_t kCumProdTypes = device_types::kFloats | device_types::kIntegers;

struct CumProdLaunch {
  const void* x = nullptr;
  void* y = nullptr;
  DataType type = DataType::kUndefined;
  int64_t outer = 1, n = 1, inner = 1;
  bool exclusive = false, reverse = false;
};
Status launchCumProd(const CumProdLaunch& args, cudaStream_t stream);

// ---- Dropout: y[0, n) = 1 for y of a type in device_types::kFloats.
Status launchFillOnes(void* y, DataType type, int64_t n, cudaStream_t stream);

// ---- NonZero
constexpr int kNonZeroMaxRank = kMaxRank;
constexpr uint32_t kNonZeroTypes =
    device_types::kFloats | device_types::kIntegers | device_types::kBool;

struct NonZeroShape {
  int rank = 1;
  int64_t strides[kNonZeroMaxRank] = {};  // packed strides of the (scalar -> [1]) input
};

struct NonZeroLaunch {
  const void* x = nullptr;
  DataType type = DataType::kUndefined;
  bool isFloat = false;       // the sign bit does not make a value non-zero (-0 == 0)
  int64_t n = 0;              // > 0
  int blocks = 1;             // chunks, one block each
  int64_t chunk = 1;          // elements per chunk
  int64_t* counts = nullptr;  // device workspace of blocks + 1 int64s
};
// Fills counts: counts[b] = block b's first output slot, counts[blocks] = the total.
Status launchNonZeroCount(const NonZeroLaunch& args, cudaStream_t stream);
// out [rank, count]: out[d * count + h] = coordinate d of the h-th non-zero element.
Status launchNonZeroWrite(const NonZeroLaunch& args, const NonZeroShape& shape, int64_t count,
                          int64_t* out, cudaStream_t stream);

}  // namespace kiln::cuda
