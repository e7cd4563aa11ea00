// Data movement kernels of the CUDA backend: Transpose, Concat, Split, Slice, Pad, Expand,
// Tile here; Gather, GatherElements, GatherND, ScatterND, ScatterElements/Scatter and
// ReverseSequence in gather_scatter.cu (helpers of both: data_movement_common.cuh); with the opset
// ranges, attributes, defaults and error messages of the CPU kernels
// (backends/cpu/ops/shape_ops.cpp, slice_pad.cpp, gather_scatter.cpp, tensor_extra_ops.cpp).
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

#include "backends/cuda/ops/data_movement_common.cuh"
#include "ops/output_size.h"
#include "ops/pad_params.h"
#include "ops/slice_params.h"
#include "ops/split_params.h"

namespace kiln::cuda {
namespace {

using namespace dm;

// Output sizes past this are refused, as on the CPU.
using ops::kMaxOutputElements;  // ops/output_size.h

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

// ============================ host helpers ============================

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

}  // namespace

namespace dm {

// Here, not in data_movement_host.cpp: kMaxRank is device_common.cuh's.
Status checkRank(const GpuKernelContext& ctx, int64_t rank, const char* what) {
  if (rank <= kMaxRank) return Status::ok();
  return ctx.unsupported(std::string(what) + " of rank " + std::to_string(rank) + " (at most " +
                         std::to_string(kMaxRank) + ")");
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

}  // namespace dm

namespace {

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

}  // namespace

void registerDataMovementGpuKernels(GpuKernelRegistry& registry) {
  registry.add("Transpose", 1, 1000, transposeKernel, supportsMovableTypes);
  registry.add("Concat", 1, 1000, concatKernel, supportsMovableTypes);
  registry.add("Split", 1, 1000, splitKernel, supportsMovableTypes);
  registerSlicePadTileGpuKernels(registry);
  registerIndexedMovementGpuKernels(registry);
}

}  // namespace kiln::cuda
