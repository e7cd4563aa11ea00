// The contract between the host half (block_rearrange.cpp) and the device half
// (block_rearrange_impl.cu) of DepthToSpace and SpaceToDepth. Plain C++ (both compilers).
//
// launchPermute moves raw elements: out[i] = in[offset of i's coordinates], one thread per
// output element, on `stream`; it returns the launch's status (naming permuteKernel). It
// assumes the host half checked that dataTypeSize(type) is 1, 2, 4 or 8 (otherwise it
// returns kUnsupported "data type X", which the host half reports as ctx.unsupported
// before calling), that total > 0 and rank <= kPermuteMaxRank.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_shapes.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::block_rearrange {

// The largest rank of a permuted view (device_shapes.h's kMaxRank); DepthToSpace /
// SpaceToDepth use 6.
constexpr int kPermuteMaxRank = kMaxRank;

// A transpose of a packed view: output dim k has dims[k] elements, `strides[k]` apart in
// the input (0 for a dim of one element).
struct PermuteLaunch {
  const void* in = nullptr;
  void* out = nullptr;
  DataType type = DataType::kFloat32;
  int64_t total = 0;  // out's elements
  int rank = 0;
  int64_t dims[kPermuteMaxRank] = {};
  int64_t strides[kPermuteMaxRank] = {};
};

Status launchPermute(const PermuteLaunch& args, cudaStream_t stream);

}  // namespace kiln::cuda::block_rearrange
