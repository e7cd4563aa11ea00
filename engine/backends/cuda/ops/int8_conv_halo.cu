// Kiln's INT8 3x3 convolution that reads its input once per tile (int8_conv_mma.h has
// the contract; this kernel takes stride 1, dilation 1, C == K == 64: ResNet-50's
// layer1 3x3, 0.17-0.19 ms each in cuDNN against a ~0.05 ms floor on an H100).
//
// The implicit-GEMM kernels (int8_conv_mma.cu, int8_conv_wgmma.cu) stage, for each of
// the 9 taps, the input pixel under every output pixel of the tile: X passes through
// L2 nine times, and on layer3's 3x3 Nsight Compute put L2 at 85% of its peak. Here a
// block stages the halo of its tile once, (8 + 2) x (16 + 2) input pixels of 64
// channels for 8 x 16 output pixels, and the 9 taps read it shifted: ldmatrix takes a
// row address per lane, so the A rows of tap (r, s) are the halo pixels (y + r, x + s)
// with no copy. W (all 9 taps, 64 output channels: 45 KiB) stays in shared memory for
// the block's lifetime (blocks are persistent). The next tile's halo is copied while
// this one computes; the residual tile (when there is one) goes into the output tile
// at the start of the tile and is waited for before the epilogue. MMAs, B fragments
// and epilogue are the mma.sync kernel's (int8_mma_sync_warp.cuh): 8 warps in 4 x 2,
// each 32 output pixels x 32 channels.
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/ops/int8_conv_mma_device.cuh"
#include "backends/cuda/ops/int8_mma_sync_warp.cuh"

namespace kiln::cuda::int8mma {
namespace {

constexpr int kRowStride = kDepth + 16;  // bytes per staged pixel or filter row: 8
                                         // consecutive rows hit 8 different bank groups
constexpr int kTaps = 9;

template <int TH, int TW>
struct HaloTile {
  static constexpr int kRows = TH * TW, kCols = 64, kThreads = 256;
  static constexpr int kWarpsN = 2, kWarpRows = kRows / 4, kWarpCols = 32;
  static constexpr int kTilesM = kWarpRows / 16;
  static constexpr int kHaloW = TW + 2, kHaloPixels = (TH + 2) * kHaloW;
  static constexpr int kWBytes = kTaps * kCols * kRowStride;
  static constexpr int kHaloBytes = kHaloPixels * kRowStride;
  static constexpr int kOutStride = kCols + 32;  // as the mma.sync kernel's output tile
  static constexpr int kOutPieces = kRows * kCols / 16 / kThreads;
  static constexpr int kSmemBytes = kWBytes + 2 * kHaloBytes + kRows * kOutStride;
  static_assert(kWarpRows % 16 == 0 && TW % 16 == 0 && (kRows * kCols / 16) % kThreads == 0);
};

struct HaloArgs {
  ConvMmaArgs conv;  // x, w, alpha, bias, z, y, beta, h, w_, padH, padW, relu
  int p, q;          // Y's height and width
  FastDivisor tilesX, tilesPerImage;
  int tiles;
};

template <class T>
__device__ __forceinline__ void locateTile(const HaloArgs& a, int tile, int* n, int* oy0,
                                           int* ox0) {
  *n = static_cast<int>(a.tilesPerImage.quotient(tile));
  const int inImage = tile - *n * static_cast<int>(a.tilesPerImage.d);
  const int band = static_cast<int>(a.tilesX.quotient(inImage));
  *oy0 = band * (T::kRows / (T::kHaloW - 2));
  *ox0 = (inImage - band * static_cast<int>(a.tilesX.d)) * (T::kHaloW - 2);
}

// This thread's share of the halo of the tile at (n, oy0, ox0): zeros outside the image.
template <class T>
__device__ __forceinline__ void copyHalo(const HaloArgs& a, int n, int oy0, int ox0, int8_t* halo) {
  const ConvMmaArgs& p = a.conv;
  const int iy0 = oy0 - p.padH, ix0 = ox0 - p.padW;
  const int8_t* image = p.x + static_cast<int64_t>(n) * p.h * p.w_ * kDepth;
  for (int i = threadIdx.x; i < T::kHaloPixels * 4; i += T::kThreads) {
    const int pixel = i >> 2, piece = (i & 3) * 16;
    const int hy = pixel / T::kHaloW, hx = pixel - hy * T::kHaloW;
    const int iy = iy0 + hy, ix = ix0 + hx;
    const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w_;
    copyAsync16(halo + pixel * kRowStride + piece,
                inside ? image + (static_cast<int64_t>(iy) * p.w_ + ix) * kDepth + piece : p.x,
                inside);
  }
}

// Output piece j of this thread: pixel row r of the tile and a 16-byte column; its
// place in Y (or the residual Z), or -1 when the pixel lies past Y's edge.
template <class T>
__device__ __forceinline__ int64_t outPiece(const HaloArgs& a, int n, int oy0, int ox0, int j,
                                            int* r, int* column) {
  const int index = threadIdx.x + j * T::kThreads;
  *r = index >> 2;
  *column = (index & 3) * 16;
  constexpr int kTw = T::kHaloW - 2;
  const int oy = oy0 + *r / kTw, ox = ox0 + *r % kTw;
  if (oy >= a.p || ox >= a.q) return -1;
  return ((static_cast<int64_t>(n) * a.p + oy) * a.q + ox) * T::kCols + *column;
}

template <class T, bool Residual>
__global__ void __launch_bounds__(T::kThreads, 2) int8ConvHaloKernel(HaloArgs a) {
  extern __shared__ __align__(16) int8_t shared[];
  const ConvMmaArgs& p = a.conv;
  int8_t* const ws = shared;                      // tap t: rows t * 64 .. + 63
  int8_t* const halos = shared + T::kWBytes;      // two halo buffers
  int8_t* const out = halos + 2 * T::kHaloBytes;  // Z, then Y
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warpRow = (warp / T::kWarpsN) * T::kWarpRows;
  const int warpCol = (warp % T::kWarpsN) * T::kWarpCols;
  constexpr int kTw = T::kHaloW - 2;

  // W's rows permuted per tap (conflict-free B loads, int8_mma_sync_warp.cuh).
  for (int i = threadIdx.x; i < kTaps * T::kCols * 4; i += T::kThreads) {
    const int row = i >> 2, piece = (i & 3) * 16;
    const int tap = row / T::kCols, k = permutedChannel(row - tap * T::kCols);
    copyAsync16(ws + row * kRowStride + piece, p.w + (k * kTaps + tap) * kDepth + piece, true);
  }
  if (static_cast<int>(blockIdx.x) < a.tiles) {
    int n, oy0, ox0;
    locateTile<T>(a, blockIdx.x, &n, &oy0, &ox0);
    copyHalo<T>(a, n, oy0, ox0, halos);
  }
  commitCopies();

  // This lane's A row of each m tile at tap (0, 0): tile pixel (row / TW, row % TW).
  int aOffset[T::kTilesM];
#pragma unroll
  for (int m = 0; m < T::kTilesM; ++m) {
    const int row = warpRow + m * 16 + (lane & 15);
    aOffset[m] = ((row / kTw) * T::kHaloW + row % kTw) * kRowStride + (lane >> 4) * 16;
  }

  int32_t acc[T::kTilesM][4][4] = {};
  int local = 0;
  for (int tile = blockIdx.x; tile < a.tiles; tile += gridDim.x, ++local) {
    int n, oy0, ox0;
    locateTile<T>(a, tile, &n, &oy0, &ox0);
    waitCopies<0>();
    __syncthreads();  // this tile's halo is in; the last tile's halo and stores are done
    if (Residual) {
#pragma unroll
      for (int j = 0; j < T::kOutPieces; ++j) {
        int r, column;
        const int64_t at = outPiece<T>(a, n, oy0, ox0, j, &r, &column);
        copyAsync16(out + r * T::kOutStride + column, at >= 0 ? p.z + at : p.z, at >= 0);
      }
    }
    commitCopies();
    const int next = tile + static_cast<int>(gridDim.x);
    if (next < a.tiles) {
      int nn, ny0, nx0;
      locateTile<T>(a, next, &nn, &ny0, &nx0);
      copyHalo<T>(a, nn, ny0, nx0, halos + ((local + 1) & 1) * T::kHaloBytes);
    }
    commitCopies();

    const int8_t* halo = halos + (local & 1) * T::kHaloBytes;
#pragma unroll
    for (int tap = 0; tap < kTaps; ++tap) {
      const int shift = ((tap / 3) * T::kHaloW + tap % 3) * kRowStride;
      const int8_t* wt = ws + tap * T::kCols * kRowStride;
#pragma unroll
      for (int kk = 0; kk < kDepth; kk += 32)
        warpMmaStep<T::kTilesM, kRowStride, true>(
            acc, [&](int m) { return halo + aOffset[m] + shift + kk; }, wt, warpCol, kk, lane);
    }
    if (Residual) {
      waitCopies<1>();  // the residual's group; the next halo's may still be in flight
      __syncthreads();
    }
    // Depth 576: accumulators up to 576 * 128 * 127 > 2^22 take the conversion route.
    warpEpilogue<T::kTilesM, Residual, false>(acc, p, 0, warpRow, warpCol, lane, out,
                                              T::kOutStride);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < T::kOutPieces; ++j) {
      int r, column;
      const int64_t at = outPiece<T>(a, n, oy0, ox0, j, &r, &column);
      if (at >= 0)
        *reinterpret_cast<int4*>(p.y + at) =
            *reinterpret_cast<const int4*>(out + r * T::kOutStride + column);
    }
  }
  waitCopies<0>();
}

}  // namespace

bool haloFits(const Int8ConvMmaShape& s) {
  return s.c == kDepth && s.k == 64 && s.r == 3 && s.s == 3 && s.strideH == 1 && s.strideW == 1 &&
         s.dilationH == 1 && s.dilationW == 1;
}

Status launchHaloTile(const ConvMmaArgs& args, int p, int q, cudaStream_t stream) {
  using T = HaloTile<8, 16>;
  if (p <= 0 || q <= 0 || args.rows % (p * q) != 0)
    return Status(StatusCode::kInvalidArgument, "halo kernel: rows are not N x P x Q");
  HaloArgs a{};
  a.conv = args;
  a.p = p;
  a.q = q;
  const int tilesX = (q + 15) / 16, tilesY = (p + 7) / 8;
  a.tilesX = FastDivisor(static_cast<uint32_t>(tilesX));
  a.tilesPerImage = FastDivisor(static_cast<uint32_t>(tilesX * tilesY));
  const int64_t tiles = int64_t{args.rows / (p * q)} * tilesX * tilesY;
  if (tiles >= (int64_t{1} << 31))
    return Status(StatusCode::kInvalidArgument, "halo kernel: too many tiles");
  a.tiles = static_cast<int>(tiles);
  return args.z ? launchPersistent<T, int8ConvHaloKernel<T, true>>(a, tiles, stream,
                                                                   "int8ConvHaloKernel")
                : launchPersistent<T, int8ConvHaloKernel<T, false>>(a, tiles, stream,
                                                                    "int8ConvHaloKernel");
}

}  // namespace kiln::cuda::int8mma
