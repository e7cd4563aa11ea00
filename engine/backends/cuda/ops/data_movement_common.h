// What the data-movement kernels' host halves share (data_movement.cpp: strided copies,
// Transpose, Concat, Split; slice_pad_tile.cpp: Slice, Pad, Tile, Expand; gather_scatter.cpp:
// Gather*, Scatter*, ReverseSequence): the register functions, the host checks
// (data_movement_host.cpp) and the strided copy. Plain C++ (g++ and nvcc); the device halves'
// contracts are data_movement_impl.h, slice_pad_tile_impl.h and gather_scatter_impl.h, the
// device code they share data_movement_common.cuh. Internal to kiln_cuda.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "backends/cuda/gpu_kernel.h"

namespace kiln::cuda {

// Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND, ReverseSequence
// (gather_scatter.cpp) and Slice, Pad, Tile, Expand, ai.kiln StridedCopy and Roll
// (slice_pad_tile.cpp);
// registerDataMovementGpuKernels calls them.
void registerIndexedMovementGpuKernels(GpuKernelRegistry& registry);
void registerSlicePadTileGpuKernels(GpuKernelRegistry& registry);

namespace dm {

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
// Ranks above kMaxMovementRank (device_shapes.h's kMaxRank) are refused as unsupported.
Status checkRank(const GpuKernelContext& ctx, int64_t rank, const char* what);
// Before a kernel that moves whole elements (the device halves' dispatchElementBytes):
// elements of 1, 2, 4 or 8 bytes, else unsupported "data type X".
Status checkElementBytes(const GpuKernelContext& ctx, DataType type);
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

// Strided copies (data_movement.cpp), which Slice, Tile, Expand and StridedCopy
// (slice_pad_tile.cpp) run too.
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
