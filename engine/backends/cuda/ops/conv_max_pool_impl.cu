// ai.kiln FusedConvMaxPool on the GPU (contract: ir/conv_max_pool.h): a network's stem,
// convolution + bias + ReLU + MaxPool + QuantizeLinear, in one pass over the input.
//
// Why: ResNet-50's stem as separate layers writes its 112x112x64 half output (411 MB
// at batch 256), reads it back for the MaxPool, writes the pooled half values and reads
// them again to quantize (0.82 ms of an INT8 engine's 5 ms on an H100). Here a block
// computes the conv outputs one 8x8 tile of pooled outputs needs (with the pool
// window's overlap: 17x17 conv pixels for a 3x3/2 pool) from the input in shared
// memory, pools them there and writes only the int8 (or half) pooled tile: the input is
// read about once and 1/8 of the half bytes is written.
//
// The convolution is an implicit GEMM on tensor cores (mma.sync m16n8k16, half or
// bfloat16 products, float accumulation): rows are the tile's conv pixels, columns the
// 64 output channels, depth k = (c * R + r) * 8 + s: every filter row is padded to 8 taps
// (zero weights past S), so a k16 step is two whole filter rows and a lane's depth pair
// (s, s + 1) = (2t, 2t + 1) is two neighbouring input columns of one region row, one
// 32-bit shared-memory load at the pixel's window start + 4t bytes + the row's offset
// (StemArgs::rowOffset, the same for every lane and pixel: an operand the loads take as
// is). The conv stride is 2, so a window starts at an even column of the region. The
// filter (22 rows of 8 taps, 176 deep) stays in shared memory for the whole persistent
// block, read by ldmatrix.
//
// Class handled (the pass fuse_conv_max_pool matches only this class): X half/bfloat16
// NCHW with C <= 4, C * R <= 22 and S <= 8, 64 filters, conv strides 2x2, dilation 1,
// group 1, activation none or ReLU; pool window <= 3x3, strides 1-2, dilation 1; Y
// channels-last, int8 (zero point 0) or X's type. Anything else returns kUnsupported
// (host fallback).
//
// This file: the device code, its occupancy query and its launch; the host half (the node
// against the class, geometry, packed filter, the persistent grid, the op and its
// registration) is conv_max_pool.cpp, their contract conv_max_pool_impl.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/conv_max_pool_impl.h"
#include "backends/cuda/ops/mma_f16.cuh"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda::stem {
namespace {

__device__ __forceinline__ uint32_t loadShared32(uint32_t address) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(address));
  return v;
}

// Elementwise max of two packed pairs (NaN-ignoring, as fmaxf).
__device__ __forceinline__ uint32_t pairMax(uint32_t a, uint32_t b, __half) {
  const __half2 m =
      __hmax2(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b));
  return *reinterpret_cast<const uint32_t*>(&m);
}
__device__ __forceinline__ uint32_t pairMax(uint32_t a, uint32_t b, __nv_bfloat16) {
  const __nv_bfloat162 m = __hmax2(*reinterpret_cast<const __nv_bfloat162*>(&a),
                                   *reinterpret_cast<const __nv_bfloat162*>(&b));
  return *reinterpret_cast<const uint32_t*>(&m);
}

// Where tile `tile` (8x8 pooled outputs of one image) sits: its pooled origin, the conv
// tile's origin (pool padding before it) and the input region's (conv padding before it).
struct TileOrigin {
  int image, py0, px0, cr0, cc0, ir0, ic0;
};

__device__ __forceinline__ TileOrigin tileOrigin(const StemArgs& a, int tile) {
  TileOrigin o;
  o.image = tile / (a.tilesH * a.tilesW);
  const int inImage = tile % (a.tilesH * a.tilesW);
  o.py0 = inImage / a.tilesW * kPoolTile;
  o.px0 = inImage % a.tilesW * kPoolTile;
  o.cr0 = o.py0 * a.poolSH - a.poolPadTop;
  o.cc0 = o.px0 * a.poolSW - a.poolPadLeft;
  o.ir0 = o.cr0 * 2 - a.padTop;
  o.ic0 = o.cc0 * 2 - a.padLeft;
  return o;
}

// Steps (channel, row in channel) to the region row kStemWarps further on (inRows >
// kStemWarps: at most one channel further).
__device__ __forceinline__ void nextRegionRow(const StemArgs& a, int* channel, int* rowInChannel) {
  *rowInChannel += kStemWarps;
  if (*rowInChannel >= a.inRows) {
    *rowInChannel -= a.inRows;
    ++*channel;
  }
}

// The input region into xs, zero outside the image (the conv's padding), when W is
// even: a warp copies one region row at a time in 32-bit words, kRowBatch rows' loads
// in flight before their stores. Region word m holds columns ic0 + 2m, ic0 + 2m + 1;
// with ic0 odd those straddle two image words: lane L's high half and lane L + 1's low.
template <class T>
__device__ __forceinline__ void loadRegionWords(const StemArgs& a, const TileOrigin& o, T* xs,
                                                int warp, int lane) {
  const uint32_t* __restrict__ xImage = reinterpret_cast<const uint32_t*>(
      static_cast<const T*>(a.x) + static_cast<int64_t>(o.image) * a.c * a.h * a.w_);
  const bool odd = o.ic0 & 1;
  const int imageWords = a.w_ / 2, regionWords = a.inPitch / 2;
  const int word = (o.ic0 - static_cast<int>(odd)) / 2 + lane;
  const bool wordIn = lane <= regionWords && word >= 0 && word < imageWords;
  const bool stores = lane < regionWords;
  uint32_t* xw = reinterpret_cast<uint32_t*>(xs);
  const int regionRows = a.c * a.inRows;
  // Region row `warp`'s row in its channel (inRows > kStemWarps) and word offset in the
  // image, stepped kStemWarps rows at a time.
  int rowInChannel = warp, offset = (o.ir0 + warp) * imageWords + word;
  const int channelJump = (a.h - a.inRows) * imageWords;
  for (int row0 = warp; row0 < regionRows; row0 += kStemWarps * kRowBatch) {
    uint32_t v[kRowBatch];
#pragma unroll
    for (int j = 0; j < kRowBatch; ++j) {
      const bool inside = row0 + j * kStemWarps < regionRows &&
                          static_cast<unsigned>(o.ir0 + rowInChannel) < static_cast<unsigned>(a.h);
      v[j] = inside && wordIn ? xImage[offset] : 0u;
      rowInChannel += kStemWarps;
      offset += kStemWarps * imageWords;
      if (rowInChannel >= a.inRows) {
        rowInChannel -= a.inRows;
        offset += channelJump;
      }
    }
#pragma unroll
    for (int j = 0; j < kRowBatch; ++j) {
      const uint32_t next = __shfl_down_sync(0xffffffffu, v[j], 1);
      const int regionRow = row0 + j * kStemWarps;
      if (regionRow < regionRows && stores)
        xw[regionRow * regionWords + lane] = odd ? __byte_perm(v[j], next, 0x5432) : v[j];
    }
  }
}

// The same for odd W (rows at odd addresses): 16-bit loads, a lane per column (two
// passes cover the <= 40 columns).
template <class T>
__device__ __forceinline__ void loadRegionHalves(const StemArgs& a, const TileOrigin& o, T* xs,
                                                 int warp, int lane) {
  const T* __restrict__ xImage =
      static_cast<const T*>(a.x) + static_cast<int64_t>(o.image) * a.c * a.h * a.w_;
  const int regionRows = a.c * a.inRows;
  bool columnIn[2];
#pragma unroll
  for (int pass = 0; pass < 2; ++pass) {
    const int column = o.ic0 + lane + 32 * pass;
    columnIn[pass] = lane + 32 * pass < a.inPitch && column >= 0 && column < a.w_;
  }
  int channel = 0, rowInChannel = warp;
  for (int row0 = warp; row0 < regionRows; row0 += kStemWarps * kRowBatch) {
    T v[kRowBatch][2];
#pragma unroll
    for (int j = 0; j < kRowBatch; ++j) {
      const int row = o.ir0 + rowInChannel;
      const bool inside = row0 + j * kStemWarps < regionRows && row >= 0 && row < a.h;
      const T* src = xImage + (static_cast<int64_t>(channel) * a.h + row) * a.w_ + o.ic0 + lane;
#pragma unroll
      for (int pass = 0; pass < 2; ++pass)
        v[j][pass] = inside && columnIn[pass] ? src[32 * pass] : fromFloat<T>(0.f);
      nextRegionRow(a, &channel, &rowInChannel);
    }
#pragma unroll
    for (int j = 0; j < kRowBatch; ++j) {
      const int regionRow = row0 + j * kStemWarps;
#pragma unroll
      for (int pass = 0; pass < 2; ++pass)
        if (regionRow < regionRows && lane + 32 * pass < a.inPitch)
          xs[regionRow * a.inPitch + lane + 32 * pass] = v[j][pass];
    }
  }
}

template <class T>
__device__ __forceinline__ void loadRegion(const StemArgs& a, const TileOrigin& o, T* xs, int warp,
                                           int lane) {
  if (a.wordLoads)
    loadRegionWords(a, o, xs, warp, lane);
  else
    loadRegionHalves(a, o, xs, warp, lane);
}

// kCount 16-pixel m-tiles from `firstMTile` x all 64 filters for one warp: 8 n-tiles per
// m-tile (independent MMA chains, started from the bias), each B fragment from shared
// memory serving every m-tile. Then the activation and one rounding to T (as a
// FusedConv's output) into the conv tile by stmatrix; rows past the tile's pixels go to
// its spare row.
template <class T, int kCount>
__device__ __forceinline__ void convTiles(const StemArgs& a, int firstMTile, uint32_t xsBase,
                                          uint32_t filterRow, const float* biasShared,
                                          uint32_t convBase, int lane) {
  const int g = lane >> 2, t = lane & 3, pixels = a.tileRows * a.tileCols;
  uint32_t base[kCount][2];  // [m-tile][row g, row g + 8]: byte address of the lane's pair
  uint32_t out[kCount];      // stmatrix row address in the conv tile: row lane % 16,
                             // n-tile + lane / 16
#pragma unroll
  for (int i = 0; i < kCount; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int mIn = min((firstMTile + i) * 16 + g + 8 * h, pixels - 1);
      const int cy = (mIn * a.tileColsMagic) >> 16, cx = mIn - cy * a.tileCols;
      base[i][h] = xsBase + 4 * (cy * a.inPitch + cx + t);
    }
    const int m = min((firstMTile + i) * 16 + (lane & 15), pixels);
    out[i] = convBase + (m * kConvPitch + (lane >> 4) * 8) * 2;
  }
  float bias[8][4];
#pragma unroll
  for (int nt = 0; nt < 8; ++nt) {
    const float2 b = *reinterpret_cast<const float2*>(biasShared + nt * 8 + 2 * t);
    bias[nt][0] = bias[nt][2] = b.x;
    bias[nt][1] = bias[nt][3] = b.y;
  }
  float acc[kCount][8][4];
#pragma unroll
  for (int ks = 0; ks < kStemSteps; ++ks) {
    uint32_t frag[kCount][4];
#pragma unroll
    for (int i = 0; i < kCount; ++i) {
      frag[i][0] = loadShared32(base[i][0] + a.rowOffset[2 * ks]);
      frag[i][1] = loadShared32(base[i][1] + a.rowOffset[2 * ks]);
      frag[i][2] = loadShared32(base[i][0] + a.rowOffset[2 * ks + 1]);
      frag[i][3] = loadShared32(base[i][1] + a.rowOffset[2 * ks + 1]);
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint32_t b[4];
      ldmatrixX4<false>(b, filterRow + (q * 16 * kFilterPitch + ks * 16) * 2);
#pragma unroll
      for (int i = 0; i < kCount; ++i) {
        if (ks == 0) {
          mma16816From<T>(acc[i][2 * q], frag[i], b[0], b[1], bias[2 * q]);
          mma16816From<T>(acc[i][2 * q + 1], frag[i], b[2], b[3], bias[2 * q + 1]);
        } else {
          mma16816<T>(acc[i][2 * q], frag[i], b[0], b[1]);
          mma16816<T>(acc[i][2 * q + 1], frag[i], b[2], b[3]);
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kCount; ++i)
#pragma unroll
    for (int nt = 0; nt < 8; nt += 2) {
      // Matrices (rows 0-7, n-tile nt), (rows 8-15, nt), (rows 0-7, nt + 1), (8-15, nt + 1).
      uint32_t v[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float* c = acc[i][nt + j / 2] + 2 * (j % 2);
        v[j] = packPair<T>(c[0], c[1]);
        // ReLU after the rounding: the same value (rounding is monotonic, 0 exact).
        if (a.relu) v[j] = pairMax(v[j], 0u, T());
      }
      stmatrixX4(out[i] + nt * 16, v);
    }
}

// round(v / scale) saturated to int8 (NaN to 0), as QuantizeLinear: the quotient from the
// reciprocal with one residual correction (correctly rounded for a reciprocal rounded to
// nearest, Markstein), the plain product where the residual is not finite (v infinite or
// the quotient overflowing).
__device__ __forceinline__ int quantizeToInt8(float v, float scale, float inverse) {
  const float q = v * inverse;
  const float corrected = fmaf(fmaf(-scale, q, v), inverse, q);
  int rounded;  // to nearest even, saturated to [-128, 127], NaN to 0 (cvt's rules)
  asm("cvt.rni.sat.s8.f32 %0, %1;\n" : "=r"(rounded) : "f"(corrected == corrected ? corrected : q));
  return rounded;
}

// The pool over the conv tile in packed pairs, then the quantization; 16 channels of one
// pooled pixel per step. A window's taps are clamped into its part inside the conv
// output (the rest is the pool's padding): a repeated tap does not change a max, so one
// unrolled 3x3 window serves every window the class allows.
template <class T, class Out>
__device__ __forceinline__ void poolTile(const StemArgs& a, const TileOrigin& o, const T* conv,
                                         int tid) {
  for (int i = tid; i < kPoolTile * kPoolTile * 4; i += kStemThreads) {
    const int p = i >> 2, channel0 = (i & 3) * 16;
    const int py = p / kPoolTile, px = p % kPoolTile;
    if (o.py0 + py >= a.outH || o.px0 + px >= a.outW) continue;
    const int y0 = py * a.poolSH, x0 = px * a.poolSW;
    const int yLo = max(y0, -o.cr0), yHi = min(y0 + a.poolKH, a.convH - o.cr0) - 1;
    const int xLo = max(x0, -o.cc0), xHi = min(x0 + a.poolKW, a.convW - o.cc0) - 1;
    const bool any = yLo <= yHi && xLo <= xHi;
    uint32_t best[8] = {};
    if (any) {
#pragma unroll
      for (int dy = 0; dy < kMaxPoolWindow; ++dy) {
        const int cy = min(max(y0 + dy, yLo), yHi);
#pragma unroll
        for (int dx = 0; dx < kMaxPoolWindow; ++dx) {
          const int cx = min(max(x0 + dx, xLo), xHi);
          const uint4* src =
              reinterpret_cast<const uint4*>(conv + (cy * a.tileCols + cx) * kConvPitch + channel0);
          const uint4 lo = src[0], hi = src[1];
          const uint32_t v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
          for (int e = 0; e < 8; ++e) best[e] = dy + dx == 0 ? v[e] : pairMax(best[e], v[e], T());
        }
      }
    }
    const T* values = reinterpret_cast<const T*>(best);
    const int64_t outIndex =
        ((static_cast<int64_t>(o.image) * a.outH + o.py0 + py) * a.outW + o.px0 + px) *
            kStemFilters +
        channel0;
    if constexpr (std::is_same_v<Out, int8_t>) {
      // An empty window gives the type's lowest, as QuantizeLinear of MaxPool's -inf.
      uint32_t words[4];
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        int q[4];
#pragma unroll
        for (int e = 0; e < 4; ++e)
          q[e] = any ? quantizeToInt8(toFloat(values[4 * w + e]), a.yScale, a.yInverseScale) : -128;
        words[w] =
            __byte_perm(__byte_perm(q[0], q[1], 0x0040), __byte_perm(q[2], q[3], 0x0040), 0x5410);
      }
      *reinterpret_cast<uint4*>(static_cast<int8_t*>(a.y) + outIndex) =
          make_uint4(words[0], words[1], words[2], words[3]);
    } else {
      alignas(16) T out[16];
#pragma unroll
      for (int e = 0; e < 16; ++e) out[e] = any ? values[e] : fromFloat<T>(-INFINITY);
      uint4* dst = reinterpret_cast<uint4*>(static_cast<T*>(a.y) + outIndex);
      dst[0] = reinterpret_cast<const uint4*>(out)[0];
      dst[1] = reinterpret_cast<const uint4*>(out)[1];
    }
  }
}

// Out: int8 (quantized with yScale, zero point 0) or T. A persistent block runs tiles
// blockIdx.x, + gridDim.x, ...: per tile the conv (reading xs, writing the conv tile),
// then the pool (reading the conv tile) while the next tile's region goes into xs; two
// barriers per tile.
template <class T, class Out>
__global__ void __launch_bounds__(kStemThreads, 3) convMaxPoolKernel(StemArgs a) {
  extern __shared__ uint4 stemShared[];
  T* xs = reinterpret_cast<T*>(stemShared);
  const int xsHalves = (a.c * a.inRows * a.inPitch + 7) / 8 * 8;
  T* ws = xs + xsHalves;
  T* conv = ws + kStemFilters * kFilterPitch;
  float* biasShared = reinterpret_cast<float*>(conv + (a.tileRows * a.tileCols + 1) * kConvPitch);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;

  // The filter and the bias, once per block.
  for (int i = tid; i < kStemFilters * (kStemDepth / 8); i += kStemThreads) {
    const int n = i / (kStemDepth / 8), chunk = i % (kStemDepth / 8);
    reinterpret_cast<uint4*>(ws + n * kFilterPitch)[chunk] = reinterpret_cast<const uint4*>(a.w)[i];
  }
  for (int i = tid; i < kStemFilters; i += kStemThreads) biasShared[i] = a.bias[i];
  // ldmatrix row addresses of the filter: lane L reads matrix L / 8's row L % 8, i.e.
  // filter n = (L / 16) * 8 + L % 8 (+ 16 per pair of n-tiles), depth + (L / 8 % 2) * 8.
  const uint32_t filterRow =
      sharedAddress(ws + (((lane >> 4) << 3) + (lane & 7)) * kFilterPitch + ((lane >> 3) & 1) * 8);
  const uint32_t xsBase = sharedAddress(xs), convBase = sharedAddress(conv);
  // Equal work per warp: pairs of m-tiles in multiples of the warp count, the rest
  // (at most 7) one at a time (19 m-tiles: 2 pairs each and 3 singles).
  const int pairs = a.mTiles / (2 * kStemWarps) * kStemWarps;

  if (blockIdx.x < a.tiles) loadRegion(a, tileOrigin(a, blockIdx.x), xs, warp, lane);
  __syncthreads();
  for (int tile = blockIdx.x; tile < a.tiles; tile += gridDim.x) {
    for (int pair = warp; pair < pairs; pair += kStemWarps)
      convTiles<T, 2>(a, 2 * pair, xsBase, filterRow, biasShared, convBase, lane);
    for (int m = 2 * pairs + warp; m < a.mTiles; m += kStemWarps)
      convTiles<T, 1>(a, m, xsBase, filterRow, biasShared, convBase, lane);
    __syncthreads();
    if (tile + gridDim.x < a.tiles) loadRegion(a, tileOrigin(a, tile + gridDim.x), xs, warp, lane);
    poolTile<T, Out>(a, tileOrigin(a, tile), conv, tid);
    __syncthreads();
  }
}

// The kernel for X of type `x` (int8 Y when `quantized`, else X's type) passed to fn as
// a function pointer (every instantiation takes one StemArgs).
template <class Fn>
Status withStemKernel(DataType x, bool quantized, Fn&& fn) {
  return dispatchDeviceType<kStemTypes>(x, [&](auto tag) -> Status {
    using T = decltype(tag);
    return quantized ? fn(convMaxPoolKernel<T, int8_t>) : fn(convMaxPoolKernel<T, T>);
  });
}

}  // namespace

Status stemOccupancy(DataType x, bool quantized, size_t shared, StemOccupancy* occupancy) {
  return withStemKernel(x, quantized, [&](auto kernel) -> Status {
    KILN_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kStemSharedCap));
    int device = 0, sms = 0, perSm = 0;
    KILN_CUDA_CHECK(cudaGetDevice(&device));
    KILN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    KILN_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, kStemThreads, shared));
    occupancy->sms = sms;
    occupancy->blocksPerSm = perSm;
    return Status::ok();
  });
}

Status launchStemKernel(DataType x, bool quantized, const StemArgs& a, size_t sharedBytes,
                        int blocks, cudaStream_t stream) {
  return withStemKernel(x, quantized, [&](auto kernel) -> Status {
    kernel<<<blocks, kStemThreads, sharedBytes, stream>>>(a);
    KILN_CUDA_CHECK_LAUNCH("convMaxPoolKernel");
    return Status::ok();
  });
}

}  // namespace kiln::cuda::stem
