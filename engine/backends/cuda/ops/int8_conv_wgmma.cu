// Kiln's INT8 implicit-GEMM convolution on Hopper's warpgroup MMAs (sm_90a `wgmma`;
// int8_conv_mma.h has the contract, int8_conv_mma.cu the mma.sync kernel it shares
// its copy side and epilogue with). A block of two warpgroups computes a kRows x
// kCols tile of Y; each warpgroup multiplies its kRows / 2 rows by the tile's columns
// with wgmma.mma_async m64nNk32 (N = kCols) straight from shared memory, so the
// warps issue one instruction per 64 x N x 32 block instead of loading fragments
// and issuing mma.sync for every 16 x 8 x 32 one (Kiln's mma.sync kernel was
// issue-bound: Nsight Compute, docs/quantization.md).
//
// Shared memory holds each chunk of X and W in wgmma's K-major layout without
// swizzling: 8-row x 16-byte core matrices of 128 contiguous bytes, the four of a
// row group's 64-byte depth one after another (leading byte offset 128), row groups
// 512 bytes apart (stride byte offset 512). A warp's cp.async copies fill one row
// group, 8 rows x 16 bytes per quarter: conflict-free. W's rows are staged in a
// permuted channel order so that each thread's accumulators for one row are 8
// consecutive channels (per 32-channel group), as in the mma.sync kernel's epilogue.
//
// This file is compiled for sm_90a only (engine/CMakeLists.txt); int8_conv_mma.cu
// offers its tiles on compute capability 9.0 devices only.
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/ops/int8_conv_mma.h"
#include "backends/cuda/ops/int8_conv_mma_device.cuh"
#include "backends/cuda/ops/wgmma_common.cuh"

namespace kiln::cuda::int8mma {
namespace {

// wgmma tile: kRows x kCols of Y per block of 2 warpgroups (256 threads), kStages
// chunks staged, kBlocksPerSm blocks resident (the register and shared-memory budget).
template <int Rows, int Cols, int Stages, int BlocksPerSm>
struct WgmmaTile {
  static constexpr int kRows = Rows, kCols = Cols, kStages = Stages, kThreads = 256;
  static constexpr int kBlocksPerSm = BlocksPerSm;
  static constexpr int kWarpgroupRows = Rows / 2, kBlocksM = kWarpgroupRows / 64;
  static constexpr int kStageBytes = (Rows + Cols) * kDepth;
  static constexpr int kOutStride = Cols + 32;  // rows 8 banks apart (see the mma kernel)
  static constexpr int kOutPieces = Rows * Cols / 16 / kThreads;
  static constexpr int kSmemBytes = Stages * kStageBytes + 2 * Rows * kOutStride;
  static_assert(kBlocksM >= 1 && kWarpgroupRows % 64 == 0 && (Cols == 64 || Cols == 128) &&
                Stages >= 3 && Stages <= 8 && kSmemBytes * BlocksPerSm <= 227 * 1024);
  // Warp w copies row group w of each 64-row pass; lane l row l % 8, piece l / 8.
  __device__ static int xRow(int tid, int i) {
    return (tid >> 5) * 8 + (tid & 7) + i * (kThreads / 4);
  }
  __device__ static int piece(int tid) { return ((tid >> 3) & 3) * 16; }
  __device__ static int offset(int row, int piece) {
    return (row >> 3) * 512 + piece * 8 + (row & 7) * 16;
  }
  // MMA column n is n tile t = n / 8, column j = n % 8; it holds channel
  // 32 (t / 4) + 8 (j / 2) + 2 (t % 4) + j % 2, so the thread holding columns 2 quad and
  // 2 quad + 1 of every n tile owns channels 32 g + 8 quad .. + 7 for each group g.
  __device__ static int wChannel(int n) {
    return 32 * (n >> 5) + 8 * ((n & 7) >> 1) + 2 * ((n >> 3) & 3) + (n & 1);
  }
  __host__ __device__ static constexpr int operandBytes(int rows) { return rows * kDepth; }
  __device__ static void outPiece(int tid, int j, int* r, int* column) {
    const int index = tid + j * kThreads;
    *r = index / (Cols / 16);
    *column = (index % (Cols / 16)) * 16;
  }
};

// A shared-memory operand's descriptor: leading (K) byte offset 128, stride (row group) byte
// offset 512, no swizzle.
__device__ __forceinline__ uint64_t operandDescriptor(const int8_t* shared) {
  return wgmma::descriptor(shared, 128, 512);
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
// D (64 x 64, int32, this thread's 32) = A (64 x 32 from shared memory) x B (64 x 32)^T
// + (accumulate ? D : 0); both operands K-major int8, described by 64-bit descriptors.
__device__ __forceinline__ void wgmmaS8(int32_t (&d)[32], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,"
      "%24,%25,%26,%27,%28,%29,%30,%31}, "
      "%32, %33, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]),
        "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]),
        "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]),
        "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]),
        "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
      : "l"(a), "l"(b), "r"(accumulate));
}

// D (64 x 128, int32, this thread's 64) = A (64 x 32 from shared memory) x B (128 x 32)^T
// + (accumulate ? D : 0); both operands K-major int8, described by 64-bit descriptors.
__device__ __forceinline__ void wgmmaS8(int32_t (&d)[64], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,"
      "%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,"
      "%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
      "%64, %65, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]),
        "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]),
        "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]),
        "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]),
        "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]),
        "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
        "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]),
        "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
        "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]),
        "+r"(d[63])
      : "l"(a), "l"(b), "r"(accumulate));
}
#endif

// The persistent schedule, copy side and residual buffers are the mma.sync kernel's
// (ChunkLoader), with `lookahead` = min(kStages - 2, chunks) steps of copies in flight.
// Per step, after the chunk's copies have landed (and been fenced for the async
// proxy) and a barrier, each warpgroup issues its kBlocksM x 2 wgmmas and then waits
// for the previous step's: one step of MMAs stays in flight while the next step
// waits for its copies. The stage refilled at step j was read by step j + lookahead -
// kStages <= j - 2, whose MMAs every warpgroup has waited for before step j's barrier.
// lookahead <= chunks keeps the residual copies at most one tile ahead (two buffers).
template <class T, bool Residual, bool SmallDepth>
__global__ void __launch_bounds__(T::kThreads, T::kBlocksPerSm) int8ConvWgmmaKernel(ConvMmaArgs p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(128) int8_t shared[];
  int8_t* const outTiles = shared + T::kStages * T::kStageBytes;  // 2 x (Z, then Y)
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warpgroup = warp >> 2, warpInGroup = warp & 3;
  const int colTiles = static_cast<int>(p.colTiles.d);
  const int tiles = (p.rows + T::kRows - 1) / T::kRows * colTiles;
  ChunkLoader<T, Residual> loader(p, shared, outTiles, tiles);
  const int steps = loader.blockSteps();
  const int lookahead = min(T::kStages - 2, p.chunks);
  loader.prime(lookahead, steps);

  int stage = 0, step = 0;
  const float low = p.relu ? 0.f : -128.f;
  const int group = lane >> 2, quad = lane & 3;
  int32_t acc[T::kBlocksM][T::kCols / 2] = {};
  // Tiles outside, chunks inside: the chunk loop's back edge then carries nothing but
  // the wgmmas' own accumulators, and ptxas keeps one step of MMAs in flight across it
  // (with the epilogue inside one loop it injected a full wait at every step: C7517).
  for (int tile = blockIdx.x, local = 0; tile < tiles; tile += gridDim.x, ++local) {
    for (int chunk = 0; chunk < p.chunks; ++chunk, ++step) {
      // This step's copies are in when at most lookahead - 1 younger groups are pending.
      if (lookahead >= 6)
        waitCopies<5>();
      else if (lookahead == 5)
        waitCopies<4>();
      else if (lookahead == 4)
        waitCopies<3>();
      else if (lookahead == 3)
        waitCopies<2>();
      else if (lookahead == 2)
        waitCopies<1>();
      else
        waitCopies<0>();
      wgmma::fenceOperands();
      __syncthreads();
      if (step + lookahead < steps) loader.issue();
      commitCopies();
      const int8_t* xs = shared + stage * T::kStageBytes + warpgroup * T::kWarpgroupRows * kDepth;
      const int8_t* ws = shared + stage * T::kStageBytes + T::kRows * kDepth;
      stage = stage + 1 == T::kStages ? 0 : stage + 1;
      wgmma::fence();
#pragma unroll
      for (int m = 0; m < T::kBlocksM; ++m)
#pragma unroll
        for (int kk = 0; kk < 2; ++kk)  // 32 bytes of depth = two core matrices = 256 bytes
          wgmmaS8(acc[m], operandDescriptor(xs + m * 64 * kDepth + kk * 256),
                  operandDescriptor(ws + kk * 256), chunk > 0 || kk > 0);
      wgmma::commit();
      wgmma::wait<1>();
    }
    wgmma::wait<0>();

    const int rowTile = static_cast<int>(p.colTiles.quotient(tile));
    const int col0 = (tile - rowTile * colTiles) * T::kCols;
    const int row0 = rowTile * T::kRows;
    int8_t* const out = outTiles + (local & 1) * T::kRows * T::kOutStride;
#pragma unroll
    for (int g = 0; g < T::kCols / 32; ++g) {
      const int column = 32 * g + 8 * quad;  // this thread's 8 channels of group g
      float alpha[8], bias[8];
      loadEight(p.alpha + col0 + column, alpha);
      loadEight(p.bias + col0 + column, bias);
#pragma unroll
      for (int m = 0; m < T::kBlocksM; ++m) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int r =
              warpgroup * T::kWarpgroupRows + m * 64 + warpInGroup * 16 + group + half * 8;
          // channel column + e: n tile 4 g + e / 2, element e % 2 of row half
          requantizeEight<Residual, SmallDepth>(
              [&](int e) { return acc[m][4 * (4 * g + (e >> 1)) + half * 2 + (e & 1)]; }, alpha,
              bias, p.beta, low, reinterpret_cast<uint2*>(out + r * T::kOutStride + column));
        }
      }
    }
    __syncthreads();
    storeTile<T>(p, out, row0, col0);
  }
  waitCopies<0>();
#else
  __trap();  // compiled for sm_90a only; never launched elsewhere
#endif
}

// launchVariant's stage count (the mma.sync kernel's) does not apply: a wgmma tile has
// its own and adapts its lookahead to the chunk count.
template <int Rows, int Cols, int Stages, int BlocksPerSm>
struct Tile {
  template <int, bool Residual, bool SmallDepth>
  static Status run(const ConvMmaArgs& args, cudaStream_t stream) {
    using T = WgmmaTile<Rows, Cols, Stages, BlocksPerSm>;
    return launchPersistent<T, int8ConvWgmmaKernel<T, Residual, SmallDepth>>(
        args, pixelRowTiles<T>(args), stream, "int8ConvWgmmaKernel");
  }
};

}  // namespace

Status launchWgmmaTile(int tile, const ConvMmaArgs& args, cudaStream_t stream) {
  switch (tile) {
    case 0:
      return launchVariant<Tile<128, 128, 4, 2>>(args, stream);
    case 1:
      return launchVariant<Tile<128, 64, 6, 2>>(args, stream);
    case 2:
      return launchVariant<Tile<128, 128, 8, 1>>(args, stream);
    default:
      return Status(StatusCode::kInvalidArgument, "no wgmma tile " + std::to_string(tile));
  }
}

}  // namespace kiln::cuda::int8mma
