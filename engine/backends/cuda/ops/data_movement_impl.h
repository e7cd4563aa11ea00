// The host/device contract of the data-movement copies (host half: data_movement.cpp,
// device half: data_movement_impl.cu): the strided copy, the batched 2-D transposes, the
// pitched row copy and Concat's many-input row copy. slice_pad_tile_impl.h and
// gather_scatter_impl.h build on it (kMaxMovementRank). Plain C++, for g++ and nvcc.
//
// Contract of every launcher here and in those two headers: the host half has worked out
// every size, stride, word width and which kernel runs, and has checked the element size
// (checkElementBytes) or the data type (inDeviceTypes) where a launcher takes one; a
// launcher binds the word or element type, picks the grid (device_common.cuh's gridFor and
// kBlockSize) and launches on `stream`, and returns the launch error named after its kernel
// (KILN_CUDA_CHECK_LAUNCH). Words (`width`) are 1, 2, 4, 8 or 16 bytes (unsigned words of
// those sizes move the data); whole elements (`elementBytes`) are 1, 2, 4 or 8 bytes.
// Pointers are device memory unless a field says otherwise; counts are in words or elements
// as named, never bytes unless named so.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_shapes.h"
#include "kiln/status.h"

namespace kiln::cuda::dm {

// The dims a parameter struct holds (device_shapes.h's kMaxRank); checkRank refuses more.
constexpr int kMaxMovementRank = kMaxRank;

// out[i] = in[base + sum_d (coord_d(i) mod inDims[d]) * inStrides[d]] in words, coord_d(i)
// the coordinates of i in outDims; the mod only when `modulo`.
struct StridedParams {
  int rank = 0;
  bool modulo = false;  // coordinates wrap at inDims (Tile)
  int64_t base = 0;
  int64_t outDims[kMaxMovementRank] = {};
  int64_t inDims[kMaxMovementRank] = {};
  int64_t inStrides[kMaxMovementRank] = {};
};
// `words` output words of `width` bytes through stridedCopyKernel.
Status launchStridedCopy(const void* in, void* out, const StridedParams& params, int64_t words,
                         int width, cudaStream_t stream);

// A batched 2-D transpose: packed in [batch, rows, cols] -> out [batch, cols, rows], elements
// of elementBytes.
struct BatchedTranspose {
  const void* in = nullptr;
  void* out = nullptr;
  int elementBytes = 0;
  int64_t batch = 0, rows = 0, cols = 0;
};
// A strided copy (no wrap) whose output's innermost dim is strided in the input while dim
// `unit` < rank - 1 is contiguous there (input stride 1): a 2-D transpose of those two dims
// inside the others (VOLO's unfold permutes, rank 6 and 4). `in` is at the copy's base;
// `out` is packed in `dims` order; elements of elementBytes.
struct StridedTranspose {
  const void* in = nullptr;
  void* out = nullptr;
  int elementBytes = 0;
  int rank = 0, unit = 0;
  int64_t dims[kMaxMovementRank] = {};
  int64_t inStrides[kMaxMovementRank] = {};
};
// transposeStridedKernel: a 32 x 32 shared tile over (unit, innermost) per block, the other
// dims a batch index (grid z, grid-stride); reads run along `unit`, writes along the
// innermost dim, both coalesced.
Status launchStridedTranspose(const StridedTranspose& transpose, cudaStream_t stream);

// A strided copy (no wrap) whose innermost output dim is strided in the input (or
// contiguous there but in words no wider than an element: odd rows of 2-byte elements),
// moved as rows of that dim: output row r (coordinates over outerDims, the innermost last) reads
// `inner` elements from in + sum_d c_d * outerInStrides[d], stepping by innerStride. A block
// stages rowRunRowsPerBlock rows in shared memory, one thread a row (the coordinates are
// split once per row, not once per element: the element-wise strided copy's 32-bit
// divisions dominated VOLO's rank-5 unfold, 0.505 ms for 87 MB on an H200; the rows' reads
// meet in L1 across the block), then writes them out contiguous, adjacent threads adjacent
// elements. `in` is at the copy's base; `out` is packed; elements of elementBytes.
struct RowRunCopy {
  const void* in = nullptr;
  void* out = nullptr;
  int elementBytes = 0;
  int outerRank = 0;
  int64_t outerDims[kMaxMovementRank] = {};
  int64_t outerInStrides[kMaxMovementRank] = {};
  int64_t rows = 0;  // the product of outerDims
  int inner = 0;     // elements a row
  int64_t innerStride = 0;
};
constexpr int kRowRunBytes = 32768;  // a block's staged rows (dynamic shared memory)
// A staged row's stride in elements: odd, so a warp's 32 rows start in distinct banks.
constexpr int rowRunPitch(int inner) {
  return inner | 1;
}
// Rows a block stages: a multiple of 32, at most 256; 0 when fewer than 32 rows of
// `inner` elements fit kRowRunBytes (the copy then takes another kernel).
inline int rowRunRowsPerBlock(int inner, int elementBytes) {
  const int fit = kRowRunBytes / (rowRunPitch(inner) * elementBytes);
  return fit < 32 ? 0 : (fit >= 256 ? 256 : fit / 32 * 32);
}
Status launchRowRunCopy(const RowRunCopy& copy, cudaStream_t stream);

// A side at most this long makes a transpose "narrow": one thread per element of the long
// side moves the short side's values, where a 32x32 tile would leave most threads idle.
constexpr int kNarrowTransposeSide = 8;
// 2-byte elements, rows in [1, kNarrowTransposeSide], an even column count, `in` and `out`
// 4-byte aligned: each thread moves two neighbouring columns (transposeNarrowPairsKernel).
Status launchTransposeNarrowPairs(const BatchedTranspose& transpose, cudaStream_t stream);
// rows or cols at most kNarrowTransposeSide (rows taken as the narrow side when both are):
// transposeNarrowKernel.
Status launchTransposeNarrow(const BatchedTranspose& transpose, cudaStream_t stream);
// Any sides: 32x32 shared-memory tiles (transposeTiledKernel).
Status launchTransposeTiled(const BatchedTranspose& transpose, cudaStream_t stream);

// dst[r * dstPitch + c] = src[r * srcPitch + c] for r < n / cols, c < cols, in words of
// `width` bytes (pitches and cols in words).
struct RowCopy {
  const void* src = nullptr;
  int64_t srcPitch = 0;
  void* dst = nullptr;
  int64_t dstPitch = 0;
  int64_t cols = 0;
  int64_t n = 0;
  int width = 1;
};
Status launchCopyRows(const RowCopy& copy, cudaStream_t stream);

// Concat of up to kConcatParts inputs in one launch: output word i of the chunk (rows of
// start[count] - start[0] words) reads the part whose column range holds it. One copyRows
// launch per input made DenseNet-121's 58 Concats (up to 25 inputs of 64-byte rows each)
// 5.2 ms of launch-bound copies on an H200.
constexpr int kConcatParts = 32;
struct ConcatRows {
  const void* src[kConcatParts] = {};    // the parts, packed [rows, their columns]
  int64_t start[kConcatParts + 1] = {};  // output column (words) of each part, then the chunk's end
  int count = 0;                         // parts
  void* dst = nullptr;
  int64_t outCols = 0;  // an output row, in words
  int64_t n = 0;        // words this chunk writes: rows * (start[count] - start[0])
  int width = 1;
};
// Launches concatRowsKernel when n > 0; checks the last launch error either way.
Status launchConcatRows(const ConcatRows& chunk, cudaStream_t stream);

// A Split (or Concat) of rows into (from) parts narrower than 16-byte words, in one launch
// through shared memory: a block stages a tile of tileRows rows of the whole side
// ([rows, start[count]] elements, rows of at most kRowTileBytes), read (written) as 16-byte
// words, and each warp writes (reads) one part's row of the tile at a time, adjacent lanes
// adjacent elements. A pitched row copy per part in 2-byte words moved FocalNet-tiny's
// channels-last Split (195 fp16 channels into 96 + 96 + 3) at 0.37 TB/s on an H200, and
// element stores 16 bytes apart (a thread per 16-byte word of the whole row) were slower
// still. Parts are packed [rows, their columns]; every part has at least one column.
constexpr int kRowTileBytes = 32768;  // the staged tile's shared memory (static)
struct RowTileParts {
  void* parts[kConcatParts] = {};        // a Split's outputs (null: not read) or a Concat's inputs
  int64_t start[kConcatParts + 1] = {};  // each part's first column in the whole row, then its end
  int count = 0;
  void* whole = nullptr;  // a Split's input or a Concat's output; 16-byte aligned
  int64_t rows = 0;
  // Rows a block stages: a multiple of 16 / gcd(row bytes, 16), so every tile starts on a
  // 16-byte word; tileRows * row bytes <= kRowTileBytes.
  int tileRows = 0;
  int elementBytes = 0;  // 1, 2, 4 or 8
  bool split = true;
};
Status launchRowTileParts(const RowTileParts& parts, cudaStream_t stream);

}  // namespace kiln::cuda::dm
