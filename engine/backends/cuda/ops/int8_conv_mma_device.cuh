// Device code shared by Kiln's two INT8 implicit-GEMM kernels (int8_conv_mma.cu with
// mma.sync, int8_conv_wgmma.cu with sm_90a warpgroup MMAs): the kernels' arguments,
// the copy side that stages chunks of X and W (and the residual tile) into shared
// memory with cp.async, and the conversion-free epilogue arithmetic. The contract of
// the convolution itself is int8_conv_mma.h's. Include from .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/async_copy.cuh"
#include "backends/cuda/ops/int8_conv_mma.h"
#include "kiln/status.h"

namespace kiln::cuda::int8mma {

constexpr int kDepth = 64;  // input channels (bytes) per chunk

// n / d and n % d for 0 <= n < 2^31 by a multiply and a shift: m = ceil(2^p / d) with
// p = 31 + ceil(log2 d) leaves an error below 2^-ceil(log2 d) <= 1/d, too small to
// reach the next integer (integer division is a ~25-instruction routine on the GPU,
// 64-bit division ~70).
struct FastDivisor {
  uint32_t d = 1, shift = 31;
  uint64_t m = uint64_t{1} << 31;
  FastDivisor() = default;
  explicit FastDivisor(uint32_t divisor) : d(divisor) {
    uint32_t log = 0;
    while ((uint64_t{1} << log) < divisor) ++log;
    shift = 31 + log;
    m = ((uint64_t{1} << shift) + divisor - 1) / divisor;
  }
  __device__ __forceinline__ uint32_t quotient(uint32_t n) const {
    return static_cast<uint32_t>((static_cast<uint64_t>(n) * m) >> shift);
  }
};

struct ConvMmaArgs {
  const int8_t* x;
  const int8_t* w;
  const float* alpha;
  const float* bias;
  const int8_t* z;  // null: no residual
  int8_t* y;
  float beta;
  int rows;  // N * P * Q (< 2^31)
  int h, w_, c, k, s;
  FastDivisor pq, q, colTiles;  // P * Q, Q, K / columns per tile
  int chunks;                   // R * S * C / 64
  int strideH, strideW, padH, padW, dilationH, dilationW;
  bool relu;
};

// The wgmma tiles (int8_conv_wgmma.cu, compiled for sm_90a only): their names and
// column counts, and the launcher for one of them (index into these arrays).
constexpr int kWgmmaTileCount = 3;
constexpr int kWgmmaTileCols[kWgmmaTileCount] = {128, 64, 128};
constexpr const char* kWgmmaTileNames[kWgmmaTileCount] = {"wg128x128", "wg128x64", "wg128x128d"};
Status launchWgmmaTile(int tile, const ConvMmaArgs& args, cudaStream_t stream);

// The halo kernel (int8_conv_halo.cu): 3x3, stride 1, dilation 1, C == K == 64; one
// tile of 8 x 16 output pixels of one image, all 64 channels. p and q: Y's height and
// width (args.rows = N P Q).
constexpr const char* kHaloTileName = "halo8x16";
bool haloFits(const Int8ConvMmaShape& shape);
Status launchHaloTile(const ConvMmaArgs& args, int p, int q, cudaStream_t stream);

// The epilogue avoids int <-> float conversion instructions: they issue at 16 per
// clock per SM on sm_80/sm_90 against 64-128 for integer and float arithmetic, and
// three per output value (accumulator, residual, result) bounded the 1x1 layers
// (Nsight Compute, ResNet-50 layer1 conv3). Instead, with kMagic = 1.5 * 2^23 (the
// float whose mantissa ulp is 1):
//  - an int32 x with |x| < 2^22 is as_float(as_int(kMagic) + x) - kMagic, exactly;
//  - an int8 b is as_float(0x4B000000 | (b ^ 0x80)) - (2^23 + 128), exactly;
//  - rn(v) for |v| <= 2^22 is the low bits of as_int(v + kMagic) (the add rounds to
//    nearest even, as cvt.rni does), so a value clamped to [low, 127] first gives the
//    saturated int8 in its low byte.
constexpr float kMagic = 12582912.f;
constexpr int kMagicBits = 0x4B400000;

// Exact float of an accumulator; the integer route needs |acc| < 2^22 (SmallDepth:
// at most 256 products of |x| <= 128 and |w| <= 127 per output).
template <bool SmallDepth>
__device__ __forceinline__ float accumulatorToFloat(int32_t acc) {
  if (SmallDepth) return __int_as_float(kMagicBits + acc) - kMagic;
  return static_cast<float>(acc);
}

// Byte i of `flipped` (an int8 with its sign bit flipped) as a float.
__device__ __forceinline__ float flippedByteToFloat(uint32_t flipped, int i) {
  return __int_as_float(static_cast<int>(__byte_perm(flipped, 0x4B000000u, 0x7440u | i))) -
         8388736.f;
}

// sat8(rn(max(v, low))) in the low byte (low is 0 for ReLU, else -128).
__device__ __forceinline__ uint32_t requantize(float v, float low) {
  return static_cast<uint32_t>(__float_as_int(fminf(fmaxf(v, low), 127.f) + kMagic));
}

// The low bytes of a, b, c and d, packed.
__device__ __forceinline__ uint32_t packLowBytes(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return __byte_perm(__byte_perm(a, b, 0x3340u), __byte_perm(c, d, 0x3340u), 0x5410u);
}

// Eight consecutive output channels of one pixel: `cell` holds their int8 residual
// (when Residual) and receives their int8 values; acc(e) is channel e's accumulator.
template <bool Residual, bool SmallDepth, class Accumulator>
__device__ __forceinline__ void requantizeEight(Accumulator acc, const float (&alpha)[8],
                                                const float (&bias)[8], float beta, float low,
                                                uint2* cell) {
  uint2 residual = make_uint2(0, 0);
  if (Residual) {
    residual = *cell;
    residual.x ^= 0x80808080u;
    residual.y ^= 0x80808080u;
  }
  uint32_t q[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    float v = accumulatorToFloat<SmallDepth>(acc(e)) * alpha[e] + bias[e];
    if (Residual) v += beta * flippedByteToFloat(e < 4 ? residual.x : residual.y, e & 3);
    q[e] = requantize(v, low);
  }
  *cell = make_uint2(packLowBytes(q[0], q[1], q[2], q[3]), packLowBytes(q[4], q[5], q[6], q[7]));
}

// alpha and bias of 8 consecutive channels from `first`.
__device__ __forceinline__ void loadEight(const float* first, float (&out)[8]) {
  *reinterpret_cast<float4*>(out) = __ldg(reinterpret_cast<const float4*>(first));
  *reinterpret_cast<float4*>(out + 4) = __ldg(reinterpret_cast<const float4*>(first + 4));
}

// The copy side of a persistent block: it walks the block's (tile, chunk) steps in
// order and, per step, copies the chunk of X (the tile's rows at one filter tap, 64
// channels) and of W (the tile's columns, the same 64 of depth) into a stage of
// shared memory, and with a tile's first chunk its residual tile into one of two
// output buffers. T gives the tile (kRows, kCols, kThreads, kStages, kStageBytes,
// kOutStride, kOutPieces) and where things go in shared memory:
//   T::xRow(tid, i), T::piece(tid)   the X row and the 16-byte piece thread tid copies
//                                     in its i-th pass (rows kThreads / 4 apart);
//   T::offset(row, piece)            that piece's byte offset in a staged operand;
//   T::wChannel(row)                 the output channel (within the tile) staged in W's
//                                     row `row`;
//   T::operandBytes(rows)            bytes of a staged operand of `rows` rows;
//   T::outPiece(tid, j, &r, &column)  the j-th 16-byte piece of the output tile thread
//                                     tid moves (row r, byte column).
template <class T, bool Residual>
struct ChunkLoader {
  static constexpr int kRowsPerPass = T::kThreads / 4;
  static constexpr int kXPerThread = T::kRows / kRowsPerPass;
  static constexpr int kWPerThread = T::kCols / kRowsPerPass;
  static_assert(T::kRows % kRowsPerPass == 0 && T::kCols % kRowsPerPass == 0);

  const ConvMmaArgs& p;
  int8_t* shared;
  int8_t* outTiles;
  int tid, tiles, colTiles;
  int tile, row0 = 0, local = 0, chunk = 0, col0 = 0, stage = 0;
  int c0 = 0, tapRow = 0, tapColumn = 0;  // the chunk's channels and filter tap
  int64_t imageOffset[kXPerThread];
  int topRow[kXPerThread], leftColumn[kXPerThread];

  __device__ ChunkLoader(const ConvMmaArgs& args, int8_t* sharedBase, int8_t* outBase, int tiles_)
      : p(args),
        shared(sharedBase),
        outTiles(outBase),
        tid(threadIdx.x),
        tiles(tiles_),
        colTiles(static_cast<int>(args.colTiles.d)),
        tile(blockIdx.x) {
    locate();
  }

  // Where the tile `tile` lies: its first row and column, and per X row of this
  // thread the image it belongs to and the input pixel of tap (0, 0).
  __device__ __forceinline__ void locate() {
    const int rowTile = static_cast<int>(p.colTiles.quotient(tile));
    col0 = (tile - rowTile * colTiles) * T::kCols;
    row0 = rowTile * T::kRows;
#pragma unroll
    for (int i = 0; i < kXPerThread; ++i) {
      const int row = row0 + T::xRow(tid, i);
      imageOffset[i] = 0;
      topRow[i] = -(1 << 30);  // past the end: every tap is outside
      leftColumn[i] = 0;
      if (row < p.rows) {
        const int image = static_cast<int>(p.pq.quotient(row));
        const int pixel = row - image * static_cast<int>(p.pq.d);
        const int outRow = static_cast<int>(p.q.quotient(pixel));
        imageOffset[i] = static_cast<int64_t>(image) * p.h * p.w_ * p.c;
        topRow[i] = outRow * p.strideH - p.padH;
        leftColumn[i] = (pixel - outRow * static_cast<int>(p.q.d)) * p.strideW - p.padW;
      }
    }
  }

  // The steps this block runs: its tiles (blockIdx.x, + gridDim.x, ...) times the chunks.
  __device__ __forceinline__ int blockSteps() const {
    const int myTiles = (tiles - static_cast<int>(blockIdx.x) + gridDim.x - 1) / gridDim.x;
    return myTiles * p.chunks;
  }

  // Puts the first `ahead` steps' copies in flight, one commit group each.
  __device__ __forceinline__ void prime(int ahead, int steps) {
    for (int step = 0; step < ahead; ++step) {
      if (step < steps) issue();
      commitCopies();
    }
  }

  // Copies the next step's chunk (and residual tile), then advances to the step after.
  __device__ __forceinline__ void issue() {
    int8_t* xs = shared + stage * T::kStageBytes;
    int8_t* ws = xs + T::operandBytes(T::kRows);
    const int piece = T::piece(tid);
    const int64_t wRowBytes = static_cast<int64_t>(p.chunks) * kDepth;
#pragma unroll
    for (int i = 0; i < kXPerThread; ++i) {
      const int r = T::xRow(tid, i);
      const int ih = topRow[i] + tapRow * p.dilationH, iw = leftColumn[i] + tapColumn * p.dilationW;
      const bool inside = ih >= 0 && ih < p.h && iw >= 0 && iw < p.w_;
      const int8_t* src =
          inside ? p.x + imageOffset[i] + (static_cast<int64_t>(ih) * p.w_ + iw) * p.c + c0 + piece
                 : p.x;
      copyAsync16(xs + T::offset(r, piece), src, inside);
    }
#pragma unroll
    for (int i = 0; i < kWPerThread; ++i) {
      const int r = T::xRow(tid, i);
      copyAsync16(
          ws + T::offset(r, piece),
          p.w + (col0 + T::wChannel(r)) * wRowBytes + static_cast<int64_t>(chunk) * kDepth + piece,
          true);
    }
    if (Residual && chunk == 0) {
      int8_t* zs = outTiles + (local & 1) * T::kRows * T::kOutStride;
#pragma unroll
      for (int j = 0; j < T::kOutPieces; ++j) {
        int r, column;
        T::outPiece(tid, j, &r, &column);
        const bool inside = row0 + r < p.rows;
        copyAsync16(zs + r * T::kOutStride + column,
                    inside ? p.z + static_cast<int64_t>(row0 + r) * p.k + col0 + column : p.z,
                    inside);
      }
    }
    stage = stage + 1 == T::kStages ? 0 : stage + 1;
    if ((c0 += kDepth) == p.c) {
      c0 = 0;
      if (++tapColumn == p.s) {
        tapColumn = 0;
        ++tapRow;
      }
    }
    if (++chunk == p.chunks) {
      chunk = 0;
      tapRow = 0;
      ++local;
      tile += gridDim.x;
      if (tile < tiles) locate();
    }
  }
};

// The output tile (kRows x kCols int8 in shared memory, rows kOutStride apart) leaves
// in 16-byte stores; rows past the last pixel stay behind.
template <class T>
__device__ __forceinline__ void storeTile(const ConvMmaArgs& p, const int8_t* out, int row0,
                                          int col0) {
#pragma unroll
  for (int j = 0; j < T::kOutPieces; ++j) {
    int r, column;
    T::outPiece(threadIdx.x, j, &r, &column);
    if (row0 + r < p.rows)
      *reinterpret_cast<int4*>(p.y + static_cast<int64_t>(row0 + r) * p.k + col0 + column) =
          *reinterpret_cast<const int4*>(out + r * T::kOutStride + column);
  }
}

// Launches Kernel (a persistent kernel of tile T, taking `args`) with as many blocks as
// fit the GPU at once, or one per tile when there are fewer tiles; per device, the
// kernel's shared-memory limit is raised once (the tiles need more than the default 48
// KiB) and the resident block count remembered.
template <class T, auto Kernel, class Args>
Status launchPersistent(const Args& args, int64_t tiles, cudaStream_t stream, const char* name) {
  static std::atomic<int64_t> residentPerDevice[64] = {};
  int device = 0;
  KILN_CUDA_CHECK(cudaGetDevice(&device));
  int64_t resident = device >= 0 && device < 64 ? residentPerDevice[device].load() : 0;
  if (resident <= 0) {
    KILN_CUDA_CHECK(
        cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes));
    int perSm = 0, sms = 0;
    KILN_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, Kernel, T::kThreads, T::kSmemBytes));
    KILN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    if (perSm < 1)
      return Status(StatusCode::kUnsupported,
                    std::string(name) + " does not fit an SM of this device");
    resident = static_cast<int64_t>(perSm) * sms;
    if (device >= 0 && device < 64) residentPerDevice[device].store(resident);
  }
  if (tiles <= 0) return Status::ok();
  Kernel<<<static_cast<unsigned>(std::min(tiles, resident)), T::kThreads, T::kSmemBytes, stream>>>(
      args);
  KILN_CUDA_CHECK_LAUNCH(name);
  return Status::ok();
}

// Tiles of a kernel that cuts Y into kRows pixel rows x kCols channels.
template <class T>
int64_t pixelRowTiles(const ConvMmaArgs& args) {
  return (int64_t{args.rows} + T::kRows - 1) / T::kRows * (args.k / T::kCols);
}

// Tile::run<Stages, Residual, SmallDepth>(args, stream) for the layer: three stages of
// chunks in flight, or two when a tile has one chunk (the kernels' residual buffers
// need kStages - 1 <= chunks); the epilogue's integer route when the depth is at
// most 256.
template <class Tile>
Status launchVariant(const ConvMmaArgs& args, cudaStream_t stream) {
  const bool small = args.chunks * kDepth <= 256;
  if (args.chunks == 1)
    return args.z ? Tile::template run<2, true, true>(args, stream)
                  : Tile::template run<2, false, true>(args, stream);
  if (small)
    return args.z ? Tile::template run<3, true, true>(args, stream)
                  : Tile::template run<3, false, true>(args, stream);
  return args.z ? Tile::template run<3, true, false>(args, stream)
                : Tile::template run<3, false, false>(args, stream);
}

}  // namespace kiln::cuda::int8mma
