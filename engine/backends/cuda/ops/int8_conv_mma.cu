// Kiln's INT8 implicit-GEMM convolution (int8_conv_mma.h has the contract). A thread
// block computes a kRows x kCols tile of Y (output pixels x output channels) with
// int8 tensor-core MMAs (mma.sync m16n8k32, int32 accumulate), its warps in a
// kWarpsM x kWarpsN grid. The depth runs in 64-channel chunks of one filter tap each;
// blocks are persistent, and kStages - 1 chunks of X and W are in flight ahead of the
// one being multiplied, across tile boundaries (cp.async into shared memory, rows
// padded by 16 bytes so that ldmatrix and the MMA fragments hit 32 different banks).
// The chunk of X for tap (r, s) reads, for each output pixel, the input pixel the tap
// lands on, or zeros (cp.async's zero fill) where it falls outside the image. The
// residual tile is requested with the first chunk into the epilogue's tile; the
// epilogue turns each accumulator into its int8 value in place and the tile leaves
// in coalesced 16-byte stores.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/int8_conv_mma.h"

namespace kiln::cuda {
namespace {

constexpr int kDepth = 64;                 // input channels (bytes) per chunk
constexpr int kChunkStride = kDepth + 16;  // bytes per row of a staged chunk

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

template <int Rows, int Cols, int WarpsM, int WarpsN, int Stages>
struct TileShape {
  static constexpr int kRows = Rows, kCols = Cols, kWarpsN = WarpsN, kStages = Stages;
  static constexpr int kThreads = WarpsM * WarpsN * 32;
  static constexpr int kWarpRows = Rows / WarpsM, kWarpCols = Cols / WarpsN;
  static constexpr int kTilesM = kWarpRows / 16, kTilesN = kWarpCols / 8;
  static constexpr int kRowsPerPass = kThreads / 4;  // 4 threads per 64-byte row
  static constexpr int kXPerThread = Rows / kRowsPerPass, kWPerThread = Cols / kRowsPerPass;
  static constexpr int kStageBytes = (Rows + Cols) * kChunkStride;
  static constexpr int kOutStride = Cols + 32;  // rows 8 banks apart: 8-byte accesses
                                                // of 4 rows x 4 quads hit 32 banks
  static constexpr int kOutPieces = Rows * Cols / 16 / kThreads;  // 16-byte pieces per thread
  static constexpr int kSmemBytes = Stages * kStageBytes + 2 * Rows * kOutStride;
  static_assert(kTilesN == 4 && Rows % kRowsPerPass == 0 && Cols % kRowsPerPass == 0 &&
                (Rows * Cols / 16) % kThreads == 0 && kTilesM >= 1);
};

// 64x128 tiles lost every ResNet-50 layer to 128x128 on an H100 (bench/probes).
constexpr int kTileCount = 2;
constexpr int kTileCols[kTileCount] = {128, 64};
constexpr const char* kTileNames[kTileCount] = {"128x128", "128x64"};

__device__ __forceinline__ void copyAsync16(void* shared, const void* global, bool valid) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(global),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void commitCopies() {
  asm volatile("cp.async.commit_group;\n");
}
template <int Pending>
__device__ __forceinline__ void waitCopies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
}

__device__ __forceinline__ void loadMatrices(uint32_t (&m)[4], const int8_t* shared) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(m[0]), "=r"(m[1]), "=r"(m[2]), "=r"(m[3])
               : "r"(address));
}

__device__ __forceinline__ void mmaS8(int32_t (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                      uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

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
  constexpr int kOutTileBytes = T::kRows * T::kOutStride;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int colTiles = static_cast<int>(p.colTiles.d);
  const int tiles = (p.rows + T::kRows - 1) / T::kRows * colTiles;
  const int myTiles = (tiles - static_cast<int>(blockIdx.x) + gridDim.x - 1) / gridDim.x;
  const int steps = myTiles * p.chunks;
  const int warpRow = (warp / T::kWarpsN) * T::kWarpRows;
  const int warpCol = (warp % T::kWarpsN) * T::kWarpCols;
  const int piece = (tid & 3) * 16;  // this thread's 16 bytes of each 64-byte chunk row
  const int64_t wRowBytes = static_cast<int64_t>(p.chunks) * kDepth;
  auto outPiece = [&](int j, int* r, int* column) {
    const int index = tid + j * T::kThreads;
    *r = index / (T::kCols / 16);
    *column = (index % (T::kCols / 16)) * 16;
  };

  // The copy side: the step it issues next, and where that step's tile lies.
  int loadTile = blockIdx.x, loadRow0 = 0, loadLocal = 0;
  int loadChunk = 0, loadCol0 = 0, loadStage = 0;
  int loadC0 = 0, loadTapRow = 0, loadTapColumn = 0;  // the chunk's channels and filter tap
  int64_t imageOffset[T::kXPerThread];
  int topRow[T::kXPerThread], leftColumn[T::kXPerThread];
  auto locateLoadTile = [&] {
    const int rowTile = static_cast<int>(p.colTiles.quotient(loadTile));
    loadCol0 = (loadTile - rowTile * colTiles) * T::kCols;
    loadRow0 = rowTile * T::kRows;
#pragma unroll
    for (int i = 0; i < T::kXPerThread; ++i) {
      const int row = loadRow0 + (tid >> 2) + i * T::kRowsPerPass;
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
  };
  auto issueStep = [&] {
    int8_t* xs = shared + loadStage * T::kStageBytes;
    int8_t* ws = xs + T::kRows * kChunkStride;
    const int c0 = loadC0, tapRow = loadTapRow, tapColumn = loadTapColumn;
#pragma unroll
    for (int i = 0; i < T::kXPerThread; ++i) {
      const int r = (tid >> 2) + i * T::kRowsPerPass;
      const int ih = topRow[i] + tapRow * p.dilationH, iw = leftColumn[i] + tapColumn * p.dilationW;
      const bool inside = ih >= 0 && ih < p.h && iw >= 0 && iw < p.w_;
      const int8_t* src =
          inside ? p.x + imageOffset[i] + (static_cast<int64_t>(ih) * p.w_ + iw) * p.c + c0 + piece
                 : p.x;
      copyAsync16(xs + r * kChunkStride + piece, src, inside);
    }
#pragma unroll
    for (int i = 0; i < T::kWPerThread; ++i) {
      const int r = (tid >> 2) + i * T::kRowsPerPass;
      copyAsync16(
          ws + r * kChunkStride + piece,
          p.w + (loadCol0 + r) * wRowBytes + static_cast<int64_t>(loadChunk) * kDepth + piece,
          true);
    }
    if (Residual && loadChunk == 0) {
      int8_t* zs = outTiles + (loadLocal & 1) * kOutTileBytes;
#pragma unroll
      for (int j = 0; j < T::kOutPieces; ++j) {
        int r, column;
        outPiece(j, &r, &column);
        const bool inside = loadRow0 + r < p.rows;
        copyAsync16(
            zs + r * T::kOutStride + column,
            inside ? p.z + static_cast<int64_t>(loadRow0 + r) * p.k + loadCol0 + column : p.z,
            inside);
      }
    }
    loadStage = loadStage + 1 == T::kStages ? 0 : loadStage + 1;
    if ((loadC0 += kDepth) == p.c) {
      loadC0 = 0;
      if (++loadTapColumn == p.s) {
        loadTapColumn = 0;
        ++loadTapRow;
      }
    }
    if (++loadChunk == p.chunks) {
      loadChunk = 0;
      loadTapRow = 0;
      ++loadLocal;
      loadTile += gridDim.x;
      if (loadTile < tiles) locateLoadTile();
    }
  };

  locateLoadTile();
#pragma unroll
  for (int stage = 0; stage < T::kStages - 1; ++stage) {
    if (stage < steps) issueStep();
    commitCopies();
  }

  // The compute side: the step it runs, and its tile.
  int tile = blockIdx.x, local = 0;
  int chunk = 0, stage = 0;
  const float low = p.relu ? 0.f : -128.f;
  const int group = lane >> 2, quad = lane & 3;
  int32_t acc[T::kTilesM][T::kTilesN][4] = {};
  for (int step = 0; step < steps; ++step) {
    waitCopies<T::kStages - 2>();
    __syncthreads();  // step's copies are in; every warp is done with the stage refilled next
    if (step + T::kStages - 1 < steps) issueStep();
    commitCopies();
    const int8_t* xs = shared + stage * T::kStageBytes;
    const int8_t* ws = xs + T::kRows * kChunkStride;
    stage = stage + 1 == T::kStages ? 0 : stage + 1;
#pragma unroll
    for (int kk = 0; kk < kDepth; kk += 32) {
      uint32_t a[T::kTilesM][4], b[T::kTilesN][2];
#pragma unroll
      for (int m = 0; m < T::kTilesM; ++m)
        loadMatrices(a[m],
                     xs + (warpRow + m * 16 + (lane & 15)) * kChunkStride + kk + (lane >> 4) * 16);
#pragma unroll
      for (int n = 0; n < T::kTilesN; n += 2) {
        uint32_t four[4];
        // Column j of n tile t is channel 8 (j / 2) + 2 t + j % 2 of the warp's 32: the
        // thread holding columns 2 quad, 2 quad + 1 of each tile then owns 8 consecutive
        // channels, 8 quad .. 8 quad + 7, and the epilogue moves them 8 bytes at a time.
        const int t = n + (lane >> 4), j = lane & 7;
        loadMatrices(four, ws + (warpCol + 8 * (j >> 1) + 2 * t + (j & 1)) * kChunkStride + kk +
                               ((lane >> 3) & 1) * 16);
        b[n][0] = four[0];
        b[n][1] = four[1];
        b[n + 1][0] = four[2];
        b[n + 1][1] = four[3];
      }
#pragma unroll
      for (int m = 0; m < T::kTilesM; ++m)
#pragma unroll
        for (int n = 0; n < T::kTilesN; ++n) mmaS8(acc[m][n], a[m], b[n][0], b[n][1]);
    }
    if (++chunk < p.chunks) continue;

    // The tile is done: its residual is in (copied with its first chunk, waited for at
    // the top of this step). Each accumulator becomes its int8 value in place.
    chunk = 0;
    const int rowTile = static_cast<int>(p.colTiles.quotient(tile));
    const int col0 = (tile - rowTile * colTiles) * T::kCols;
    const int row0 = rowTile * T::kRows;
    int8_t* const out = outTiles + (local & 1) * kOutTileBytes;
    const int column = warpCol + quad * 8;  // this thread's 8 channels (see the B loads)
    float alpha[8], bias[8];
    *reinterpret_cast<float4*>(alpha) =
        __ldg(reinterpret_cast<const float4*>(p.alpha + col0 + column));
    *reinterpret_cast<float4*>(alpha + 4) =
        __ldg(reinterpret_cast<const float4*>(p.alpha + col0 + column + 4));
    *reinterpret_cast<float4*>(bias) =
        __ldg(reinterpret_cast<const float4*>(p.bias + col0 + column));
    *reinterpret_cast<float4*>(bias + 4) =
        __ldg(reinterpret_cast<const float4*>(p.bias + col0 + column + 4));
#pragma unroll
    for (int m = 0; m < T::kTilesM; ++m) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = warpRow + m * 16 + group + half * 8;
        uint2* cell = reinterpret_cast<uint2*>(out + r * T::kOutStride + column);
        uint2 residual = make_uint2(0, 0);
        if (Residual) {
          residual = *cell;
          residual.x ^= 0x80808080u;
          residual.y ^= 0x80808080u;
        }
        uint32_t q[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) {  // channel column + e: n tile e / 2, element e % 2
          int32_t& a = acc[m][e >> 1][half * 2 + (e & 1)];
          float v = accumulatorToFloat<SmallDepth>(a) * alpha[e] + bias[e];
          if (Residual) v += p.beta * flippedByteToFloat(e < 4 ? residual.x : residual.y, e & 3);
          q[e] = requantize(v, low);
          a = 0;
        }
        const uint32_t packed[2] = {packLowBytes(q[0], q[1], q[2], q[3]),
                                    packLowBytes(q[4], q[5], q[6], q[7])};
        *cell = make_uint2(packed[0], packed[1]);
      }
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < T::kOutPieces; ++j) {
      int r, column;
      outPiece(j, &r, &column);
      if (row0 + r < p.rows)
        *reinterpret_cast<int4*>(p.y + static_cast<int64_t>(row0 + r) * p.k + col0 + column) =
            *reinterpret_cast<const int4*>(out + r * T::kOutStride + column);
    }
    ++local;
    tile += gridDim.x;
  }
  waitCopies<0>();
}

// Per device: the kernel's shared-memory limit raised (the tiles need more than the
// default 48 KiB) and how many blocks fill the GPU (persistent blocks).
template <class T, bool Residual, bool SmallDepth>
Result<int64_t> residentBlocks() {
  static std::atomic<int64_t> blocks[64] = {};
  int device = 0;
  KILN_CUDA_CHECK(cudaGetDevice(&device));
  if (device >= 0 && device < 64 && blocks[device].load() > 0) return blocks[device].load();
  KILN_CUDA_CHECK(cudaFuncSetAttribute(int8ConvMmaKernel<T, Residual, SmallDepth>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes));
  int perSm = 0, sms = 0;
  KILN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &perSm, int8ConvMmaKernel<T, Residual, SmallDepth>, T::kThreads, T::kSmemBytes));
  KILN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (perSm < 1)
    return Status(StatusCode::kUnsupported,
                  "Kiln's int8 MMA kernel does not fit an SM of this device");
  const int64_t total = static_cast<int64_t>(perSm) * sms;
  if (device >= 0 && device < 64) blocks[device].store(total);
  return total;
}

template <class T, bool Residual, bool SmallDepth>
Status launch(const ConvMmaArgs& args, cudaStream_t stream) {
  KILN_ASSIGN_OR_RETURN(const int64_t resident, (residentBlocks<T, Residual, SmallDepth>()));
  const int64_t tiles = (int64_t{args.rows} + T::kRows - 1) / T::kRows * (args.k / T::kCols);
  const int64_t blocks = std::min(tiles, resident);
  int8ConvMmaKernel<T, Residual, SmallDepth>
      <<<static_cast<unsigned>(blocks), T::kThreads, T::kSmemBytes, stream>>>(args);
  KILN_CUDA_CHECK_LAUNCH("int8ConvMmaKernel");
  return Status::ok();
}

// Three stages of chunks in flight, or two when a tile has one chunk (see the kernel).
template <int Rows, int Cols, int WarpsM, int WarpsN>
Status launchTile(const ConvMmaArgs& args, cudaStream_t stream) {
  using Two = TileShape<Rows, Cols, WarpsM, WarpsN, 2>;
  using Three = TileShape<Rows, Cols, WarpsM, WarpsN, 3>;
  const bool small = args.chunks * kDepth <= 256;
  if (args.chunks == 1)
    return args.z ? launch<Two, true, true>(args, stream) : launch<Two, false, true>(args, stream);
  if (small)
    return args.z ? launch<Three, true, true>(args, stream)
                  : launch<Three, false, true>(args, stream);
  return args.z ? launch<Three, true, false>(args, stream)
                : launch<Three, false, false>(args, stream);
}

bool shapeFits(const Int8ConvMmaShape& s) {
  const int64_t limit = int64_t{1} << 30;
  return s.n > 0 && s.n * s.p * s.q < limit && s.n * s.h * s.w < limit && s.c > 0 &&
         s.c % kDepth == 0 && s.k > 0 && s.k % 64 == 0 && s.r > 0 && s.s > 0 && s.p > 0 &&
         s.q > 0 && s.h * s.w < limit && s.p * s.q < limit && s.r * s.s * s.c < limit &&
         s.k < limit && s.strideH > 0 && s.strideW > 0 && s.dilationH > 0 && s.dilationW > 0 &&
         s.padH >= 0 && s.padW >= 0;
}

}  // namespace

std::vector<int> int8ConvMmaTiles(const Int8ConvMmaShape& shape) {
  std::vector<int> tiles;
  if (!shapeFits(shape)) return tiles;
  for (int tile = 0; tile < kTileCount; ++tile)
    if (shape.k % kTileCols[tile] == 0) tiles.push_back(tile);
  return tiles;
}

std::string int8ConvMmaTileName(int tile) {
  return tile >= 0 && tile < kTileCount ? kTileNames[tile] : "?";
}

Status runInt8ConvMma(int tile, const Int8ConvMmaShape& shape, const void* x, const void* w,
                      const float* alpha, const float* bias, float beta, const void* z, void* y,
                      bool relu, cudaStream_t stream) {
  if (!shapeFits(shape) || tile < 0 || tile >= kTileCount || shape.k % kTileCols[tile] != 0)
    return Status(StatusCode::kInvalidArgument,
                  "Kiln's int8 MMA kernel needs C % 64 == 0 and K % " +
                      std::to_string(tile >= 0 && tile < kTileCount ? kTileCols[tile] : 64) +
                      " == 0 (C " + std::to_string(shape.c) + ", K " + std::to_string(shape.k) +
                      ")");
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
  args.colTiles = FastDivisor(static_cast<uint32_t>(shape.k / kTileCols[tile]));
  args.chunks = static_cast<int>(shape.r * shape.s * shape.c / kDepth);
  args.strideH = shape.strideH;
  args.strideW = shape.strideW;
  args.padH = shape.padH;
  args.padW = shape.padW;
  args.dilationH = shape.dilationH;
  args.dilationW = shape.dilationW;
  args.relu = relu;
  return tile == 0 ? launchTile<128, 128, 2, 4>(args, stream)
                   : launchTile<128, 64, 4, 2>(args, stream);
}

}  // namespace kiln::cuda
