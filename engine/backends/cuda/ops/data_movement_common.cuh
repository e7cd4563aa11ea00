// What the data-movement kernels share (data_movement.cu: strided copies, Transpose, Concat,
// Split; slice_pad_tile.cu: Slice, Pad, Tile, Expand; gather_scatter.cu: Gather*, Scatter*,
// ReverseSequence; data_movement_host.cpp: the host checks): the word-width dispatch and
// grid-stride loop macros, the device index helpers, the strided copy and the host checks.
// Internal to kiln_cuda.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "backends/cuda/device_common.cuh"

// Binds `V` to the unsigned word of WIDTH bytes (1, 2, 4, 8 or 16) and runs the body.
#define KILN_DM_DISPATCH_WIDTH(WIDTH, ...) \
  switch (WIDTH) {                         \
    case 16: {                             \
      using V = uint4;                     \
      __VA_ARGS__;                         \
      break;                               \
    }                                      \
    case 8: {                              \
      using V = uint64_t;                  \
      __VA_ARGS__;                         \
      break;                               \
    }                                      \
    case 4: {                              \
      using V = uint32_t;                  \
      __VA_ARGS__;                         \
      break;                               \
    }                                      \
    case 2: {                              \
      using V = uint16_t;                  \
      __VA_ARGS__;                         \
      break;                               \
    }                                      \
    default: {                             \
      using V = uint8_t;                   \
      __VA_ARGS__;                         \
      break;                               \
    }                                      \
  }

#define KILN_DM_GRID_LOOP(i, n)                                             \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

namespace kiln::cuda {

// Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND, ReverseSequence
// (gather_scatter.cu) and Slice, Pad, Tile, Expand (slice_pad_tile.cu);
// registerDataMovementGpuKernels calls them.
void registerIndexedMovementGpuKernels(GpuKernelRegistry& registry);
void registerSlicePadTileGpuKernels(GpuKernelRegistry& registry);

namespace dm {

// value / divisor with the remainder, in 32 bits when both fit (value >= 0, divisor > 0).
__device__ __forceinline__ int64_t divMod(int64_t value, int64_t divisor, int64_t* rem) {
  if (((value | divisor) >> 31) == 0) {
    const uint32_t q = static_cast<uint32_t>(value) / static_cast<uint32_t>(divisor);
    *rem = value - static_cast<int64_t>(q) * divisor;
    return q;
  }
  const int64_t q = value / divisor;
  *rem = value - q * divisor;
  return q;
}

__device__ __forceinline__ int64_t loadIndex(const void* indices, bool is64, int64_t i) {
  return is64 ? static_cast<const int64_t*>(indices)[i]
              : static_cast<int64_t>(static_cast<const int32_t*>(indices)[i]);
}

// The index in [0, dim), or -1 when it is outside [-dim, dim).
__device__ __forceinline__ int64_t normalizeIndex(int64_t v, int64_t dim) {
  if (v < 0) v += dim;
  return v >= 0 && v < dim ? v : -1;
}

// Host checks the kernels make (defined in data_movement_host.cpp).
bool hasInput(const GpuKernelContext& ctx, size_t i);
// Every input below `count` present, else an error naming the first missing one.
Status requireInputs(const GpuKernelContext& ctx, size_t count);
// Maps a possibly negative axis into [0, rank) (a scalar has no axis).
Status normalizeAxis(const GpuKernelContext& ctx, int64_t axis, int64_t rank, int64_t* out);
// Reads input i (an integer tensor of rank <= 1) on the host; absent leaves `out` as is.
Status readInts(GpuKernelContext& ctx, size_t i, const char* what, std::vector<int64_t>* out);
Status checkElementCount(const GpuKernelContext& ctx, const Shape& shape, const char* what);
Status checkIndexType(const GpuKernelContext& ctx, DataType type, const char* what);
// Ranks above kMaxRank are refused as unsupported.
Status checkRank(const GpuKernelContext& ctx, int64_t rank, const char* what);
std::vector<int64_t> contiguousStrides(const Shape& shape);
int64_t dimProduct(const Shape& shape, size_t begin, size_t end);
// The widest word (16, 8, 4, 2 or 1 bytes) dividing every byte count and address.
int wordWidth(std::initializer_list<int64_t> bytes, std::initializer_list<const void*> pointers);
char* byteOffset(void* p, int64_t bytes);
Status copyBytes(GpuKernelContext& ctx, void* dst, const void* src, int64_t bytes);
// Fixed-size elements of 1, 2, 4 or 8 bytes (absent inputs pass).
bool movable(DataType t);
bool isIndexType(DataType t);
std::string typeReason(DataType t);
// The support predicate of the copies: every input movable.
std::string supportsMovableTypes(const Node& node, const std::vector<DataType>& types);

// Strided copies (data_movement.cu), which Slice, Pad, Tile and Expand (slice_pad_tile.cu)
// run too.
// A strided read of the input into the packed output: output coordinate c_d reads
// input offset base + (c_d mod inDims[d]) * inStrides[d] (inDims = outDims except Tile).
struct StridedCopy {
  std::vector<int64_t> outDims, inDims, inStrides;
  int64_t base = 0;
};
// Runs `copy` from `in` into `out` (whose shape is copy.outDims): unit dims dropped,
// contiguous dims merged, then a batched 2-D transpose, a memcpy or the strided kernel.
Status launchStrided(GpuKernelContext& ctx, const DeviceTensor& in, const DeviceTensor& out,
                     StridedCopy copy);

}  // namespace dm
}  // namespace kiln::cuda
