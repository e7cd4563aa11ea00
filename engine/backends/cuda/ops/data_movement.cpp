// Data movement kernels of the CUDA backend, the host half: Transpose, Concat, Split and the
// strided copy (which Slice, Tile and Expand run too) here; Slice, Pad, Tile and Expand in
// slice_pad_tile.cpp; Gather, GatherElements, GatherND, ScatterND, ScatterElements/Scatter and
// ReverseSequence in gather_scatter.cpp (what they share: data_movement_common.h; the device
// halves: data_movement_impl.cu, slice_pad_tile_impl.cu, gather_scatter_impl.cu, their
// contracts the _impl.h headers); with the opset ranges, attributes, defaults and error
// messages of the CPU kernels (backends/cpu/ops/shape_ops.cpp, slice_pad.cpp,
// gather_scatter.cpp, tensor_extra_ops.cpp).
//
// Contract:
// - Elements move as opaque unsigned words of their byte size, so every fixed-size data
//   type is served; the one exception, a Transpose of a 16-bit engine's float32 input read in
//   place, rounds float32 to the engine's type as it moves (narrowing_copy_impl.h). Copies whose
//   innermost run is contiguous are widened to words of up to 16 bytes when sizes and addresses
//   allow. Only the Scatter reductions compute, in ComputeType<T> like the CPU.
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
//   side), a contiguous one a cudaMemcpyAsync; a copy whose innermost output dim is strided
//   in the input, the row-run copy where 32 of its rows fit a block's staging (rowRunCopy:
//   a thread a row), else a tiled transpose of that dim and one contiguous in the input
//   with the rest as a batch (stridedTranspose); the rest element-wise in the widest word
//   the innermost run allows, or the row-run copy when that word is one element. Ranks
//   above kMaxRank after merging are refused as unsupported.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "backends/cuda/ops/data_movement_common.h"
#include "backends/cuda/ops/data_movement_impl.h"
#include "backends/cuda/ops/narrowing_copy_impl.h"
#include "ops/split_params.h"

namespace kiln::cuda {
namespace {

using namespace dm;

// ============================ host helpers ============================

// Copies `rows` rows of colBytes between pitched byte buffers.
Status copyRows(GpuKernelContext& ctx, const void* src, int64_t srcPitch, void* dst,
                int64_t dstPitch, int64_t rows, int64_t colBytes) {
  if (rows <= 0 || colBytes <= 0) return Status::ok();
  if (rows == 1 || (srcPitch == colBytes && dstPitch == colBytes))
    return copyBytes(ctx, dst, src, rows * colBytes);
  const int w = wordWidth({srcPitch, dstPitch, colBytes}, {src, dst});
  RowCopy copy;
  copy.src = src;
  copy.srcPitch = srcPitch / w;
  copy.dst = dst;
  copy.dstPitch = dstPitch / w;
  copy.cols = colBytes / w;
  copy.n = rows * copy.cols;
  copy.width = w;
  return launchCopyRows(copy, ctx.stream());
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

// transposeNarrowPairsKernel's conditions (data_movement_impl.h).
bool narrowPairsApply(DataType type, const void* src, const void* dst, int64_t rows, int64_t cols) {
  return dataTypeSize(type) == 2 && cols % 2 == 0 && reinterpret_cast<uintptr_t>(src) % 4 == 0 &&
         reinterpret_cast<uintptr_t>(dst) % 4 == 0 && rows >= 1 && rows <= kNarrowTransposeSide;
}

Status launchTranspose(GpuKernelContext& ctx, const DeviceTensor& in, const void* src, void* dst,
                       int64_t batch, int64_t rows, int64_t cols) {
  BatchedTranspose t;
  t.in = src;
  t.out = dst;
  t.elementBytes = static_cast<int>(dataTypeSize(in.type));
  t.batch = batch;
  t.rows = rows;
  t.cols = cols;
  if (narrowPairsApply(in.type, src, dst, rows, cols)) {
    KILN_RETURN_IF_ERROR(launchTransposeNarrowPairs(t, ctx.stream()));
    ctx.setImplementation("narrow transpose, pairs " + std::to_string(batch) + "x" +
                          std::to_string(rows) + "x" + std::to_string(cols));
    return Status::ok();
  }
  if (rows <= kNarrowTransposeSide || cols <= kNarrowTransposeSide) {
    KILN_RETURN_IF_ERROR(checkElementBytes(ctx, in.type));
    KILN_RETURN_IF_ERROR(launchTransposeNarrow(t, ctx.stream()));
    ctx.setImplementation("narrow transpose " + std::to_string(batch) + "x" + std::to_string(rows) +
                          "x" + std::to_string(cols));
    return Status::ok();
  }
  KILN_RETURN_IF_ERROR(checkElementBytes(ctx, in.type));
  KILN_RETURN_IF_ERROR(launchTransposeTiled(t, ctx.stream()));
  ctx.setImplementation("tiled transpose " + std::to_string(batch) + "x" + std::to_string(rows) +
                        "x" + std::to_string(cols));
  return Status::ok();
}

// A simplified copy (no wrap) whose innermost output dim is strided in the input (or, with
// `contiguousRows`, contiguous there and at least 8 long) and short enough that 32 rows of it
// fit a block's staging: the row-run copy. False when it does not apply.
Result<bool> rowRunCopy(GpuKernelContext& ctx, const DeviceTensor& in, const void* src, void* dst,
                        const StridedCopy& copy, bool contiguousRows) {
  const int rank = static_cast<int>(copy.outDims.size()), last = rank - 1;
  const int es = static_cast<int>(dataTypeSize(in.type));
  if (rank < 2 || rank > kMaxMovementRank || copy.outDims[last] < 4 || copy.outDims[last] > 4096 ||
      rowRunRowsPerBlock(static_cast<int>(copy.outDims[last]), es) == 0)
    return false;
  if (copy.inStrides[last] == 1 && (!contiguousRows || copy.outDims[last] < 8)) return false;
  RowRunCopy c;
  c.in = src;
  c.out = dst;
  c.elementBytes = es;
  c.outerRank = last;
  c.rows = 1;
  for (int d = 0; d < last; ++d) {
    c.outerDims[d] = copy.outDims[d];
    c.outerInStrides[d] = copy.inStrides[d];
    c.rows *= copy.outDims[d];
  }
  c.inner = static_cast<int>(copy.outDims[last]);
  c.innerStride = copy.inStrides[last];
  KILN_RETURN_IF_ERROR(checkElementBytes(ctx, in.type));
  KILN_RETURN_IF_ERROR(launchRowRunCopy(c, ctx.stream()));
  ctx.setImplementation("row-run strided copy, rank " + std::to_string(rank) + ", rows of " +
                        std::to_string(c.inner));
  return true;
}

// A simplified copy whose innermost output dim is strided in the input while an outer dim
// is contiguous there (at least 8 long each; shorter sides stay on the element-wise strided
// copy): the tiled StridedTranspose. False when it does not apply. Measured (H200,
// 2026-12-02, the same VOLO-D1 plan with the path on and off): its rank-6 unfold permute
// (14 contiguous columns, 32 channels innermost) 0.580 -> 0.512 ms, the rank-4 fold permute
// 0.445 -> 0.248, the model 18.10 -> 17.05 ms; 8, 16 and 32 as the least side: 8 fastest.
Result<bool> stridedTranspose(GpuKernelContext& ctx, const DeviceTensor& in, const void* src,
                              void* dst, const StridedCopy& copy) {
  const int rank = static_cast<int>(copy.outDims.size()), last = rank - 1;
  if (rank > kMaxMovementRank || copy.inStrides[last] == 1 || copy.inStrides[last] == 0 ||
      copy.outDims[last] < 8)
    return false;
  int unit = -1;
  for (int d = 0; d < last; ++d)
    if (copy.inStrides[d] == 1) unit = d;
  if (unit < 0 || copy.outDims[unit] < 8) return false;
  // The tiles over `unit` are the grid's y (at most 65535 of 32), over the innermost dim its x.
  if (copy.outDims[unit] > int64_t{65535} * 32 || copy.outDims[last] > (int64_t{1} << 35))
    return false;
  StridedTranspose t;
  t.in = src;
  t.out = dst;
  t.elementBytes = static_cast<int>(dataTypeSize(in.type));
  t.rank = rank;
  t.unit = unit;
  for (int d = 0; d < rank; ++d) {
    t.dims[d] = copy.outDims[d];
    t.inStrides[d] = copy.inStrides[d];
  }
  KILN_RETURN_IF_ERROR(checkElementBytes(ctx, in.type));
  KILN_RETURN_IF_ERROR(launchStridedTranspose(t, ctx.stream()));
  ctx.setImplementation("tiled strided transpose, rank " + std::to_string(rank) + ", dims " +
                        std::to_string(unit) + " and " + std::to_string(last));
  return true;
}

// A simplified copy (no wrap) from a float32 input into a 16-bit output (a Transpose reading
// a 16-bit engine's float32 input in place, context_plan.cpp): the narrow-rows batched
// transpose (an image to NHWC) in column pairs, else the element-wise narrowing copy, four
// elements a thread where the innermost run allows (narrowing_copy_impl.h).
Status narrowingStrided(GpuKernelContext& ctx, const DeviceTensor& in, const DeviceTensor& out,
                        const StridedCopy& copy) {
  if (in.type != DataType::kFloat32 ||
      (out.type != DataType::kFloat16 && out.type != DataType::kBFloat16))
    return ctx.error(std::string("a copy from ") + dataTypeName(in.type) + " into " +
                     dataTypeName(out.type) + " (only float32 into a 16-bit float narrows)");
  const int rank = static_cast<int>(copy.outDims.size());
  for (int d = 0; d < rank; ++d)
    if (copy.inDims[d] != copy.outDims[d]) return ctx.error("a narrowing copy that wraps");
  KILN_RETURN_IF_ERROR(checkRank(ctx, rank, "narrowing strided copy"));
  const float* src = static_cast<const float*>(in.data) + copy.base;
  int64_t batch = 0, rows = 0, cols = 0;
  if (batchedTranspose(copy, &batch, &rows, &cols) && rows <= kNarrowTransposeSide &&
      cols % 2 == 0 && reinterpret_cast<uintptr_t>(src) % 8 == 0 &&
      reinterpret_cast<uintptr_t>(out.data) % 4 == 0) {
    NarrowingNarrowTranspose t{src, out.data, out.type, batch, rows, cols};
    KILN_RETURN_IF_ERROR(launchNarrowingNarrowTranspose(t, ctx.stream()));
    ctx.setImplementation("narrow transpose, float32 read and narrowed, pairs " +
                          std::to_string(batch) + "x" + std::to_string(rows) + "x" +
                          std::to_string(cols));
    return Status::ok();
  }
  NarrowingCopy c;
  c.in = src;
  c.out = out.data;
  c.outType = out.type;
  c.rank = rank;
  // Packs of 16, 8 or 4 elements along a contiguous innermost run (16 the fastest: one split
  // of the coordinates per 64 bytes read); else an element a thread.
  const uintptr_t inAddress = reinterpret_cast<uintptr_t>(src);
  const uintptr_t outAddress = reinterpret_cast<uintptr_t>(out.data);
  bool packs = rank > 0 && copy.inStrides[rank - 1] == 1 && inAddress % 16 == 0;
  for (int d = 0; d < rank; ++d) {
    c.outDims[d] = copy.outDims[d];
    c.inStrides[d] = copy.inStrides[d];
    if (d < rank - 1) packs = packs && copy.inStrides[d] % 4 == 0;
  }
  c.pack = 1;
  for (int pack : {16, 8, 4}) {
    if (packs && copy.outDims[rank - 1] % pack == 0 &&
        outAddress % static_cast<uintptr_t>(std::min(2 * pack, 16)) == 0) {
      c.pack = pack;
      break;
    }
  }
  KILN_RETURN_IF_ERROR(launchNarrowingCopy(c, out.numel(), ctx.stream()));
  ctx.setImplementation(
      "strided copy, float32 read and narrowed, rank " + std::to_string(rank) +
      (c.pack > 1 ? ", packs of " + std::to_string(c.pack) : ", an element a thread"));
  return Status::ok();
}

}  // namespace

namespace dm {

// Runs `copy` from `in` into `out` (whose shape is copy.outDims).
Status launchStrided(GpuKernelContext& ctx, const DeviceTensor& in, const DeviceTensor& out,
                     StridedCopy copy) {
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  const int64_t es = static_cast<int64_t>(dataTypeSize(in.type));
  simplify(&copy);
  if (in.type != out.type) return narrowingStrided(ctx, in, out, copy);
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
  // A strided innermost dim: rows staged by the row-run copy where they fit, else the tiled
  // strided transpose (measured on an H200, 2026-12-02, the same plans: VOLO-D1 b128
  // 13.88 ms with the row-run copy only where the tiled one does not apply, 12.94 ms with it
  // first; the element-wise copy alone 16.33).
  if (!wraps) {
    KILN_ASSIGN_OR_RETURN(bool done, rowRunCopy(ctx, in, src, out.data, copy, false));
    if (done) return Status::ok();
  }
  if (!wraps && rank >= 3) {
    KILN_ASSIGN_OR_RETURN(bool done, stridedTranspose(ctx, in, src, out.data, copy));
    if (done) return Status::ok();
  }
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
  // Contiguous rows that no wider word moves (VOLO's [B, 196, 6, 81] -> [B, 6, 196, 81] in
  // 2-byte words): the row-run copy splits coordinates per row, not per element.
  if (!wraps && copy.inStrides[last] == 1 && w == es) {
    KILN_ASSIGN_OR_RETURN(bool done, rowRunCopy(ctx, in, src, out.data, copy, true));
    if (done) return Status::ok();
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
  KILN_RETURN_IF_ERROR(launchStridedCopy(in.data, out.data, p, words, w, ctx.stream()));
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
  // A 16-bit engine's float32 input read in place (context_plan.cpp): narrowed as it moves.
  const DataType planned = ctx.plannedOutputType(0);
  const DataType outType = in.type == DataType::kFloat32 &&
                                   (planned == DataType::kFloat16 || planned == DataType::kBFloat16)
                               ? planned
                               : in.type;
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, outType, copy.outDims));
  return launchStrided(ctx, in, out, std::move(copy));
}

// Rows of whole [rows, sum of widths] elements of es bytes split into (or concatenated from)
// packed parts, one of them narrower than a 16-byte word, staged through shared memory in one
// launch (dm::RowTileParts). False when it does not apply: more than kConcatParts parts that
// have columns, an element size it does not move, a whole side not 16-byte aligned, a row too
// long for a tile of the rows its alignment needs, or no part under 16 bytes a row. Measured
// (H200, 2026-12-02): FocalNet-T's q / ctx / gates Split (192 + 192 + 6 bytes a row) 12.30 ->
// 10.71 ms a model; parts of 24-56 bytes (Res2Net, InceptionNeXt) were 3-4% slower staged than
// as pitched copies in 4- and 8-byte words, so they stay pitched. Parts of no columns are left
// out.
Result<bool> rowTileParts(GpuKernelContext& ctx, bool split, void* whole, int64_t rows,
                          const std::vector<void*>& parts, const std::vector<int64_t>& widths,
                          int64_t es) {
  if (rows <= 1 || (es != 1 && es != 2 && es != 4 && es != 8) ||
      reinterpret_cast<uintptr_t>(whole) % 16 != 0)
    return false;
  dm::RowTileParts tiled;
  tiled.whole = whole;
  tiled.rows = rows;
  tiled.elementBytes = static_cast<int>(es);
  tiled.split = split;
  bool narrowPart = false;
  int64_t column = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (widths[i] == 0) continue;
    if (tiled.count == kConcatParts) return false;
    narrowPart = narrowPart || widths[i] * es < 16;
    tiled.parts[tiled.count] = parts[i];
    tiled.start[tiled.count++] = column;
    column += widths[i];
  }
  if (tiled.count == 0 || !narrowPart) return false;
  tiled.start[tiled.count] = column;
  const int64_t rowBytes = column * es;
  const int64_t align =
      16 / std::gcd<int64_t>(rowBytes, 16);  // rows a tile must hold a multiple of
  const int64_t tileRows = dm::kRowTileBytes / rowBytes / align * align;
  if (tileRows < align) return false;
  tiled.tileRows = static_cast<int>(tileRows);
  KILN_RETURN_IF_ERROR(dm::launchRowTileParts(tiled, ctx.stream()));
  ctx.setImplementation(std::string(split ? "split into " : "concat of ") +
                        std::to_string(tiled.count) + " parts, " + std::to_string(rows) +
                        " rows staged " + std::to_string(tileRows) +
                        " a block (16-byte words of the whole rows), 1 launch");
  return true;
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
    ConcatRows chunk;
    for (size_t i = first; i < last; ++i) {
      chunk.src[chunk.count] = ctx.input(i).data;
      chunk.start[chunk.count++] = column;
      column += blockBytes[i] / w;
    }
    chunk.start[chunk.count] = column;
    chunk.dst = out.data;
    chunk.outCols = outCols;
    chunk.n = outer * (column - chunk.start[0]);
    chunk.width = w;
    KILN_RETURN_IF_ERROR(launchConcatRows(chunk, ctx.stream()));
    if (chunk.n > 0) ++launches;
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
  if (outer > 1 && ctx.inputCount() > 1) {
    std::vector<void*> parts;
    std::vector<int64_t> widths;
    for (size_t i = 0; i < ctx.inputCount(); ++i) {
      parts.push_back(const_cast<void*>(ctx.input(i).data));
      widths.push_back(ctx.input(i).numel() / outer);
    }
    KILN_ASSIGN_OR_RETURN(bool tiled, rowTileParts(ctx, false, out.data, outer, parts, widths, es));
    if (tiled) return Status::ok();
  }
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
  auto parts = ops::splitSizes(
      ctx.node(), ctx.opset(), dim, ctx.outputCount(), hasInput(ctx, 1),
      [&](std::vector<int64_t>* given) { return readInts(ctx, 1, "split", given); });
  if (!parts.isOk())  // the reader's errors name the node already
    return parts.status().node() ? parts.status() : ctx.error(parts.status().message());
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
  std::vector<DeviceTensor> outputs(sizes.size());
  std::vector<void*> parts(sizes.size(), nullptr);
  std::vector<int64_t> widths;
  for (size_t i = 0; i < sizes.size(); ++i) {
    widths.push_back(sizes[i] * inner);
    if (!ctx.wantsOutput(i)) continue;
    Shape shape = in.shape;
    shape[axis] = sizes[i];
    KILN_ASSIGN_OR_RETURN(outputs[i], ctx.allocateOutput(i, in.type, shape));
    parts[i] = outputs[i].data;
  }
  if (sizes.size() > 1) {
    KILN_ASSIGN_OR_RETURN(
        bool tiled, rowTileParts(ctx, true, const_cast<void*>(in.data), outer, parts, widths, es));
    if (tiled) return Status::ok();
  }
  int64_t offset = 0;  // bytes into each input row
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t rowBytes = sizes[i] * inner * es;
    if (ctx.wantsOutput(i))
      KILN_RETURN_IF_ERROR(copyRows(ctx, byteOffset(in.data, offset), inRow, outputs[i].data,
                                    rowBytes, outer, rowBytes));
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
