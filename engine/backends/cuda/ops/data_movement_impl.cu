// The data-movement copies' device half (contract: data_movement_impl.h; host half and the
// ops' contract: data_movement.cpp): the strided copy, the batched 2-D transposes, the
// pitched row copy and Concat's many-input row copy, and their launches.
#include <algorithm>

#include "backends/cuda/ops/data_movement_common.cuh"
#include "backends/cuda/ops/data_movement_impl.h"

namespace kiln::cuda {
namespace {

using namespace dm;

// ============================ strided copy ============================

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

// StridedTranspose: out[.., u, .., l] = in[.. + u + l * inStrides[last]] through a padded
// tile over (u, l). The batch index runs over every other dim; each block works out its
// input and output offsets from it once. The loops depend on the block index only, so every
// thread reaches each barrier.
template <class T>
__global__ void transposeStridedKernel(const T* in, T* out, StridedTranspose t, int64_t batch) {
  __shared__ T tile[kTile][kTile + 1];
  const int last = t.rank - 1;
  const int64_t unitDim = t.dims[t.unit], innerDim = t.dims[last];
  int64_t outStrides[kMaxMovementRank];
  int64_t packed = 1;
  for (int d = last; d >= 0; --d) {
    outStrides[d] = packed;
    packed *= t.dims[d];
  }
  const int64_t u0 = int64_t(blockIdx.y) * kTile, l0 = int64_t(blockIdx.x) * kTile;
  __shared__ int64_t bases[2];
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    // One thread splits the batch index (64-bit divisions, a few hundred cycles); the
    // others wait at the barrier instead of repeating it.
    if (threadIdx.x == 0 && threadIdx.y == 0) {
      int64_t rest = b, inBase = 0, outBase = 0;
      for (int d = last - 1; d >= 0; --d) {
        if (d == t.unit) continue;
        const int64_t c = rest % t.dims[d];
        rest /= t.dims[d];
        inBase += c * t.inStrides[d];
        outBase += c * outStrides[d];
      }
      bases[0] = inBase;
      bases[1] = outBase;
    }
    __syncthreads();
    const int64_t inBase = bases[0], outBase = bases[1];
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      const int64_t l = l0 + j, u = u0 + threadIdx.x;
      if (l < innerDim && u < unitDim)
        tile[j][threadIdx.x] = in[inBase + u + l * t.inStrides[last]];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      const int64_t u = u0 + j, l = l0 + threadIdx.x;
      if (u < unitDim && l < innerDim)
        out[outBase + u * outStrides[t.unit] + l] = tile[threadIdx.x][j];
    }
    __syncthreads();
  }
}

// A batched 2-D transpose with one short side (at most kNarrowTransposeSide), where a 32x32 tile
// would leave most of its threads idle (an image's 3 channels to NHWC: 256x3x50176):
// one thread per element of the long side moves its `narrow` values; neighbouring
// threads touch neighbouring addresses on both sides.
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
void launchNarrowPairs(const BatchedTranspose& t, cudaStream_t stream) {
  transposeNarrowPairsKernel<R><<<gridFor(t.batch * t.cols / 2), kBlockSize, 0, stream>>>(
      static_cast<const uint16_t*>(t.in), static_cast<uint16_t*>(t.out), t.batch, t.cols);
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
// chunkCols = columns [start[0], start[count])) reads the part whose column range holds it
// (why one launch: data_movement_impl.h).
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

// RowRunCopy (data_movement_impl.h): kRows rows staged per block pass, pitch rowRunPitch.
template <class T>
__global__ void rowRunCopyKernel(const T* in, T* out, RowRunCopy c, int blockRows) {
  extern __shared__ uint4 rowRunStage[];
  const int inner = c.inner;
  stagedRowPasses(reinterpret_cast<T*>(rowRunStage), rowRunPitch(inner), out, c.rows, inner,
                  blockRows, [&](int64_t row, T* to) {
                    int64_t rest = row, offset = 0;
                    for (int d = c.outerRank - 1; d >= 0; --d) {
                      int64_t coordinate = 0;
                      rest = divMod(rest, c.outerDims[d], &coordinate);
                      offset += coordinate * c.outerInStrides[d];
                    }
                    const T* from = in + offset;
#pragma unroll 4
                    for (int e = 0; e < inner; ++e) to[e] = from[e * c.innerStride];
                  });
}

// RowTileParts (data_movement_impl.h). Block b stages rows
// [b * tileRows, ...) of the whole side.
template <typename T>
struct RowTileArgs {
  T* parts[kConcatParts];
  int64_t start[kConcatParts + 1];
  int count;
};

template <typename T, bool kSplit>
__global__ void rowTilePartsKernel(RowTileArgs<T> a, T* whole, int64_t rows, int tileRows) {
  __shared__ uint4 stage[kRowTileBytes / 16];
  T* tile = reinterpret_cast<T*>(stage);
  const int64_t cols = a.start[a.count];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int64_t r0 = int64_t(blockIdx.x) * tileRows; r0 < rows;
       r0 += int64_t(gridDim.x) * tileRows) {
    const int tr = static_cast<int>(rows - r0 < tileRows ? rows - r0 : tileRows);
    const int64_t elements = int64_t(tr) * cols;  // <= kRowTileBytes / sizeof(T)
    T* base = whole + r0 * cols;                  // 16-byte aligned (tileRows' contract)
    const int64_t words = elements * int64_t(sizeof(T)) / 16;
    if (kSplit) {
      for (int64_t w = threadIdx.x; w < words; w += blockDim.x)
        stage[w] = reinterpret_cast<const uint4*>(base)[w];
      for (int64_t e = words * (16 / sizeof(T)) + threadIdx.x; e < elements; e += blockDim.x)
        tile[e] = base[e];
      __syncthreads();
    }
    // A warp per (part, row) of the tile: lanes walk the part's columns. A part narrower
    // than a warp would idle most lanes (EdgeNeXt's one-column parts: 31 of 32), so there
    // the block's threads walk the part's elements of the whole tile instead.
    for (int p = 0; p < a.count; ++p) {
      T* part = a.parts[p];
      if (kSplit && !part) continue;
      const int64_t first = a.start[p], width = a.start[p + 1] - first;
      if (width < 32) {
        const int narrow = static_cast<int>(width);
        T* partTile = part + r0 * width;  // the tile's rows of this part are contiguous
        for (int e = threadIdx.x; e < tr * narrow; e += blockDim.x) {
          const int r = e / narrow, c = e - r * narrow;
          T* staged = tile + int64_t(r) * cols + first + c;
          if (kSplit)
            partTile[e] = *staged;
          else
            *staged = partTile[e];
        }
        continue;
      }
      for (int r = warp; r < tr; r += warps) {
        T* row = part + (r0 + r) * width;
        T* staged = tile + int64_t(r) * cols + first;
        if (kSplit) {
          for (int64_t c = lane; c < width; c += 32) row[c] = staged[c];
        } else {
          for (int64_t c = lane; c < width; c += 32) staged[c] = row[c];
        }
      }
    }
    __syncthreads();
    if (!kSplit) {
      for (int64_t w = threadIdx.x; w < words; w += blockDim.x)
        reinterpret_cast<uint4*>(base)[w] = stage[w];
      for (int64_t e = words * (16 / sizeof(T)) + threadIdx.x; e < elements; e += blockDim.x)
        base[e] = tile[e];
      __syncthreads();
    }
  }
}

}  // namespace

namespace dm {

Status launchRowTileParts(const RowTileParts& parts, cudaStream_t stream) {
  const int64_t tiles = (parts.rows + parts.tileRows - 1) / parts.tileRows;
  const unsigned grid =
      static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(tiles, 1), 65535LL * 32));
  KILN_RETURN_IF_ERROR(dispatchWordOfSize(parts.elementBytes, [&](auto element) {
    using T = decltype(element);
    RowTileArgs<T> args{};
    for (int p = 0; p < parts.count; ++p) args.parts[p] = static_cast<T*>(parts.parts[p]);
    for (int p = 0; p <= parts.count; ++p) args.start[p] = parts.start[p];
    args.count = parts.count;
    if (parts.split)
      rowTilePartsKernel<T, true><<<grid, kBlockSize, 0, stream>>>(
          args, static_cast<T*>(parts.whole), parts.rows, parts.tileRows);
    else
      rowTilePartsKernel<T, false><<<grid, kBlockSize, 0, stream>>>(
          args, static_cast<T*>(parts.whole), parts.rows, parts.tileRows);
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("rowTilePartsKernel");
  return Status::ok();
}

Status launchRowRunCopy(const RowRunCopy& c, cudaStream_t stream) {
  const int blockRows = rowRunRowsPerBlock(c.inner, c.elementBytes);
  if (blockRows == 0) return Status(StatusCode::kInternal, "row-run copy rows do not fit");
  const int64_t passes = (c.rows + blockRows - 1) / blockRows;
  const unsigned grid =
      static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(passes, 1), 65535LL * 32));
  const size_t bytes = size_t(blockRows) * rowRunPitch(c.inner) * c.elementBytes;
  KILN_RETURN_IF_ERROR(dispatchWordOfSize(c.elementBytes, [&](auto element) {
    using T = decltype(element);
    rowRunCopyKernel<T><<<grid, kBlockSize, bytes, stream>>>(static_cast<const T*>(c.in),
                                                             static_cast<T*>(c.out), c, blockRows);
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("rowRunCopyKernel");
  return Status::ok();
}

Status launchStridedCopy(const void* in, void* out, const StridedParams& params, int64_t words,
                         int width, cudaStream_t stream) {
  KILN_DM_DISPATCH_WIDTH(width, {
    stridedCopyKernel<<<gridFor(words), kBlockSize, 0, stream>>>(
        static_cast<const V*>(in), static_cast<V*>(out), params, words);
  });
  KILN_CUDA_CHECK_LAUNCH("stridedCopyKernel");
  return Status::ok();
}

Status launchTransposeNarrowPairs(const BatchedTranspose& t, cudaStream_t stream) {
  switch (t.rows) {
    case 1:
      launchNarrowPairs<1>(t, stream);
      break;
    case 2:
      launchNarrowPairs<2>(t, stream);
      break;
    case 3:
      launchNarrowPairs<3>(t, stream);
      break;
    case 4:
      launchNarrowPairs<4>(t, stream);
      break;
    case 5:
      launchNarrowPairs<5>(t, stream);
      break;
    case 6:
      launchNarrowPairs<6>(t, stream);
      break;
    case 7:
      launchNarrowPairs<7>(t, stream);
      break;
    case 8:
      launchNarrowPairs<8>(t, stream);
      break;
    default:
      return Status(StatusCode::kInternal,
                    "transposeNarrowPairsKernel: " + std::to_string(t.rows) + " rows");
  }
  KILN_CUDA_CHECK_LAUNCH("transposeNarrowPairsKernel");
  return Status::ok();
}

Status launchTransposeNarrow(const BatchedTranspose& t, cudaStream_t stream) {
  const bool narrowRows = t.rows <= kNarrowTransposeSide;
  const unsigned grid = gridFor(t.batch * (narrowRows ? t.cols : t.rows));
  KILN_RETURN_IF_ERROR(dispatchWordOfSize(t.elementBytes, [&](auto element) {
    using T = decltype(element);
    if (narrowRows)
      transposeNarrowKernel<T, true><<<grid, kBlockSize, 0, stream>>>(
          static_cast<const T*>(t.in), static_cast<T*>(t.out), t.batch, t.rows, t.cols);
    else
      transposeNarrowKernel<T, false><<<grid, kBlockSize, 0, stream>>>(
          static_cast<const T*>(t.in), static_cast<T*>(t.out), t.batch, t.rows, t.cols);
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("transposeNarrowKernel");
  return Status::ok();
}

Status launchTransposeTiled(const BatchedTranspose& t, cudaStream_t stream) {
  const int64_t tilesR = (t.rows + kTile - 1) / kTile, tilesC = (t.cols + kTile - 1) / kTile;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(tilesC, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(tilesR, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(t.batch, 65535)));
  const dim3 block(kTile, kTileRows);
  KILN_RETURN_IF_ERROR(dispatchWordOfSize(t.elementBytes, [&](auto element) {
    using T = decltype(element);
    transposeTiledKernel<<<grid, block, 0, stream>>>(
        static_cast<const T*>(t.in), static_cast<T*>(t.out), t.batch, t.rows, t.cols);
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("transposeTiledKernel");
  return Status::ok();
}

Status launchStridedTranspose(const StridedTranspose& t, cudaStream_t stream) {
  int64_t batch = 1;
  for (int d = 0; d < t.rank - 1; ++d)
    if (d != t.unit) batch *= t.dims[d];
  const int64_t tilesU = (t.dims[t.unit] + kTile - 1) / kTile;
  const int64_t tilesL = (t.dims[t.rank - 1] + kTile - 1) / kTile;
  if (tilesU > 65535 || tilesL >= int64_t{1} << 31)
    return Status(StatusCode::kInternal, "strided transpose tiles beyond the grid");
  const dim3 grid(static_cast<unsigned>(tilesL), static_cast<unsigned>(tilesU),
                  static_cast<unsigned>(std::min<int64_t>(batch, 65535)));
  const dim3 block(kTile, kTileRows);
  KILN_RETURN_IF_ERROR(dispatchWordOfSize(t.elementBytes, [&](auto element) {
    using T = decltype(element);
    transposeStridedKernel<<<grid, block, 0, stream>>>(static_cast<const T*>(t.in),
                                                       static_cast<T*>(t.out), t, batch);
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("transposeStridedKernel");
  return Status::ok();
}

Status launchCopyRows(const RowCopy& copy, cudaStream_t stream) {
  KILN_DM_DISPATCH_WIDTH(copy.width, {
    copyRowsKernel<<<gridFor(copy.n), kBlockSize, 0, stream>>>(
        static_cast<const V*>(copy.src), copy.srcPitch, static_cast<V*>(copy.dst), copy.dstPitch,
        copy.cols, copy.n);
  });
  KILN_CUDA_CHECK_LAUNCH("copyRowsKernel");
  return Status::ok();
}

Status launchConcatRows(const ConcatRows& rows, cudaStream_t stream) {
  if (rows.n > 0) {
    KILN_DM_DISPATCH_WIDTH(rows.width, {
      ConcatChunk<V> chunk;
      for (int p = 0; p < rows.count; ++p) chunk.src[p] = static_cast<const V*>(rows.src[p]);
      for (int p = 0; p <= rows.count; ++p) chunk.start[p] = rows.start[p];
      chunk.count = rows.count;
      concatRowsKernel<V><<<gridFor(rows.n), kBlockSize, 0, stream>>>(
          chunk, static_cast<V*>(rows.dst), rows.outCols, rows.n);
    });
  }
  KILN_CUDA_CHECK_LAUNCH("concatRowsKernel");
  return Status::ok();
}

}  // namespace dm
}  // namespace kiln::cuda
