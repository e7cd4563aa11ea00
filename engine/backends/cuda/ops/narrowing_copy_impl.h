// The narrowing strided copies' host/device contract (host half: data_movement.cpp's
// launchStrided, when the output's type is not the input's; device half:
// narrowing_copy_impl.cu). A 16-bit engine's float32 input that only Transposes read is read
// in place (context_plan.cpp), and those Transposes round it to the engine's type as they
// move it: one pass over the input instead of a conversion pass and a copy. Plain C++, for
// g++ and nvcc.
//
// Contract of both launchers: `in` is float32, `out` float16 or bfloat16 (outType; another
// type is an internal error), each element rounded to nearest even as convertFloatBuffer
// rounds it, so the result is bit for bit the conversion followed by the copy; the host half
// checked every condition named below; enqueued on `stream`, never synchronizes; a launch
// error names the kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/ops/data_movement_impl.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::dm {

// out[i] = in[sum_d coord_d(i) * inStrides[d]], coord_d(i) the coordinates of i in outDims
// (rank dims, no wrap). With a pack P of 4, 8 or 16 a thread moves P output elements
// neighbouring in the innermost dim, read as P / 4 16-byte float4s and written as one 8-byte
// word (P = 4) or P / 8 16-byte words: outDims[rank - 1] is a multiple of P, inStrides[rank - 1]
// is 1, every other stride a multiple of 4, `in` 16-byte and `out` min(2P, 16)-byte aligned.
// Pack 1: one element a thread, any strides.
struct NarrowingCopy {
  const float* in = nullptr;
  void* out = nullptr;
  DataType outType = DataType::kFloat16;
  int rank = 0;
  int pack = 1;
  int64_t outDims[kMaxMovementRank] = {};
  int64_t inStrides[kMaxMovementRank] = {};
};
// `elements` = the product of outDims.
Status launchNarrowingCopy(const NarrowingCopy& copy, int64_t elements, cudaStream_t stream);

// A batched 2-D transpose in [batch, rows, cols] -> out [batch, cols, rows] with rows in
// [1, kNarrowTransposeSide] (an image's channels to NHWC), cols even, `in` 8-byte and `out`
// 4-byte aligned: a thread takes two neighbouring columns (one float2 a row) and writes their
// 2 * rows outputs as rows 4-byte words.
struct NarrowingNarrowTranspose {
  const float* in = nullptr;
  void* out = nullptr;
  DataType outType = DataType::kFloat16;
  int64_t batch = 0, rows = 0, cols = 0;
};
Status launchNarrowingNarrowTranspose(const NarrowingNarrowTranspose& transpose,
                                      cudaStream_t stream);

}  // namespace kiln::cuda::dm
