// The contract between the host half (col2im_unpool.cpp) and the device half
// (col2im_unpool_impl.cu) of Col2Im, MaxUnpool, CenterCropPad and TensorScatter. Plain C++
// (both compilers).
//
// Each launcher runs one grid-stride kernel on `stream` (gridFor(count) blocks of
// kBlockSize, one thread per element named at `count`) and returns the launch's status.
// It assumes the host half checked everything: count > 0, the params filled from validated
// shapes and attributes (ranks <= kMaxTensorRank), index operands int64 or int32 as their
// flag says. Col2Im takes `type` in device_types::kStorageFloats; the others move elements
// as unsigned words and take any type of 1, 2, 4 or 8 bytes (isWordSized). Outside that a
// launcher returns kUnsupported "data type X", which the host half reports as
// ctx.unsupported before calling.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/ops/spatial_misc_common.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::sm {

// ============================ Col2Im ============================

struct Col2ImParams {
  int dims = 0;
  int64_t image[kMaxTensorRank] = {}, block[kMaxTensorRank] = {}, dilation[kMaxTensorRank] = {};
  int64_t stride[kMaxTensorRank] = {}, padBegin[kMaxTensorRank] = {}, blocks[kMaxTensorRank] = {};
  int64_t kernelSize = 0, blockCount = 0, imageSize = 0;
};

// Col2ImParams of two spatial dims in 32-bit numbers, for the 2-D kernel.
struct Col2Im2d {
  int height = 0, width = 0, blockH = 0, blockW = 0, dilationH = 1, dilationW = 1;
  int strideH = 1, strideW = 1, padH = 0, padW = 0, blocksH = 0, blocksW = 0;
  int kernelSize = 0, blockCount = 0;
};
// True, with *g filled, when `p` has two spatial dims and every size and offset the 2-D
// kernel forms (a kernel offset times blockCount, an image index) fits in 31 bits.
inline bool col2Im2d(const Col2ImParams& p, Col2Im2d* g) {
  if (p.dims != 2) return false;
  const int64_t limit = int64_t{1} << 30;
  if (p.kernelSize * p.blockCount >= limit || p.imageSize >= limit) return false;
  for (int d = 0; d < 2; ++d) {
    for (int64_t v :
         {p.image[d], p.block[d], p.dilation[d], p.stride[d], p.padBegin[d], p.blocks[d]})
      if (v < 0 || v >= limit) return false;
    if (p.stride[d] == 0 || p.padBegin[d] + p.image[d] + p.block[d] * p.dilation[d] >= 2 * limit)
      return false;  // |y + pad - k * dilation| must fit in an int
  }
  *g = {static_cast<int>(p.image[0]),    static_cast<int>(p.image[1]),
        static_cast<int>(p.block[0]),    static_cast<int>(p.block[1]),
        static_cast<int>(p.dilation[0]), static_cast<int>(p.dilation[1]),
        static_cast<int>(p.stride[0]),   static_cast<int>(p.stride[1]),
        static_cast<int>(p.padBegin[0]), static_cast<int>(p.padBegin[1]),
        static_cast<int>(p.blocks[0]),   static_cast<int>(p.blocks[1]),
        static_cast<int>(p.kernelSize),  static_cast<int>(p.blockCount)};
  return true;
}

// A 2-D plane whose float sums fit a block's shared memory (up to 12,288 elements: 48 KB):
// 16-bit Col2Im sums it by planes (col2ImPlanesDevice), one block a plane.
inline bool col2ImPlanesApply(const Col2Im2d& g) {
  return int64_t(g.height) * g.width <= 12288 && g.height > 0 && g.width > 0;
}

// out[n, c, image...] = the sum of every column entry whose block covers it: in double,
// or in float for 16-bit storage with two spatial dims (col2Im2d; by planes where
// col2ImPlanesApply).
struct Col2ImLaunch {
  const void* columns = nullptr;       // [N, C * kernelSize, blockCount] of `type`
  void* out = nullptr;                 // [N, C, image...] of `type`
  DataType type = DataType::kFloat32;  // both tensors'
  int64_t count = 0;                   // out's elements, one thread each
  Col2ImParams params;
};
Status launchCol2Im(const Col2ImLaunch& args, cudaStream_t stream);

// ============================ MaxUnpool ============================

struct UnpoolParams {
  int rank = 0;
  int64_t inferred[kMaxTensorRank] = {};   // the tensor MaxPool read
  int64_t outStride[kMaxTensorRank] = {};  // packed strides of the (larger) output
  int64_t total = 0;                       // elements of `inferred`
  bool indices64 = true;
};

// y[position of indices[i] in `inferred`, within y's layout] = x[i]; an index outside
// [0, total) is skipped. y must be zeroed first (the host half does).
struct MaxUnpoolLaunch {
  const void* x = nullptr;        // of `type`, `count` elements
  const void* indices = nullptr;  // X's shape, int64 (params.indices64) or int32
  void* y = nullptr;              // the output, of `type`
  DataType type = DataType::kFloat32;
  int64_t count = 0;  // X's elements, one thread each
  UnpoolParams params;
};
Status launchMaxUnpool(const MaxUnpoolLaunch& args, cudaStream_t stream);

// ============================ CenterCropPad ============================

struct CropPadParams {
  int rank = 0;
  int64_t outDims[kMaxTensorRank] = {};
  int64_t inDims[kMaxTensorRank] = {};
  int64_t inStrides[kMaxTensorRank] = {};
  int64_t begin[kMaxTensorRank] = {};  // output index - begin = input index
};

// out[o] = in[o - begin] where that is inside `in`, else zero bits.
struct CenterCropPadLaunch {
  const void* in = nullptr;  // of `type`
  void* out = nullptr;       // of `type`
  DataType type = DataType::kFloat32;
  int64_t count = 0;  // out's elements, one thread each
  CropPadParams params;
};
Status launchCenterCropPad(const CenterCropPadLaunch& args, cudaStream_t stream);

// ============================ TensorScatter ============================

struct ScatterParams {
  int64_t perBatch = 0, seqLen = 0, maxLen = 0, inner = 0;
  bool circular = false;
  const void* starts = nullptr;  // write_indices or nullptr (all 0)
  bool starts64 = true;
};

// Writes update into out (already a copy of past_cache) at each batch's start along the
// sequence axis; a batch whose start the CPU would reject is left unwritten.
struct TensorScatterLaunch {
  const void* update = nullptr;  // [batch, perBatch.., seqLen, inner..] of `type`
  void* out = nullptr;           // [batch, perBatch.., maxLen, inner..] of `type`
  DataType type = DataType::kFloat32;
  int64_t count = 0;  // update's elements, one thread each
  ScatterParams params;
};
Status launchTensorScatter(const TensorScatterLaunch& args, cudaStream_t stream);

}  // namespace kiln::cuda::sm
