// Kiln's INT8 implicit-GEMM convolution (int8_conv_mma.h has the contract). A thread
// block computes a kRows x kCols tile of Y (output pixels x output channels) with
// int8 tensor-core MMAs (mma.sync m16n8k32, int32 accumulate), its warps in a
// kWarpsM x kWarpsN grid. The depth runs in 64-channel chunks of one filter tap each;
// blocks are persistent, and kStages - 1 chunks of X and W are in flight ahead of the
// one being multiplied, across tile boundaries (cp.async into shared memory, rows
// padded by 16 bytes so that ldmatrix's A rows hit 32 different banks; the B rows too
// in the "p" tiles, int8_mma_sync_warp.cuh).
// The chunk of X for tap (r, s) reads, for each output pixel, the input pixel the tap
// lands on, or zeros (cp.async's zero fill) where it falls outside the image. The
// residual tile is requested with the first chunk into the epilogue's tile; the
// epilogue turns each accumulator into its int8 value in place and the tile leaves
// in coalesced 16-byte stores.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/int8_conv_mma.h"
#include "backends/cuda/ops/int8_conv_mma_device.cuh"
#include "backends/cuda/ops/int8_mma_sync_warp.cuh"
#include "backends/cuda/sm90a_device.h"

namespace kiln::cuda {
namespace {

using namespace int8mma;

constexpr int kChunkStride = kDepth + 16;  // bytes per row of a staged chunk

template <int Rows, int Cols, int WarpsM, int WarpsN, int Stages, bool PermutedB>
struct TileShape {
  static constexpr bool kPermutedB = PermutedB;
  static constexpr int kRows = Rows, kCols = Cols, kWarpsN = WarpsN, kStages = Stages;
  static constexpr int kThreads = WarpsM * WarpsN * 32;
  static constexpr int kWarpRows = Rows / WarpsM, kWarpCols = Cols / WarpsN;
  static constexpr int kTilesM = kWarpRows / 16, kTilesN = kWarpCols / 8;
  static constexpr int kStageBytes = (Rows + Cols) * kChunkStride;
  static constexpr int kOutStride = Cols + 32;  // rows 8 banks apart: 8-byte accesses
                                                // of 4 rows x 4 quads hit 32 banks
  static constexpr int kOutPieces = Rows * Cols / 16 / kThreads;  // 16-byte pieces per thread
  static constexpr int kSmemBytes = Stages * kStageBytes + 2 * Rows * kOutStride;
  static_assert(kTilesN == 4 && (Rows * Cols / 16) % kThreads == 0 && kTilesM >= 1);
  // The copy side's layout (ChunkLoader): 4 threads per 64-byte row, rows padded by
  // 16 bytes so that ldmatrix's A rows hit 32 different banks; W's rows in channel
  // order, or permuted (int8_mma_sync_warp.cuh says why).
  __device__ static int xRow(int tid, int i) { return (tid >> 2) + i * (kThreads / 4); }
  __device__ static int piece(int tid) { return (tid & 3) * 16; }
  __device__ static int offset(int row, int piece) { return row * kChunkStride + piece; }
  __device__ static int wChannel(int row) { return PermutedB ? permutedChannel(row) : row; }
  __host__ __device__ static constexpr int operandBytes(int rows) { return rows * kChunkStride; }
  __device__ static void outPiece(int tid, int j, int* r, int* column) {
    const int index = tid + j * kThreads;
    *r = index / (Cols / 16);
    *column = (index % (Cols / 16)) * 16;
  }
};

// 64x128 tiles lost every ResNet-50 layer to 128x128 on an H100 (bench/probes). The
// "p" tiles stage W permuted (conflict-free B loads): 3-15% faster than their plain
// twins on every ResNet-50 layer of the H100 probe (docs/quantization.md).
constexpr int kTileCount = 4;
constexpr int kTileCols[kTileCount] = {128, 64, 128, 64};
constexpr const char* kTileNames[kTileCount] = {"128x128", "128x64", "128x128p", "128x64p"};

// A persistent block runs tiles blockIdx.x, + gridDim.x, ... (column tiles fastest)
// as one stream of (tile, chunk) steps: the copies for step i + kStages - 1 are in
// flight while step i computes, across tile boundaries, so the next tile's X, W and
// residual arrive during this tile's last MMAs, epilogue and stores. The residual
// (then the output) tile alternates between two buffers; its copy goes out with the
// tile's first chunk, kStages - 1 steps ahead, which never reaches back into the tile
// before the current one as long as kStages - 1 <= chunks (the launcher's choice).
template <class T, bool Residual, bool SmallDepth>
__global__ void __launch_bounds__(T::kThreads, 2) int8ConvMmaKernel(ConvMmaArgs p) {
  extern __shared__ __align__(16) int8_t shared[];
  int8_t* const outTiles = shared + T::kStages * T::kStageBytes;  // 2 x (Z, then Y)
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int colTiles = static_cast<int>(p.colTiles.d);
  const int tiles = (p.rows + T::kRows - 1) / T::kRows * colTiles;
  const int warpRow = (warp / T::kWarpsN) * T::kWarpRows;
  const int warpCol = (warp % T::kWarpsN) * T::kWarpCols;

  ChunkLoader<T, Residual> loader(p, shared, outTiles, tiles);
  const int steps = loader.blockSteps();
  loader.prime(T::kStages - 1, steps);

  // The compute side: the step it runs, and its tile.
  int tile = blockIdx.x, local = 0;
  int chunk = 0, stage = 0;
  int32_t acc[T::kTilesM][T::kTilesN][4] = {};
  for (int step = 0; step < steps; ++step) {
    waitCopies<T::kStages - 2>();
    __syncthreads();  // step's copies are in; every warp is done with the stage refilled next
    if (step + T::kStages - 1 < steps) loader.issue();
    commitCopies();
    const int8_t* xs = shared + stage * T::kStageBytes;
    const int8_t* ws = xs + T::kRows * kChunkStride;
    stage = stage + 1 == T::kStages ? 0 : stage + 1;
#pragma unroll
    for (int kk = 0; kk < kDepth; kk += 32)
      warpMmaStep<T::kTilesM, kChunkStride, T::kPermutedB>(
          acc,
          [&](int m) {
            return xs + (warpRow + m * 16 + (lane & 15)) * kChunkStride + kk + (lane >> 4) * 16;
          },
          ws, warpCol, kk, lane);
    if (++chunk < p.chunks) continue;

    // The tile is done: its residual is in (copied with its first chunk, waited for at
    // the top of this step). Each accumulator becomes its int8 value in place.
    chunk = 0;
    const int rowTile = static_cast<int>(p.colTiles.quotient(tile));
    const int col0 = (tile - rowTile * colTiles) * T::kCols;
    const int row0 = rowTile * T::kRows;
    int8_t* const out = outTiles + (local & 1) * T::kRows * T::kOutStride;
    warpEpilogue<T::kTilesM, Residual, SmallDepth>(acc, p, col0, warpRow, warpCol, lane, out,
                                                   T::kOutStride);
    __syncthreads();
    storeTile<T>(p, out, row0, col0);
    ++local;
    tile += gridDim.x;
  }
  waitCopies<0>();
}

// The mma.sync tiles: rows x columns, warps along each, W's staging.
template <int Rows, int Cols, int WarpsM, int WarpsN, bool PermutedB>
struct MmaTile {
  template <int Stages, bool Residual, bool SmallDepth>
  static Status run(const ConvMmaArgs& args, cudaStream_t stream) {
    using T = TileShape<Rows, Cols, WarpsM, WarpsN, Stages, PermutedB>;
    return launchPersistent<T, int8ConvMmaKernel<T, Residual, SmallDepth>>(
        args, pixelRowTiles<T>(args), stream, "int8ConvMmaKernel");
  }
};

bool shapeFits(const Int8ConvMmaShape& s) {
  const int64_t limit = int64_t{1} << 30;
  return s.n > 0 && s.n * s.p * s.q < limit && s.n * s.h * s.w < limit && s.c > 0 &&
         s.c % kDepth == 0 && s.k > 0 && s.k % 64 == 0 && s.r > 0 && s.s > 0 && s.p > 0 &&
         s.q > 0 && s.h * s.w < limit && s.p * s.q < limit && s.r * s.s * s.c < limit &&
         s.k < limit && s.strideH > 0 && s.strideW > 0 && s.dilationH > 0 && s.dilationW > 0 &&
         s.padH >= 0 && s.padW >= 0;
}

// The wgmma tiles follow the mma.sync ones in the tile numbering, the halo tile last.
constexpr int kHaloTile = kTileCount + kWgmmaTileCount;
int tileColumns(int tile) {
  if (tile >= 0 && tile < kTileCount) return kTileCols[tile];
  if (tile >= kTileCount && tile < kHaloTile) return kWgmmaTileCols[tile - kTileCount];
  if (tile == kHaloTile) return 64;
  return 0;
}

// The wgmma tiles pass test_cuda_int8 on an H100 but lost every ResNet-50 layer of the
// probe to the mma.sync tiles (1.2-2x slower, docs/quantization.md): raced only with
// KILN_INT8_WGMMA_TILES=1, so a default build does not spend time on them.
bool wgmmaTilesOffered() {
  const char* value = std::getenv("KILN_INT8_WGMMA_TILES");
  return value && std::string(value) == "1";
}

}  // namespace

std::vector<int> int8ConvMmaTiles(const Int8ConvMmaShape& shape) {
  std::vector<int> tiles;
  if (!shapeFits(shape)) return tiles;
  const int count = kTileCount + (wgmmaTilesOffered() && deviceRunsSm90a() ? kWgmmaTileCount : 0);
  for (int tile = 0; tile < count; ++tile)
    if (shape.k % tileColumns(tile) == 0) tiles.push_back(tile);
  if (haloFits(shape)) tiles.push_back(kHaloTile);
  return tiles;
}

std::string int8ConvMmaTileName(int tile) {
  if (tile >= 0 && tile < kTileCount) return kTileNames[tile];
  if (tile >= kTileCount && tile < kHaloTile) return kWgmmaTileNames[tile - kTileCount];
  if (tile == kHaloTile) return kHaloTileName;
  return "?";
}

Status runInt8ConvMma(int tile, const Int8ConvMmaShape& shape, const void* x, const void* w,
                      const float* alpha, const float* bias, float beta, const void* z, void* y,
                      bool relu, cudaStream_t stream) {
  const int columns = tileColumns(tile);
  if (!shapeFits(shape) || columns == 0 || shape.k % columns != 0)
    return Status(StatusCode::kInvalidArgument,
                  "Kiln's int8 MMA kernel needs C % 64 == 0 and K % " +
                      std::to_string(columns > 0 ? columns : 64) + " == 0 (C " +
                      std::to_string(shape.c) + ", K " + std::to_string(shape.k) + ")");
  if (tile == kHaloTile && !haloFits(shape))
    return Status(StatusCode::kInvalidArgument,
                  "Kiln's halo kernel needs a 3x3 stride 1 convolution with C == K == 64");
  if (tile >= kTileCount && tile < kHaloTile && !deviceRunsSm90a())
    return Status(StatusCode::kUnsupported,
                  "Kiln's wgmma kernels need a compute capability 9.0 GPU and an sm_90a build");
  ConvMmaArgs args{};
  args.x = static_cast<const int8_t*>(x);
  args.w = static_cast<const int8_t*>(w);
  args.alpha = alpha;
  args.bias = bias;
  args.z = static_cast<const int8_t*>(z);
  args.y = static_cast<int8_t*>(y);
  args.beta = beta;
  args.rows = static_cast<int>(shape.n * shape.p * shape.q);
  args.h = static_cast<int>(shape.h);
  args.w_ = static_cast<int>(shape.w);
  args.c = static_cast<int>(shape.c);
  args.k = static_cast<int>(shape.k);
  args.s = static_cast<int>(shape.s);
  args.pq = FastDivisor(static_cast<uint32_t>(shape.p * shape.q));
  args.q = FastDivisor(static_cast<uint32_t>(shape.q));
  args.colTiles = FastDivisor(static_cast<uint32_t>(shape.k / columns));
  args.chunks = static_cast<int>(shape.r * shape.s * shape.c / kDepth);
  args.strideH = shape.strideH;
  args.strideW = shape.strideW;
  args.padH = shape.padH;
  args.padW = shape.padW;
  args.dilationH = shape.dilationH;
  args.dilationW = shape.dilationW;
  args.relu = relu;
  if (tile == kHaloTile)
    return launchHaloTile(args, static_cast<int>(shape.p), static_cast<int>(shape.q), stream);
#ifdef KILN_HAVE_SM90A
  if (tile >= kTileCount) return launchWgmmaTile(tile - kTileCount, args, stream);
#endif
  switch (tile) {
    case 0:
      return launchVariant<MmaTile<128, 128, 2, 4, false>>(args, stream);
    case 1:
      return launchVariant<MmaTile<128, 64, 4, 2, false>>(args, stream);
    case 2:
      return launchVariant<MmaTile<128, 128, 2, 4, true>>(args, stream);
    default:
      return launchVariant<MmaTile<128, 64, 4, 2, true>>(args, stream);
  }
}

}  // namespace kiln::cuda
