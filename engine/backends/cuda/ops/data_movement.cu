// Data movement kernels of the CUDA backend: Transpose, Concat, Split, Slice, Pad, Expand,
// Tile, Gather, GatherElements, GatherND, ScatterND, ScatterElements/Scatter and
// ReverseSequence, with the opset ranges, attributes, defaults and error messages of the
// CPU kernels (backends/cpu/ops/shape_ops.cpp, slice_pad.cpp, gather_scatter.cpp,
// tensor_extra_ops.cpp).
//
// Contract:
// - Elements move as opaque unsigned words of their byte size, so every fixed-size data
//   type is served. Copies whose innermost run is contiguous are widened to words of up to
//   16 bytes when sizes and addresses allow. Only the Scatter reductions compute, in
//   ComputeType<T> like the CPU.
// - Shape parameters (starts/ends/axes/steps, pads, split, repeats, Expand's shape, Pad's
//   constant value) are read on the host through hostInput(). Index tensors (Gather*,
//   Scatter*, ReverseSequence's sequence_lens) stay on the device and are never waited
//   on: negative indices count from the end, but an index outside [-dim, dim) cannot
//   raise the CPU's error, so a gather reads zeros for it and a scatter skips it;
//   sequence lengths are clamped to [0, time steps].
// - Scatters are deterministic and apply duplicates in the CPU's order. Reduction "none"
//   lets the last duplicate win: a per-slot atomicMax of (update index + 1) picks it and
//   only that update writes. The reductions run duplicates in index order: ScatterND
//   serially over the updates and in parallel over each slice's elements (correct, slow
//   for many updates of tiny slices); ScatterElements serially along the axis and in
//   parallel over the other positions, the only ones that can collide.
// - Strided copies (Slice, Expand, Tile, Transpose) drop unit dims and merge dims that
//   are contiguous in the input first; a batched 2-D transpose then runs a shared-memory
//   tiled kernel (or, with a side of at most 8, one thread per element of the long
//   side), a contiguous one a cudaMemcpyAsync. Ranks above kMaxRank after merging are
//   refused as unsupported.
#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "ops/output_size.h"
#include "ops/pad_params.h"
#include "ops/slice_params.h"
#include "ops/split_params.h"

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
namespace {

// Output sizes past this are refused, as on the CPU.
using ops::kMaxOutputElements;  // ops/output_size.h

enum ReduceOp : int { kReduceNone = 0, kReduceAdd, kReduceMul, kReduceMax, kReduceMin };

// ============================ device helpers ============================

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

template <class T>
__device__ __forceinline__ typename ComputeType<T>::type toCompute(T v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return toFloat(v);
  } else {
    return v;
  }
}

template <class T, class C>
__device__ __forceinline__ T fromCompute(C v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return fromFloat<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// The CPU's reduceInto for one element: `a` the current value, `b` the update.
template <class T>
__device__ __forceinline__ T applyReduction(T a, T b, int op) {
  if (op == kReduceNone) return b;
  const auto x = toCompute(a);
  const auto y = toCompute(b);
  switch (op) {
    case kReduceAdd:
      return fromCompute<T>(x + y);
    case kReduceMul:
      return fromCompute<T>(x * y);
    case kReduceMax:
      return x < y ? b : a;  // std::max(x, y)
    default:
      return y < x ? b : a;  // std::min(x, y)
  }
}

// ============================ strided copy ============================

struct StridedParams {
  int rank = 0;
  bool modulo = false;  // coordinates wrap at inDims (Tile)
  int64_t base = 0;
  int64_t outDims[kMaxRank] = {};
  int64_t inDims[kMaxRank] = {};
  int64_t inStrides[kMaxRank] = {};
};

// out[i] = in[base + sum_d (coord_d(i) mod inDims[d]) * inStrides[d]].
template <class V>
__global__ void stridedCopyKernel(const V* in, V* out, StridedParams p, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t rest = i;
    int64_t offset = p.base;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= p.rank) continue;
      int64_t c = 0;
      rest = divMod(rest, p.outDims[d], &c);
      if (p.modulo) divMod(c, p.inDims[d], &c);
      offset += c * p.inStrides[d];
    }
    out[i] = in[offset];
  }
}

constexpr int kTile = 32;
constexpr int kTileRows = 8;

// in [batch, rows, cols] -> out [batch, cols, rows] through a padded shared-memory tile.
// The loops depend on the block index only, so every thread reaches each barrier.
template <class T>
__global__ void transposeTiledKernel(const T* in, T* out, int64_t batch, int64_t rows,
                                     int64_t cols) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t tilesR = (rows + kTile - 1) / kTile;
  const int64_t tilesC = (cols + kTile - 1) / kTile;
  const int64_t plane = rows * cols;
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    const T* src = in + b * plane;
    T* dst = out + b * plane;
    for (int64_t tr = blockIdx.y; tr < tilesR; tr += gridDim.y) {
      for (int64_t tc = blockIdx.x; tc < tilesC; tc += gridDim.x) {
        const int64_t r0 = tr * kTile, c0 = tc * kTile;
        for (int j = threadIdx.y; j < kTile; j += kTileRows) {
          const int64_t r = r0 + j, c = c0 + threadIdx.x;
          if (r < rows && c < cols) tile[j][threadIdx.x] = src[r * cols + c];
        }
        __syncthreads();
        for (int j = threadIdx.y; j < kTile; j += kTileRows) {
          const int64_t c = c0 + j, r = r0 + threadIdx.x;
          if (c < cols && r < rows) dst[c * rows + r] = tile[threadIdx.x][j];
        }
        __syncthreads();
      }
    }
  }
}

// A batched 2-D transpose with one short side (at most kNarrow), where a 32x32 tile
// would leave most of its threads idle (an image's 3 channels to NHWC: 256x3x50176):
// one thread per element of the long side moves its `narrow` values; neighbouring
// threads touch neighbouring addresses on both sides.
constexpr int kNarrow = 8;
template <class T, bool kNarrowRows>
__global__ void transposeNarrowKernel(const T* in, T* out, int64_t batch, int64_t rows,
                                      int64_t cols) {
  const int64_t longSide = kNarrowRows ? cols : rows;
  const int64_t narrow = kNarrowRows ? rows : cols;
  const int64_t total = batch * longSide, plane = rows * cols;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += step) {
    const int64_t b = e / longSide, i = e - b * longSide;
    const T* src = in + b * plane;
    T* dst = out + b * plane;
    for (int64_t k = 0; k < narrow; ++k) {
      const int64_t r = kNarrowRows ? k : i, c = kNarrowRows ? i : k;
      dst[c * rows + r] = src[r * cols + c];
    }
  }
}

// The narrow-rows case of 2-byte elements (fp16 images to NHWC): each thread moves two
// neighbouring columns, reading one 4-byte pair per row and writing its 2 * R outputs as
// R 4-byte words (two bytes per thread per access was half the bandwidth).
template <int R>
__global__ void transposeNarrowPairsKernel(const uint16_t* in, uint16_t* out, int64_t batch,
                                           int64_t cols) {
  const int64_t pairs = cols / 2, total = batch * pairs, plane = R * cols;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += step) {
    const int64_t b = e / pairs, c = 2 * (e - b * pairs);
    uint32_t column[R];
#pragma unroll
    for (int r = 0; r < R; ++r)
      column[r] = *reinterpret_cast<const uint32_t*>(in + b * plane + r * cols + c);
    uint32_t* dst = reinterpret_cast<uint32_t*>(out + b * plane + c * R);
#pragma unroll
    for (int w = 0; w < R; ++w) {  // outputs 2w and 2w + 1 of (c, r0), (c, r1), ..., (c + 1, r0)...
      const int k0 = 2 * w, k1 = 2 * w + 1;
      const uint32_t lo = (column[k0 % R] >> (16 * (k0 / R))) & 0xffffu;
      const uint32_t hi = (column[k1 % R] >> (16 * (k1 / R))) & 0xffffu;
      dst[w] = lo | (hi << 16);
    }
  }
}

template <int R>
bool launchNarrowPairs(const void* src, void* dst, int64_t batch, int64_t cols,
                       cudaStream_t stream) {
  transposeNarrowPairsKernel<R><<<gridFor(batch * cols / 2), kBlockSize, 0, stream>>>(
      static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), batch, cols);
  return true;
}

// Runs the pairs kernel when it applies: 2-byte elements, rows <= 8, an even column
// count and 4-byte aligned buffers.
bool tryNarrowPairs(DataType type, const void* src, void* dst, int64_t batch, int64_t rows,
                    int64_t cols, cudaStream_t stream) {
  if (dataTypeSize(type) != 2 || cols % 2 != 0 || reinterpret_cast<uintptr_t>(src) % 4 != 0 ||
      reinterpret_cast<uintptr_t>(dst) % 4 != 0)
    return false;
  switch (rows) {
    case 1:
      return launchNarrowPairs<1>(src, dst, batch, cols, stream);
    case 2:
      return launchNarrowPairs<2>(src, dst, batch, cols, stream);
    case 3:
      return launchNarrowPairs<3>(src, dst, batch, cols, stream);
    case 4:
      return launchNarrowPairs<4>(src, dst, batch, cols, stream);
    case 5:
      return launchNarrowPairs<5>(src, dst, batch, cols, stream);
    case 6:
      return launchNarrowPairs<6>(src, dst, batch, cols, stream);
    case 7:
      return launchNarrowPairs<7>(src, dst, batch, cols, stream);
    case 8:
      return launchNarrowPairs<8>(src, dst, batch, cols, stream);
    default:
      return false;
  }
}

// dst[r * dstPitch + c] = src[r * srcPitch + c] for r < n / cols, c < cols.
template <class V>
__global__ void copyRowsKernel(const V* src, int64_t srcPitch, V* dst, int64_t dstPitch,
                               int64_t cols, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t c = 0;
    const int64_t r = divMod(i, cols, &c);
    dst[r * dstPitch + c] = src[r * srcPitch + c];
  }
}

// Concat of many inputs in one launch: output word i of a chunk (rows x chunkCols words,
// chunkCols = columns [start[0], start[count])) reads the part whose column range holds it.
// One copyRows launch per input made DenseNet-121's 58 Concats (up to 25 inputs of 64-byte
// rows each) 5.2 ms of launch-bound copies on an H200.
constexpr int kConcatParts = 32;
template <typename V>
struct ConcatChunk {
  const V* src[kConcatParts];
  int64_t start[kConcatParts + 1];  // output column (words) of each part, then the chunk's end
  int count = 0;
};

template <typename V>
__global__ void concatRowsKernel(ConcatChunk<V> chunk, V* dst, int64_t outCols, int64_t n) {
  const int64_t first = chunk.start[0], chunkCols = chunk.start[chunk.count] - first;
  KILN_DM_GRID_LOOP(i, n) {
    int64_t c = 0;
    const int64_t r = divMod(i, chunkCols, &c);
    c += first;
    int p = 0;
    while (p + 1 < chunk.count && c >= chunk.start[p + 1]) ++p;
    const int64_t cols = chunk.start[p + 1] - chunk.start[p];
    dst[r * outCols + c] = chunk.src[p][r * cols + (c - chunk.start[p])];
  }
}

// ============================ Pad ============================

enum PadMode : int { kPadConstant = 0, kPadReflect, kPadEdge, kPadWrap };

struct PadParams {
  int rank = 0;
  int mode = kPadConstant;
  int64_t outDims[kMaxRank] = {};
  int64_t inStrides[kMaxRank] = {};
  int64_t padBegin[kMaxRank] = {};     // positive leading pad
  int64_t regionStart[kMaxRank] = {};  // first input index kept (negative pads crop)
  int64_t regionLen[kMaxRank] = {};    // input indices kept
};

// The CPU's padAxisMap, evaluated per element.
template <class T>
__global__ void padKernel(const T* in, T* out, PadParams p, T value, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t rest = i;
    int64_t offset = 0;
    bool border = false;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= p.rank) continue;
      int64_t c = 0;
      rest = divMod(rest, p.outDims[d], &c);
      int64_t t = c - p.padBegin[d];
      const int64_t len = p.regionLen[d];
      if (t < 0 || t >= len) {
        if (p.mode == kPadConstant) {
          border = true;
          t = 0;
        } else if (p.mode == kPadEdge) {
          t = t < 0 ? 0 : len - 1;
        } else if (p.mode == kPadWrap) {
          t = ((t % len) + len) % len;
        } else if (len == 1) {  // reflect of one element repeats it
          t = 0;
        } else {
          const int64_t period = 2 * (len - 1);
          t = ((t % period) + period) % period;
          if (t >= len) t = period - t;
        }
      }
      offset += (p.regionStart[d] + t) * p.inStrides[d];
    }
    out[i] = border ? value : in[offset];
  }
}

// ============================ Gather family ============================

// data [outer, dim, inner] -> out [outer, count, inner]; rows of `inner` words.
template <class V>
__global__ void gatherKernel(const V* data, const void* indices, bool is64, V* out, int64_t dim,
                             int64_t count, int64_t inner, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t c = 0, t = 0;
    const int64_t row = divMod(i, inner, &c);
    const int64_t o = divMod(row, count, &t);
    const int64_t v = normalizeIndex(loadIndex(indices, is64, t), dim);
    out[i] = v < 0 ? V{} : data[(o * dim + v) * inner + c];
  }
}

// GatherElements/ScatterElements addressing: position i of `indices` (shape idxDims)
// addresses data at i's coordinates with the axis coordinate replaced by the index.
struct ElementParams {
  int rank = 0;
  int axis = 0;
  int64_t axisDim = 0;  // data's dim along axis
  int64_t idxDims[kMaxRank] = {};
  int64_t idxStrides[kMaxRank] = {};
  int64_t dataStrides[kMaxRank] = {};
};

__device__ __forceinline__ int64_t elementOffset(const ElementParams& p, const void* indices,
                                                 bool is64, int64_t i) {
  const int64_t v = normalizeIndex(loadIndex(indices, is64, i), p.axisDim);
  if (v < 0) return -1;
  int64_t rest = i;
  int64_t offset = 0;
#pragma unroll
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (d >= p.rank) continue;
    int64_t c = 0;
    rest = divMod(rest, p.idxDims[d], &c);
    offset += (d == p.axis ? v : c) * p.dataStrides[d];
  }
  return offset;
}

template <class T>
__global__ void gatherElementsKernel(const T* data, const void* indices, bool is64, T* out,
                                     ElementParams p, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    const int64_t offset = elementOffset(p, indices, is64, i);
    out[i] = offset < 0 ? T{} : data[offset];
  }
}

// GatherND/ScatterND addressing: tuple t of k indices selects slot
// (t / perBatch) * batchSlots + sum_j index_j * slotStrides[j], in units of slices.
struct NdParams {
  int k = 0;
  int64_t perBatch = 0;
  int64_t batchSlots = 0;
  int64_t dims[kMaxRank] = {};
  int64_t slotStrides[kMaxRank] = {};
};

__device__ __forceinline__ int64_t ndSlot(const NdParams& p, const void* indices, bool is64,
                                          int64_t t) {
  int64_t slot = p.perBatch == 0 ? 0 : (t / p.perBatch) * p.batchSlots;
  for (int j = 0; j < p.k; ++j) {
    const int64_t v = normalizeIndex(loadIndex(indices, is64, t * p.k + j), p.dims[j]);
    if (v < 0) return -1;
    slot += v * p.slotStrides[j];
  }
  return slot;
}

template <class V>
__global__ void gatherNdKernel(const V* data, const void* indices, bool is64, V* out, NdParams p,
                               int64_t slice, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t s = 0;
    const int64_t t = divMod(i, slice, &s);
    const int64_t slot = ndSlot(p, indices, is64, t);
    out[i] = slot < 0 ? V{} : data[slot * slice + s];
  }
}

// ============================ Scatter family ============================

// Where update t (a row of the updates) lands, in units of rows of the output; -1 skips.
struct NdLocator {
  NdParams p;
  const void* indices = nullptr;
  bool is64 = false;
  __device__ int64_t operator()(int64_t t) const { return ndSlot(p, indices, is64, t); }
};
struct ElementLocator {
  ElementParams p;
  const void* indices = nullptr;
  bool is64 = false;
  __device__ int64_t operator()(int64_t t) const { return elementOffset(p, indices, is64, t); }
};

// winner[slot] = 1 + the last update index landing on slot.
template <class L>
__global__ void markLastWriterKernel(L locate, unsigned long long* winner, int64_t n) {
  KILN_DM_GRID_LOOP(t, n) {
    const int64_t slot = locate(t);
    if (slot >= 0) atomicMax(&winner[slot], static_cast<unsigned long long>(t + 1));
  }
}

// Reduction "none": each row lands where it points, unless a later row (winner) does too.
template <class L, class V>
__global__ void scatterRowsKernel(L locate, const unsigned long long* winner, const V* updates,
                                  V* out, int64_t row, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t s = 0;
    const int64_t t = divMod(i, row, &s);
    const int64_t slot = locate(t);
    if (slot < 0) continue;
    if (winner != nullptr && winner[slot] != static_cast<unsigned long long>(t + 1)) continue;
    out[slot * row + s] = updates[i];
  }
}

// ScatterND reductions: the slice's elements in parallel, the updates in index order.
template <class T>
__global__ void scatterNdReduceKernel(NdLocator locate, const T* updates, T* out, int64_t tuples,
                                      int64_t slice, int op) {
  KILN_DM_GRID_LOOP(s, slice) {
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t slot = locate(t);
      if (slot < 0) continue;
      T* dst = out + slot * slice + s;
      *dst = applyReduction(*dst, updates[t * slice + s], op);
    }
  }
}

// ScatterElements by lines: every position but the axis in parallel, the axis in order.
template <class T>
__global__ void scatterElementsLinesKernel(ElementParams p, const void* indices, bool is64,
                                           const T* updates, T* out, int op, int64_t lines) {
  KILN_DM_GRID_LOOP(line, lines) {
    int64_t rest = line;
    int64_t idxBase = 0, dataBase = 0;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= p.rank || d == p.axis) continue;
      int64_t c = 0;
      rest = divMod(rest, p.idxDims[d], &c);
      idxBase += c * p.idxStrides[d];
      dataBase += c * p.dataStrides[d];
    }
    const int64_t len = p.idxDims[p.axis];
    for (int64_t j = 0; j < len; ++j) {
      const int64_t pos = idxBase + j * p.idxStrides[p.axis];
      const int64_t v = normalizeIndex(loadIndex(indices, is64, pos), p.axisDim);
      if (v < 0) continue;
      T* dst = out + dataBase + v * p.dataStrides[p.axis];
      *dst = applyReduction(*dst, updates[pos], op);
    }
  }
}

// ============================ ReverseSequence ============================

// x is [steps, batch, inner] (timeFirst) or [batch, steps, inner]; rows of `inner` words.
template <class V>
__global__ void reverseSequenceKernel(const V* in, V* out, const void* lens, bool is64,
                                      bool timeFirst, int64_t dim1, int64_t steps, int64_t inner,
                                      int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t c = 0, a = 0;
    const int64_t rest = divMod(i, inner, &c);
    const int64_t z = divMod(rest, dim1, &a);
    const int64_t b = timeFirst ? a : z;
    const int64_t t = timeFirst ? z : a;
    int64_t len = loadIndex(lens, is64, b);
    len = len < 0 ? 0 : (len > steps ? steps : len);
    const int64_t from = t < len ? len - 1 - t : t;
    const int64_t row = timeFirst ? from * dim1 + b : b * dim1 + from;
    out[i] = in[row * inner + c];
  }
}

// ============================ host helpers ============================

bool hasInput(const GpuKernelContext& ctx, size_t i) {
  return i < ctx.inputCount() && ctx.hasInput(i);
}

Status requireInputs(const GpuKernelContext& ctx, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (!hasInput(ctx, i)) return ctx.error("required input " + std::to_string(i) + " is missing");
  }
  return Status::ok();
}

// Maps a possibly negative axis into [0, rank) (a scalar has no axis).
Status normalizeAxis(const GpuKernelContext& ctx, int64_t axis, int64_t rank, int64_t* out) {
  if (axis < -rank || axis >= rank) {
    return ctx.error("axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  *out = axis < 0 ? axis + rank : axis;
  return Status::ok();
}

// Reads input i (an integer tensor of rank <= 1) on the host; absent leaves `out` as is.
Status readInts(GpuKernelContext& ctx, size_t i, const char* what, std::vector<int64_t>* out) {
  if (!hasInput(ctx, i)) return Status::ok();
  KILN_ASSIGN_OR_RETURN(Tensor t, ctx.hostInput(i));
  if (!isInteger(t.type())) {
    return ctx.error(std::string(what) + " must be an integer tensor, got " +
                     dataTypeName(t.type()));
  }
  if (t.rank() > 1)
    return ctx.error(std::string(what) + " must be 1-D, got rank " + std::to_string(t.rank()));
  *out = t.toInt64Vector();
  return Status::ok();
}

Status checkElementCount(const GpuKernelContext& ctx, const Shape& shape, const char* what) {
  Status s = ops::checkOutputElements(shape, what);
  return s.isOk() ? s : ctx.error(s.message());
}

Status checkIndexType(const GpuKernelContext& ctx, DataType type, const char* what) {
  if (type == DataType::kInt64 || type == DataType::kInt32) return Status::ok();
  return ctx.error(std::string(what) + " must be int32 or int64, got " + dataTypeName(type));
}

Status checkRank(const GpuKernelContext& ctx, int64_t rank, const char* what) {
  if (rank <= kMaxRank) return Status::ok();
  return ctx.unsupported(std::string(what) + " of rank " + std::to_string(rank) + " (at most " +
                         std::to_string(kMaxRank) + ")");
}

std::vector<int64_t> contiguousStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

int64_t dimProduct(const Shape& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end && d < shape.size(); ++d) p *= shape[d];
  return p;
}

// The widest word (16, 8, 4, 2 or 1 bytes) dividing every byte count and address.
int wordWidth(std::initializer_list<int64_t> bytes, std::initializer_list<const void*> pointers) {
  for (int w = 16; w > 1; w /= 2) {
    bool ok = true;
    for (int64_t b : bytes) ok = ok && b % w == 0;
    for (const void* p : pointers) ok = ok && reinterpret_cast<uintptr_t>(p) % w == 0;
    if (ok) return w;
  }
  return 1;
}

char* byteOffset(void* p, int64_t bytes) {
  return static_cast<char*>(p) + bytes;
}

Status copyBytes(GpuKernelContext& ctx, void* dst, const void* src, int64_t bytes) {
  if (bytes <= 0) return Status::ok();
  KILN_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                                  ctx.stream()));
  return Status::ok();
}

// Copies `rows` rows of colBytes between pitched byte buffers.
Status copyRows(GpuKernelContext& ctx, const void* src, int64_t srcPitch, void* dst,
                int64_t dstPitch, int64_t rows, int64_t colBytes) {
  if (rows <= 0 || colBytes <= 0) return Status::ok();
  if (rows == 1 || (srcPitch == colBytes && dstPitch == colBytes))
    return copyBytes(ctx, dst, src, rows * colBytes);
  const int w = wordWidth({srcPitch, dstPitch, colBytes}, {src, dst});
  const int64_t cols = colBytes / w;
  const int64_t n = rows * cols;
  KILN_DM_DISPATCH_WIDTH(w, {
    copyRowsKernel<<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(
        static_cast<const V*>(src), srcPitch / w, static_cast<V*>(dst), dstPitch / w, cols, n);
  });
  KILN_CUDA_CHECK_LAUNCH("copyRowsKernel");
  return Status::ok();
}

// A strided read of the input into the packed output: output coordinate c_d reads
// input offset base + (c_d mod inDims[d]) * inStrides[d] (inDims = outDims except Tile).
struct StridedCopy {
  std::vector<int64_t> outDims, inDims, inStrides;
  int64_t base = 0;
};

// Drops unit dims and merges a dim into the one before it when the pair is contiguous
// in the input and the inner one does not wrap.
void simplify(StridedCopy* copy) {
  StridedCopy out;
  out.base = copy->base;
  for (size_t d = 0; d < copy->outDims.size(); ++d) {
    const int64_t dim = copy->outDims[d], in = copy->inDims[d], stride = copy->inStrides[d];
    if (dim == 1) continue;
    if (!out.outDims.empty() && in == dim && out.inStrides.back() == stride * dim) {
      out.outDims.back() *= dim;
      out.inDims.back() *= dim;
      out.inStrides.back() = stride;
      continue;
    }
    out.outDims.push_back(dim);
    out.inDims.push_back(in);
    out.inStrides.push_back(stride);
  }
  *copy = std::move(out);
}

// True when `copy` reads a packed [batch, rows, cols] input into [batch, cols, rows].
bool batchedTranspose(const StridedCopy& c, int64_t* batch, int64_t* rows, int64_t* cols) {
  const std::vector<int64_t>& d = c.outDims;
  const std::vector<int64_t>& s = c.inStrides;
  if (d.size() == 2 && s[0] == 1 && s[1] == d[0]) {
    *batch = 1;
    *rows = d[1];
    *cols = d[0];
    return true;
  }
  if (d.size() == 3 && s[1] == 1 && s[2] == d[1] && s[0] == d[1] * d[2]) {
    *batch = d[0];
    *rows = d[2];
    *cols = d[1];
    return true;
  }
  return false;
}

Status launchTranspose(GpuKernelContext& ctx, const DeviceTensor& in, const void* src, void* dst,
                       int64_t batch, int64_t rows, int64_t cols) {
  if (rows <= kNarrow && tryNarrowPairs(in.type, src, dst, batch, rows, cols, ctx.stream())) {
    KILN_CUDA_CHECK_LAUNCH("transposeNarrowPairsKernel");
    ctx.setImplementation("narrow transpose, pairs " + std::to_string(batch) + "x" +
                          std::to_string(rows) + "x" + std::to_string(cols));
    return Status::ok();
  }
  if (rows <= kNarrow || cols <= kNarrow) {
    const bool narrowRows = rows <= kNarrow;
    const unsigned grid = gridFor(batch * (narrowRows ? cols : rows));
    KILN_DISPATCH_BYTES(in.type, ctx, {
      if (narrowRows)
        transposeNarrowKernel<T, true><<<grid, kBlockSize, 0, ctx.stream()>>>(
            static_cast<const T*>(src), static_cast<T*>(dst), batch, rows, cols);
      else
        transposeNarrowKernel<T, false><<<grid, kBlockSize, 0, ctx.stream()>>>(
            static_cast<const T*>(src), static_cast<T*>(dst), batch, rows, cols);
    });
    KILN_CUDA_CHECK_LAUNCH("transposeNarrowKernel");
    ctx.setImplementation("narrow transpose " + std::to_string(batch) + "x" + std::to_string(rows) +
                          "x" + std::to_string(cols));
    return Status::ok();
  }
  const int64_t tilesR = (rows + kTile - 1) / kTile, tilesC = (cols + kTile - 1) / kTile;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(tilesC, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(tilesR, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(batch, 65535)));
  const dim3 block(kTile, kTileRows);
  KILN_DISPATCH_BYTES(in.type, ctx, {
    transposeTiledKernel<<<grid, block, 0, ctx.stream()>>>(static_cast<const T*>(src),
                                                           static_cast<T*>(dst), batch, rows, cols);
  });
  KILN_CUDA_CHECK_LAUNCH("transposeTiledKernel");
  ctx.setImplementation("tiled transpose " + std::to_string(batch) + "x" + std::to_string(rows) +
                        "x" + std::to_string(cols));
  return Status::ok();
}

// Runs `copy` from `in` into `out` (whose shape is copy.outDims).
Status launchStrided(GpuKernelContext& ctx, const DeviceTensor& in, const DeviceTensor& out,
                     StridedCopy copy) {
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  const int64_t es = static_cast<int64_t>(dataTypeSize(in.type));
  simplify(&copy);
  const int rank = static_cast<int>(copy.outDims.size());
  bool wraps = false;
  for (int d = 0; d < rank; ++d) wraps = wraps || copy.inDims[d] != copy.outDims[d];
  const char* src = byteOffset(in.data, copy.base * es);
  if (rank == 0 || (rank == 1 && copy.inStrides[0] == 1 && !wraps)) {
    ctx.setImplementation("copy");
    return copyBytes(ctx, out.data, src, n * es);
  }
  int64_t batch = 0, rows = 0, cols = 0;
  if (!wraps && batchedTranspose(copy, &batch, &rows, &cols))
    return launchTranspose(ctx, in, src, out.data, batch, rows, cols);
  KILN_RETURN_IF_ERROR(checkRank(ctx, rank, "strided copy"));
  // Widen the innermost run when it is contiguous in the input.
  int w = static_cast<int>(es);
  const int last = rank - 1;
  if (copy.inStrides[last] == 1) {
    w = wordWidth({copy.outDims[last] * es, copy.inDims[last] * es, copy.base * es},
                  {in.data, out.data});
    for (int d = 0; d < last; ++d) {
      while (w > es && (copy.inStrides[d] * es) % w != 0) w /= 2;
    }
  }
  StridedParams p;
  p.rank = rank;
  p.modulo = wraps;
  p.base = copy.base * es / w;
  for (int d = 0; d < rank; ++d) {
    const int64_t scale = d == last ? es : 1;
    p.outDims[d] = copy.outDims[d] * scale / (d == last ? w : 1);
    p.inDims[d] = copy.inDims[d] * scale / (d == last ? w : 1);
    p.inStrides[d] = d == last ? copy.inStrides[d] : copy.inStrides[d] * es / w;
  }
  const int64_t words = n * es / w;
  KILN_DM_DISPATCH_WIDTH(w, {
    stridedCopyKernel<<<gridFor(words), kBlockSize, 0, ctx.stream()>>>(
        static_cast<const V*>(in.data), static_cast<V*>(out.data), p, words);
  });
  KILN_CUDA_CHECK_LAUNCH("stridedCopyKernel");
  ctx.setImplementation("strided copy, rank " + std::to_string(rank) + ", " + std::to_string(w) +
                        "-byte words");
  return Status::ok();
}

// ============================ Transpose, Concat, Split ============================

Status transposeKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& in = ctx.input(0);
  std::vector<int64_t> perm(in.rank());
  for (int d = 0; d < in.rank(); ++d) perm[d] = in.rank() - 1 - d;
  if (ctx.node().hasAttr("perm")) perm = ctx.node().attrInts("perm");
  if (static_cast<int>(perm.size()) != in.rank()) {
    return ctx.error("perm has " + std::to_string(perm.size()) + " entries for rank " +
                     std::to_string(in.rank()));
  }
  std::vector<bool> seen(in.rank(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= in.rank() || seen[p]) return ctx.error("perm is not a permutation");
    seen[p] = true;
  }
  const std::vector<int64_t> strides = contiguousStrides(in.shape);
  StridedCopy copy;
  for (int64_t p : perm) {
    copy.outDims.push_back(in.shape[p]);
    copy.inStrides.push_back(strides[p]);
  }
  copy.inDims = copy.outDims;
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, copy.outDims));
  return launchStrided(ctx, in, out, std::move(copy));
}

// Concat's rows (`outer` rows of outBlock elements of es bytes) from every input, up to
// kConcatParts inputs a launch, in the widest word that divides every row and offset.
Status concatRows(GpuKernelContext& ctx, DeviceTensor& out, int64_t outer, int64_t outBlock,
                  int64_t es) {
  std::vector<int64_t> blockBytes;
  int w = wordWidth({outBlock * es}, {out.data});
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    const DeviceTensor& t = ctx.input(i);
    blockBytes.push_back(t.numel() / outer * es);
    w = std::min(w, wordWidth({blockBytes.back()}, {t.data}));
  }
  const int64_t outCols = outBlock * es / w;
  int launches = 0;
  int64_t column = 0;  // in words
  for (size_t first = 0; first < ctx.inputCount(); first += kConcatParts) {
    const size_t last = std::min(ctx.inputCount(), first + kConcatParts);
    KILN_DM_DISPATCH_WIDTH(w, {
      ConcatChunk<V> chunk;
      for (size_t i = first; i < last; ++i) {
        chunk.src[chunk.count] = static_cast<const V*>(ctx.input(i).data);
        chunk.start[chunk.count++] = column;
        column += blockBytes[i] / w;
      }
      chunk.start[chunk.count] = column;
      const int64_t n = outer * (column - chunk.start[0]);
      if (n > 0) {
        concatRowsKernel<V><<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(
            chunk, static_cast<V*>(out.data), outCols, n);
        ++launches;
      }
    });
    KILN_CUDA_CHECK_LAUNCH("concatRowsKernel");
  }
  ctx.setImplementation("concat of " + std::to_string(ctx.inputCount()) + " inputs, " +
                        std::to_string(outer) + " rows, " + std::to_string(w) + "-byte words, " +
                        std::to_string(launches) + " launch" + (launches == 1 ? "" : "es"));
  return Status::ok();
}

Status concatKernel(GpuKernelContext& ctx) {
  if (ctx.inputCount() == 0) return ctx.error("needs at least one input");
  KILN_RETURN_IF_ERROR(requireInputs(ctx, ctx.inputCount()));
  const DeviceTensor& first = ctx.input(0);
  if (!ctx.node().hasAttr("axis") && ctx.opset() >= 4)
    return ctx.error("attribute axis is required");
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR(normalizeAxis(ctx, ctx.node().attrInt("axis", 1), first.rank(), &axis));
  Shape outShape = first.shape;
  outShape[axis] = 0;
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    const DeviceTensor& t = ctx.input(i);
    bool same = t.type == first.type && t.rank() == first.rank();
    for (int d = 0; same && d < t.rank(); ++d) same = d == axis || t.shape[d] == first.shape[d];
    if (!same) {
      return ctx.error("input " + std::to_string(i) + " (" + dataTypeName(t.type) + " " +
                       shapeToString(t.shape) + ") does not match input 0 (" +
                       dataTypeName(first.type) + " " + shapeToString(first.shape) +
                       ") outside axis " + std::to_string(axis));
    }
    outShape[axis] += t.shape[axis];
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, first.type, outShape));
  const int64_t es = static_cast<int64_t>(dataTypeSize(first.type));
  const int64_t outer = dimProduct(outShape, 0, axis);
  if (out.numel() == 0) return Status::ok();
  const int64_t outBlock = out.numel() / outer;
  if (outer == 1 || ctx.inputCount() == 1) {  // contiguous blocks: one copy each
    int64_t offset = 0;
    for (size_t i = 0; i < ctx.inputCount(); ++i) {
      const DeviceTensor& t = ctx.input(i);
      const int64_t block = t.numel() / outer;
      KILN_RETURN_IF_ERROR(copyRows(ctx, t.data, block * es, byteOffset(out.data, offset * es),
                                    outBlock * es, outer, block * es));
      offset += block;
    }
    return Status::ok();
  }
  return concatRows(ctx, out, outer, outBlock, es);
}

// The sizes Split cuts along its axis (ops/split_params.h), the explicit ones read here.
Status splitSizes(GpuKernelContext& ctx, int64_t dim, std::vector<int64_t>* sizes) {
  std::vector<int64_t> given;
  if (hasInput(ctx, 1) && ops::splitSizesFromInput(ctx.opset())) {
    KILN_RETURN_IF_ERROR(readInts(ctx, 1, "split", &given));
  } else if (ctx.opset() < 13 && ctx.node().hasAttr("split")) {
    given = ctx.node().attrInts("split");
  }
  auto parts = ops::splitSizes(ctx.node(), ctx.opset(), dim, ctx.outputCount(), given);
  if (!parts.isOk()) return ctx.error(parts.status().message());
  *sizes = std::move(parts.value());
  return Status::ok();
}

Status splitKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& in = ctx.input(0);
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR(normalizeAxis(ctx, ctx.node().attrInt("axis", 0), in.rank(), &axis));
  std::vector<int64_t> sizes;
  KILN_RETURN_IF_ERROR(splitSizes(ctx, in.shape[axis], &sizes));
  const int64_t es = static_cast<int64_t>(dataTypeSize(in.type));
  const int64_t outer = dimProduct(in.shape, 0, axis);
  const int64_t inner = dimProduct(in.shape, axis + 1, in.shape.size());
  const int64_t inRow = in.shape[axis] * inner * es;
  int64_t offset = 0;  // bytes into each input row
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t rowBytes = sizes[i] * inner * es;
    if (ctx.wantsOutput(i)) {
      Shape shape = in.shape;
      shape[axis] = sizes[i];
      KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(i, in.type, shape));
      KILN_RETURN_IF_ERROR(
          copyRows(ctx, byteOffset(in.data, offset), inRow, out.data, rowBytes, outer, rowBytes));
    }
    offset += rowBytes;
  }
  return Status::ok();
}

// ============================ Slice, Pad, Tile, Expand ============================

using ops::SliceArgs;

Status readSliceArgs(GpuKernelContext& ctx, SliceArgs* args) {
  if (ctx.opset() < 10) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
    args->starts = ctx.node().attrInts("starts");
    args->ends = ctx.node().attrInts("ends");
    args->axes = ctx.node().attrInts("axes");
  } else {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
    KILN_RETURN_IF_ERROR(readInts(ctx, 1, "starts", &args->starts));
    KILN_RETURN_IF_ERROR(readInts(ctx, 2, "ends", &args->ends));
    KILN_RETURN_IF_ERROR(readInts(ctx, 3, "axes", &args->axes));
    KILN_RETURN_IF_ERROR(readInts(ctx, 4, "steps", &args->steps));
  }
  Status complete = ops::completeSliceArgs(hasInput(ctx, 3) || ctx.node().hasAttr("axes"),
                                           hasInput(ctx, 4), args);
  return complete.isOk() ? complete : ctx.error(complete.message());
}

Status sliceKernel(GpuKernelContext& ctx) {
  SliceArgs args;
  KILN_RETURN_IF_ERROR(readSliceArgs(ctx, &args));
  const DeviceTensor& in = ctx.input(0);
  const int rank = in.rank();
  const std::vector<int64_t> strides = contiguousStrides(in.shape);
  StridedCopy copy;
  copy.outDims = in.shape;
  copy.inStrides = strides;
  auto plan = ops::planSlice(in.shape, args);
  if (!plan.isOk()) return ctx.error(plan.status().message());
  for (int axis = 0; axis < rank; ++axis) {
    const ops::SliceAxis& a = (*plan)[axis];
    copy.outDims[axis] = a.count;
    copy.base += a.first * strides[axis];
    // A single element never steps.
    copy.inStrides[axis] = a.count <= 1 ? 0 : strides[axis] * a.step;
  }
  copy.inDims = copy.outDims;
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, copy.outDims));
  return launchStrided(ctx, in, out, std::move(copy));
}

// The pad value as the data's storage bytes.
Status padValue(GpuKernelContext& ctx, DataType type, Tensor* value) {
  if (ctx.opset() >= 11 && hasInput(ctx, 2) && ctx.input(2).numel() > 0) {
    KILN_ASSIGN_OR_RETURN(*value, ctx.hostInput(2));
    if (value->type() != type) {
      // A float32 model value stored as float16/bfloat16 converts like the data did.
      if (!isFloatingPoint(value->type()) || !isFloatingPoint(type))
        return ctx.error("constant_value type differs from data");
      *value = castTensor(*value, type);
    }
    return Status::ok();
  }
  *value = castTensor(Tensor::scalarFloat(ctx.node().attrFloat("value", 0.f)), type);
  return Status::ok();
}

Status padKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, ctx.opset() >= 11 ? 2 : 1));
  const DeviceTensor& in = ctx.input(0);
  const int rank = in.rank();
  std::vector<int64_t> pads = ctx.node().attrInts(ctx.opset() < 2 ? "paddings" : "pads");
  std::vector<int64_t> axes;
  KILN_RETURN_IF_ERROR(readInts(ctx, 1, "pads", &pads));
  const bool axesGiven = ctx.opset() >= 18 && hasInput(ctx, 3);
  if (axesGiven) KILN_RETURN_IF_ERROR(readInts(ctx, 3, "axes", &axes));
  auto plan = ops::planPad(ctx.node(), ctx.opset(), in.shape, pads, axes, axesGiven);
  if (!plan.isOk()) return ctx.error(plan.status().message());
  const std::string& mode = plan->mode;
  const std::vector<int64_t>&begins = plan->begins, &ends = plan->ends;
  const Shape& outShape = plan->outShape;
  PadParams p;
  p.mode = plan->mode == "reflect" ? kPadReflect
           : plan->mode == "edge"  ? kPadEdge
           : plan->mode == "wrap"  ? kPadWrap
                                   : kPadConstant;
  KILN_RETURN_IF_ERROR(checkRank(ctx, rank, "Pad input"));
  const std::vector<int64_t> strides = contiguousStrides(in.shape);
  p.rank = rank;
  for (int d = 0; d < rank; ++d) {
    // The CPU's padAxisMap checks: negative pads crop first, the mode pads the rest.
    const int64_t dim = in.shape[d];
    const int64_t regionStart = std::max<int64_t>(0, -begins[d]);
    const int64_t regionLen = dim - regionStart - std::max<int64_t>(0, -ends[d]);
    if (regionLen < 0) return ctx.error("pads crop more than the dim " + std::to_string(dim));
    if (mode != "constant" && regionLen == 0 && outShape[d] > 0)
      return ctx.error("mode '" + mode + "' cannot pad an empty axis");
    p.outDims[d] = outShape[d];
    p.inStrides[d] = strides[d];
    p.padBegin[d] = std::max<int64_t>(0, begins[d]);
    p.regionStart[d] = regionStart;
    p.regionLen[d] = regionLen;
  }
  Tensor value;
  KILN_RETURN_IF_ERROR(padValue(ctx, in.type, &value));
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, outShape));
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  KILN_DISPATCH_BYTES(in.type, ctx, {
    T fill;
    std::memcpy(&fill, value.rawData(), sizeof(T));
    padKernel<<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(in.as<const T>(), out.as<T>(), p, fill,
                                                           n);
  });
  KILN_CUDA_CHECK_LAUNCH("padKernel");
  return Status::ok();
}

// Tile: output coordinate c_d reads input coordinate c_d mod dim_d.
Status tileKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& in = ctx.input(0);
  std::vector<int64_t> repeats;
  KILN_RETURN_IF_ERROR(readInts(ctx, 1, "repeats", &repeats));
  if (static_cast<int>(repeats.size()) != in.rank()) {
    return ctx.error("repeats has " + std::to_string(repeats.size()) + " entries for rank " +
                     std::to_string(in.rank()));
  }
  StridedCopy copy;
  copy.inDims = in.shape;
  copy.inStrides = contiguousStrides(in.shape);
  for (int d = 0; d < in.rank(); ++d) {
    if (repeats[d] < 0) return ctx.error("repeats must not be negative");
    if (repeats[d] > kMaxOutputElements) return ctx.error("repeats are too large");
    copy.outDims.push_back(in.shape[d] * repeats[d]);
  }
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, copy.outDims, "output"));
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, copy.outDims));
  return launchStrided(ctx, in, out, std::move(copy));
}

Status broadcastShapes(const GpuKernelContext& ctx, const Shape& a, const Shape& b, Shape* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      (*out)[i] = da;
    } else if (da == 1) {
      (*out)[i] = db;
    } else {
      return ctx.error("shapes " + shapeToString(a) + " and " + shapeToString(b) +
                       " cannot broadcast");
    }
  }
  return Status::ok();
}

Status expandKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& in = ctx.input(0);
  std::vector<int64_t> shape;
  KILN_RETURN_IF_ERROR(readInts(ctx, 1, "shape", &shape));
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, shape, "shape"));
  Shape outShape;
  KILN_RETURN_IF_ERROR(broadcastShapes(ctx, in.shape, shape, &outShape));
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, outShape, "output"));
  StridedCopy copy;
  copy.outDims = outShape;
  copy.inDims = outShape;
  const std::vector<int64_t> strides = contiguousStrides(in.shape);
  const size_t offset = outShape.size() - in.shape.size();
  for (size_t d = 0; d < outShape.size(); ++d) {
    const bool broadcast = d < offset || in.shape[d - offset] == 1;
    copy.inStrides.push_back(broadcast ? 0 : strides[d - offset]);
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, outShape));
  return launchStrided(ctx, in, out, std::move(copy));
}

// ============================ Gather family ============================

Status gatherKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& data = ctx.input(0);
  const DeviceTensor& indices = ctx.input(1);
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR(normalizeAxis(ctx, ctx.node().attrInt("axis", 0), data.rank(), &axis));
  KILN_RETURN_IF_ERROR(checkIndexType(ctx, indices.type, "indices"));
  const int64_t dim = data.shape[axis];
  Shape outShape(data.shape.begin(), data.shape.begin() + axis);
  outShape.insert(outShape.end(), indices.shape.begin(), indices.shape.end());
  outShape.insert(outShape.end(), data.shape.begin() + axis + 1, data.shape.end());
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, data.type, outShape));
  if (out.numel() == 0) return Status::ok();
  const int64_t es = static_cast<int64_t>(dataTypeSize(data.type));
  const int64_t innerBytes = dimProduct(data.shape, axis + 1, data.shape.size()) * es;
  const int w = wordWidth({innerBytes}, {data.data, out.data});
  const int64_t inner = innerBytes / w;
  const int64_t n = out.numel() * es / w;
  const bool is64 = indices.type == DataType::kInt64;
  KILN_DM_DISPATCH_WIDTH(w, {
    gatherKernel<<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(
        data.as<const V>(), indices.data, is64, out.as<V>(), dim, indices.numel(), inner, n);
  });
  KILN_CUDA_CHECK_LAUNCH("gatherKernel");
  return Status::ok();
}

// The CPU's elementOffsets checks, as device addressing parameters.
Status elementParams(const GpuKernelContext& ctx, const DeviceTensor& data,
                     const DeviceTensor& indices, int64_t axis, ElementParams* p) {
  if (indices.rank() != data.rank()) return ctx.error("indices and data differ in rank");
  for (int d = 0; d < data.rank(); ++d) {
    if (d != axis && indices.shape[d] > data.shape[d]) {
      return ctx.error("indices dim " + std::to_string(d) + " exceeds the data's");
    }
  }
  KILN_RETURN_IF_ERROR(checkIndexType(ctx, indices.type, "indices"));
  KILN_RETURN_IF_ERROR(checkRank(ctx, data.rank(), "data"));
  const std::vector<int64_t> idxStrides = contiguousStrides(indices.shape);
  const std::vector<int64_t> dataStrides = contiguousStrides(data.shape);
  p->rank = data.rank();
  p->axis = static_cast<int>(axis);
  p->axisDim = data.shape[axis];
  for (int d = 0; d < data.rank(); ++d) {
    p->idxDims[d] = indices.shape[d];
    p->idxStrides[d] = idxStrides[d];
    p->dataStrides[d] = dataStrides[d];
  }
  return Status::ok();
}

Status gatherElementsKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& data = ctx.input(0);
  const DeviceTensor& indices = ctx.input(1);
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR(normalizeAxis(ctx, ctx.node().attrInt("axis", 0), data.rank(), &axis));
  ElementParams p;
  KILN_RETURN_IF_ERROR(elementParams(ctx, data, indices, axis, &p));
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, data.type, indices.shape));
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  const bool is64 = indices.type == DataType::kInt64;
  KILN_DISPATCH_BYTES(data.type, ctx, {
    gatherElementsKernel<<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(
        data.as<const T>(), indices.data, is64, out.as<T>(), p, n);
  });
  KILN_CUDA_CHECK_LAUNCH("gatherElementsKernel");
  return Status::ok();
}

// The CPU's tupleOffsets checks, as device addressing parameters; *tuples the number of
// index tuples, *sliceShape the trailing data dims each selects.
Status ndParams(const GpuKernelContext& ctx, const DeviceTensor& data, const DeviceTensor& indices,
                int64_t batchDims, NdParams* p, int64_t* tuples, Shape* sliceShape) {
  const int q = indices.rank(), r = data.rank();
  if (q < 1) return ctx.error("indices must have rank >= 1");
  if (batchDims < 0 || batchDims >= std::min(q, r)) return ctx.error("batch_dims is out of range");
  const int64_t k = indices.shape[q - 1];
  if (k < 0 || batchDims + k > r) {
    return ctx.error("indices' last dim " + std::to_string(k) + " exceeds the data rank");
  }
  int64_t batches = 1;
  for (int64_t d = 0; d < batchDims; ++d) {
    if (indices.shape[d] != data.shape[d])
      return ctx.error("batch dims of data and indices differ");
    batches *= data.shape[d];
  }
  KILN_RETURN_IF_ERROR(checkIndexType(ctx, indices.type, "indices"));
  KILN_RETURN_IF_ERROR(checkRank(ctx, k, "index tuples"));
  *tuples = dimProduct(indices.shape, 0, q - 1);
  p->k = static_cast<int>(k);
  p->perBatch = batches == 0 ? 0 : *tuples / batches;
  p->batchSlots = batchDims == 0 ? 0 : dimProduct(data.shape, batchDims, batchDims + k);
  int64_t stride = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    p->dims[j] = data.shape[batchDims + j];
    p->slotStrides[j] = stride;
    stride *= data.shape[batchDims + j];
  }
  sliceShape->assign(data.shape.begin() + batchDims + k, data.shape.end());
  return Status::ok();
}

Status gatherNdKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& data = ctx.input(0);
  const DeviceTensor& indices = ctx.input(1);
  NdParams p;
  int64_t tuples = 0;
  Shape sliceShape;
  KILN_RETURN_IF_ERROR(
      ndParams(ctx, data, indices, ctx.node().attrInt("batch_dims", 0), &p, &tuples, &sliceShape));
  Shape outShape(indices.shape.begin(), indices.shape.end() - 1);
  outShape.insert(outShape.end(), sliceShape.begin(), sliceShape.end());
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, data.type, outShape));
  if (out.numel() == 0) return Status::ok();
  const int64_t es = static_cast<int64_t>(dataTypeSize(data.type));
  const int64_t sliceBytes = shapeNumel(sliceShape) * es;
  const int w = wordWidth({sliceBytes}, {data.data, out.data});
  const int64_t n = out.numel() * es / w;
  const bool is64 = indices.type == DataType::kInt64;
  KILN_DM_DISPATCH_WIDTH(w, {
    gatherNdKernel<<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(
        data.as<const V>(), indices.data, is64, out.as<V>(), p, sliceBytes / w, n);
  });
  KILN_CUDA_CHECK_LAUNCH("gatherNdKernel");
  return Status::ok();
}

// ============================ Scatter family ============================

Status parseReduction(const GpuKernelContext& ctx, int* op) {
  const std::string name = ctx.node().attrString("reduction", "none");
  if (name == "none") {
    *op = kReduceNone;
  } else if (name == "add") {
    *op = kReduceAdd;
  } else if (name == "mul") {
    *op = kReduceMul;
  } else if (name == "max") {
    *op = kReduceMax;
  } else if (name == "min") {
    *op = kReduceMin;
  } else {
    return ctx.error("unknown reduction '" + name + "'");
  }
  return Status::ok();
}

// Validates updates' type and the reduction, allocates the output as a copy of data.
Status startScatter(GpuKernelContext& ctx, int* op, DeviceTensor* out) {
  const DeviceTensor& data = ctx.input(0);
  if (ctx.input(2).type != data.type) return ctx.error("updates and data differ in type");
  KILN_RETURN_IF_ERROR(parseReduction(ctx, op));
  KILN_ASSIGN_OR_RETURN(*out, ctx.allocateOutput(0, data.type, data.shape));
  return copyBytes(ctx, out->data, data.data, static_cast<int64_t>(data.byteSize()));
}

// Reduction "none" of `rows` update rows of rowBytes: when rows may collide, the last
// writer of each of the `slots` output rows is marked first.
template <class L>
Status scatterLastWins(GpuKernelContext& ctx, const L& locate, int64_t rows, int64_t slots,
                       const void* updates, void* out, int64_t rowBytes) {
  unsigned long long* winner = nullptr;
  if (rows > 1) {
    const size_t bytes = static_cast<size_t>(slots) * sizeof(unsigned long long);
    KILN_ASSIGN_OR_RETURN(void* scratch, ctx.workspace(bytes));
    winner = static_cast<unsigned long long*>(scratch);
    KILN_CUDA_CHECK(cudaMemsetAsync(winner, 0, bytes, ctx.stream()));
    markLastWriterKernel<<<gridFor(rows), kBlockSize, 0, ctx.stream()>>>(locate, winner, rows);
    KILN_CUDA_CHECK_LAUNCH("markLastWriterKernel");
  }
  const int w = wordWidth({rowBytes}, {updates, out});
  const int64_t row = rowBytes / w;
  const int64_t n = rows * row;
  KILN_DM_DISPATCH_WIDTH(w, {
    scatterRowsKernel<<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(
        locate, winner, static_cast<const V*>(updates), static_cast<V*>(out), row, n);
  });
  KILN_CUDA_CHECK_LAUNCH("scatterRowsKernel");
  return Status::ok();
}

Status scatterNdKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DeviceTensor& data = ctx.input(0);
  const DeviceTensor& indices = ctx.input(1);
  const DeviceTensor& updates = ctx.input(2);
  NdLocator locate;
  int64_t tuples = 0;
  Shape sliceShape;
  KILN_RETURN_IF_ERROR(ndParams(ctx, data, indices, 0, &locate.p, &tuples, &sliceShape));
  Shape expected(indices.shape.begin(), indices.shape.end() - 1);
  expected.insert(expected.end(), sliceShape.begin(), sliceShape.end());
  if (updates.shape != expected) {
    return ctx.error("updates shape " + shapeToString(updates.shape) + " should be " +
                     shapeToString(expected));
  }
  int op = kReduceNone;
  DeviceTensor out;
  KILN_RETURN_IF_ERROR(startScatter(ctx, &op, &out));
  const int64_t slice = shapeNumel(sliceShape);
  if (tuples == 0 || slice == 0) return Status::ok();
  locate.indices = indices.data;
  locate.is64 = indices.type == DataType::kInt64;
  const int64_t es = static_cast<int64_t>(dataTypeSize(data.type));
  if (op == kReduceNone) {
    const int64_t slots = dimProduct(data.shape, 0, locate.p.k);
    ctx.setImplementation("last writer wins, " + std::to_string(tuples) + " slices");
    return scatterLastWins(ctx, locate, tuples, slots, updates.data, out.data, slice * es);
  }
  KILN_DISPATCH_NUMERIC(data.type, ctx, {
    scatterNdReduceKernel<<<gridFor(slice), kBlockSize, 0, ctx.stream()>>>(
        locate, updates.as<const T>(), out.as<T>(), tuples, slice, op);
  });
  KILN_CUDA_CHECK_LAUNCH("scatterNdReduceKernel");
  ctx.setImplementation("reduction in index order: " + std::to_string(tuples) +
                        " sequential updates of " + std::to_string(slice) + " parallel elements");
  return Status::ok();
}

// Below this many lines, reduction "none" uses the last-writer marking instead of lines.
constexpr int64_t kMinParallelLines = 2048;

Status scatterElementsKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DeviceTensor& data = ctx.input(0);
  const DeviceTensor& indices = ctx.input(1);
  const DeviceTensor& updates = ctx.input(2);
  if (updates.shape != indices.shape) return ctx.error("updates and indices differ in shape");
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR(normalizeAxis(ctx, ctx.node().attrInt("axis", 0), data.rank(), &axis));
  ElementLocator locate;
  KILN_RETURN_IF_ERROR(elementParams(ctx, data, indices, axis, &locate.p));
  int op = kReduceNone;
  DeviceTensor out;
  KILN_RETURN_IF_ERROR(startScatter(ctx, &op, &out));
  const int64_t count = indices.numel();
  if (count == 0) return Status::ok();
  locate.indices = indices.data;
  locate.is64 = indices.type == DataType::kInt64;
  const int64_t axisLen = indices.shape[axis];
  const int64_t lines = count / axisLen;
  if (op == kReduceNone && lines < kMinParallelLines && axisLen > 8) {
    ctx.setImplementation("last writer wins, " + std::to_string(count) + " elements");
    return scatterLastWins(ctx, locate, count, data.numel(), updates.data, out.data,
                           static_cast<int64_t>(dataTypeSize(data.type)));
  }
  if (op == kReduceNone) {
    KILN_DISPATCH_BYTES(data.type, ctx, {
      scatterElementsLinesKernel<<<gridFor(lines), kBlockSize, 0, ctx.stream()>>>(
          locate.p, indices.data, locate.is64, updates.as<const T>(), out.as<T>(), op, lines);
    });
  } else {
    KILN_DISPATCH_NUMERIC(data.type, ctx, {
      scatterElementsLinesKernel<<<gridFor(lines), kBlockSize, 0, ctx.stream()>>>(
          locate.p, indices.data, locate.is64, updates.as<const T>(), out.as<T>(), op, lines);
    });
  }
  KILN_CUDA_CHECK_LAUNCH("scatterElementsLinesKernel");
  ctx.setImplementation("in index order along the axis: " + std::to_string(lines) +
                        " parallel lines of " + std::to_string(axisLen));
  return Status::ok();
}

// ============================ ReverseSequence ============================

Status reverseSequenceKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& lens = ctx.input(1);
  const int64_t batchAxis = ctx.node().attrInt("batch_axis", 1);
  const int64_t timeAxis = ctx.node().attrInt("time_axis", 0);
  if (x.rank() < 2) return ctx.error("input must have rank >= 2, got " + shapeToString(x.shape));
  if (!((batchAxis == 0 && timeAxis == 1) || (batchAxis == 1 && timeAxis == 0))) {
    return ctx.error("batch_axis and time_axis must be 0 and 1 in some order");
  }
  const int64_t batch = x.shape[batchAxis];
  const int64_t steps = x.shape[timeAxis];
  if (lens.rank() != 1 || lens.shape[0] != batch) {
    return ctx.error("sequence_lens must be 1-D of the batch size " + std::to_string(batch));
  }
  KILN_RETURN_IF_ERROR(checkIndexType(ctx, lens.type, "sequence_lens"));
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (y.numel() == 0) return Status::ok();
  const int64_t es = static_cast<int64_t>(dataTypeSize(x.type));
  const int64_t innerBytes = dimProduct(x.shape, 2, x.shape.size()) * es;
  const int w = wordWidth({innerBytes}, {x.data, y.data});
  const int64_t n = y.numel() * es / w;
  const bool is64 = lens.type == DataType::kInt64;
  KILN_DM_DISPATCH_WIDTH(w, {
    reverseSequenceKernel<<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(
        x.as<const V>(), y.as<V>(), lens.data, is64, timeAxis == 0, x.shape[1], steps,
        innerBytes / w, n);
  });
  KILN_CUDA_CHECK_LAUNCH("reverseSequenceKernel");
  return Status::ok();
}

// ============================ support predicates ============================

// Fixed-size elements of 1, 2, 4 or 8 bytes (absent inputs pass).
bool movable(DataType t) {
  if (t == DataType::kUndefined) return true;
  if (t == DataType::kString) return false;
  const size_t size = dataTypeSize(t);
  return size == 1 || size == 2 || size == 4 || size == 8;
}

bool isIndexType(DataType t) {
  return t == DataType::kInt32 || t == DataType::kInt64;
}

// Types the Scatter reductions compute on (the CPU's dispatchAllTypes).
bool reducible(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 ||
         t == DataType::kFloat64 || t == DataType::kBool ||
         (isInteger(t) && dataTypeSize(t) >= 1 && packedElementBits(t) == 0);
}

std::string typeReason(DataType t) {
  return std::string("no GPU kernel for ") + dataTypeName(t);
}

std::string supportsMovableTypes(const Node&, const std::vector<DataType>& types) {
  for (DataType t : types) {
    if (!movable(t)) return typeReason(t) + " inputs";
  }
  return "";
}

// Data at input 0 (and 2), int32/int64 indices at input 1; reductions need numeric data.
std::string supportsIndexedTypes(const Node& node, const std::vector<DataType>& types) {
  const bool reduces = node.attrString("reduction", "none") != "none";
  for (size_t i = 0; i < types.size(); ++i) {
    const DataType t = types[i];
    if (t == DataType::kUndefined) continue;
    if (i == 1) {
      if (!isIndexType(t)) return typeReason(t) + " indices";
    } else if (!movable(t)) {
      return typeReason(t) + " data";
    } else if (reduces && !reducible(t)) {
      return typeReason(t) + " data with a reduction";
    }
  }
  return "";
}

}  // namespace

void registerDataMovementGpuKernels(GpuKernelRegistry& registry) {
  registry.add("Transpose", 1, 1000, transposeKernel, supportsMovableTypes);
  registry.add("Concat", 1, 1000, concatKernel, supportsMovableTypes);
  registry.add("Split", 1, 1000, splitKernel, supportsMovableTypes);
  registry.add("Slice", 1, 1000, sliceKernel, supportsMovableTypes);
  registry.add("Pad", 1, 1000, padKernel, supportsMovableTypes);
  registry.add("Tile", 6, 1000, tileKernel, supportsMovableTypes);
  registry.add("Expand", 8, 1000, expandKernel, supportsMovableTypes);
  registry.add("Gather", 1, 1000, gatherKernel, supportsIndexedTypes);
  registry.add("GatherElements", 11, 1000, gatherElementsKernel, supportsIndexedTypes);
  registry.add("GatherND", 11, 1000, gatherNdKernel, supportsIndexedTypes);
  registry.add("Scatter", 9, 10, scatterElementsKernel, supportsIndexedTypes);
  registry.add("ScatterElements", 11, 1000, scatterElementsKernel, supportsIndexedTypes);
  registry.add("ScatterND", 11, 1000, scatterNdKernel, supportsIndexedTypes);
  registry.add("ReverseSequence", 10, 1000, reverseSequenceKernel, supportsIndexedTypes);
}

}  // namespace kiln::cuda

#undef KILN_DM_DISPATCH_WIDTH
#undef KILN_DM_GRID_LOOP
