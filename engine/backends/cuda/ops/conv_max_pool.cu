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
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/engine_impl.h"
#include "backends/cuda/ops/mma_f16.cuh"
#include "ir/channels_last.h"
#include "ir/conv_max_pool.h"
#include "kiln/data_type.h"

namespace kiln::cuda {
namespace {

constexpr int kStemFilters = 64;
constexpr int kStemSteps = 11;                   // k16 steps of depth
constexpr int kStemFilterRows = 2 * kStemSteps;  // (c, r) rows of 8 taps
constexpr int kStemTaps = 8;                     // a filter row's taps (S padded)
constexpr int kStemDepth = kStemSteps * 16;
constexpr int kPoolTile = 8;                  // pooled outputs per tile side
constexpr int kStemThreads = 128;             // 4 warps
constexpr int kConvPitch = kStemFilters + 8;  // a conv pixel's row in shared memory (halves)
constexpr int kMaxPoolWindow = 3, kMaxPoolStride = 2;
constexpr int kStemMaxChannels = 4;
constexpr int kRowBatch = 8;  // region rows a warp has in flight
// Shared memory of the largest geometry the class allows (C <= 4, C * R <= 22, a
// 17 x 17 conv tile) is under 80 KiB: every launch sets this one limit, so no layer
// lowers another's.
constexpr int kStemSharedCap = 96 * 1024;

struct StemArgs {
  const void* x = nullptr;
  const uint32_t* w = nullptr;  // [64][kStemDepth] half pairs, k fastest
  const float* bias = nullptr;  // [64]
  void* y = nullptr;
  float yScale = 1.f, yInverseScale = 1.f;  // the latter rounded to nearest on the host
  int c = 0, h = 0, w_ = 0;
  int r = 0;
  int padTop = 0, padLeft = 0, convH = 0, convW = 0;
  int poolKH = 1, poolKW = 1, poolSH = 1, poolSW = 1, poolPadTop = 0, poolPadLeft = 0;
  int outH = 0, outW = 0;
  int tileRows = 0, tileCols = 0;  // conv pixels one pooled tile reads
  int tileColsMagic = 0;           // ceil(2^16 / tileCols): m / tileCols = m * it >> 16 (m < 512)
  int inRows = 0, inPitch = 0;     // the input region (rows, columns = pitch, even)
  int tilesH = 0, tilesW = 0, tiles = 0, mTiles = 0;
  bool relu = false;
  bool wordLoads = false;  // W even and X 4-byte aligned: the region in 32-bit loads
  // Byte offset in the region of filter row j = c * R + r (its first tap at a window's
  // start); 0 for the padding rows past C * R (zero weights).
  int rowOffset[kStemFilterRows] = {};
};

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

// Shared memory: the input region [c][inRows][inPitch], the filter [64][kFilterPitch]
// (ldmatrix rows 368 bytes apart: conflict-free), the conv tile [pixels + 1][kConvPitch]
// (the extra row takes the stores of the last m-tile's rows past the tile), the bias
// [64] floats.
constexpr int kFilterPitch = kStemDepth + 8;
constexpr int kStemWarps = kStemThreads / 32;

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

// The filter packed for the kernel (T bits, [64][kStemDepth], zero in the padding taps)
// and the bias, uploaded once per layer state.
// Everything but the tensors' addresses, worked out at the first enqueue of a shape
// (the layer state is cleared when the input shapes change).
struct StemState {
  DeviceBuffer w, bias;
  StemArgs args;  // geometry, y_scale, filter and bias pointers
  bool quantized = false;
  int blocks = 0;  // the persistent grid, set at the first launch
};

Status readPair(GpuKernelContext& ctx, const char* name, std::vector<int64_t> fallback,
                std::vector<int64_t>* out) {
  *out = ctx.node().attrInts(name, fallback);
  if (out->size() != fallback.size())
    return ctx.error(std::string("attribute '") + name + "' must have " +
                     std::to_string(fallback.size()) + " values");
  return Status::ok();
}

// Fills the geometry of `a` from the node, X's shape and W's; "" or why not this kernel.
Status stemGeometry(GpuKernelContext& ctx, const Shape& x, const Shape& w, StemArgs* a,
                    std::string* unsupported) {
  const Node& node = ctx.node();
  std::vector<int64_t> strides, dilations, pads, poolKernel, poolStrides, poolPads, poolDil;
  KILN_RETURN_IF_ERROR(readPair(ctx, "strides", {1, 1}, &strides));
  KILN_RETURN_IF_ERROR(readPair(ctx, "dilations", {1, 1}, &dilations));
  KILN_RETURN_IF_ERROR(readPair(ctx, "pads", {0, 0, 0, 0}, &pads));
  KILN_RETURN_IF_ERROR(readPair(ctx, "pool_kernel_shape", {0, 0}, &poolKernel));
  KILN_RETURN_IF_ERROR(readPair(ctx, "pool_strides", {1, 1}, &poolStrides));
  KILN_RETURN_IF_ERROR(readPair(ctx, "pool_pads", {0, 0, 0, 0}, &poolPads));
  KILN_RETURN_IF_ERROR(readPair(ctx, "pool_dilations", {1, 1}, &poolDil));
  const std::string autoPad = node.attrString("auto_pad", "NOTSET");
  if (w[1] != x[1])
    return ctx.error("W has " + std::to_string(w[1]) + " input channels, X " +
                     std::to_string(x[1]));
  for (int64_t v : pads)
    if (v < 0) return ctx.error("attribute 'pads' has a negative value");
  for (int64_t v : poolPads)
    if (v < 0) return ctx.error("attribute 'pool_pads' has a negative value");
  for (int d = 0; d < 2; ++d)
    if (poolKernel[d] < 1 || poolStrides[d] < 1)
      return ctx.error("the pool needs pool_kernel_shape and pool_strides >= 1");
  const std::string poolAutoPad = node.attrString("pool_auto_pad", "NOTSET");
  const std::vector<int64_t> kernelShape = node.attrInts("kernel_shape", {w[2], w[3]});
  if (node.attrInt("group", 1) != 1 || (autoPad != "NOTSET" && !autoPad.empty()) ||
      (poolAutoPad != "NOTSET" && !poolAutoPad.empty()) ||
      node.attrInt("pool_storage_order", 0) != 0 ||
      kernelShape != std::vector<int64_t>{w[2], w[3]} || strides != std::vector<int64_t>{2, 2} ||
      dilations != std::vector<int64_t>{1, 1} || poolDil != std::vector<int64_t>{1, 1} ||
      w[0] != kStemFilters || x[1] > kStemMaxChannels || x[1] * w[2] > kStemFilterRows ||
      w[3] > 8 || poolKernel[0] > kMaxPoolWindow || poolKernel[1] > kMaxPoolWindow ||
      poolStrides[0] > kMaxPoolStride || poolStrides[1] > kMaxPoolStride) {
    *unsupported =
        "Kiln's stem kernel needs 64 filters, C <= 4, C * R <= 22, S <= 8, conv "
        "strides 2x2, dilation 1, group 1, no auto_pad, a pool window <= 3x3 with strides <= 2";
    return Status::ok();
  }
  a->c = static_cast<int>(x[1]);
  a->h = static_cast<int>(x[2]);
  a->w_ = static_cast<int>(x[3]);
  a->r = static_cast<int>(w[2]);
  a->padTop = static_cast<int>(pads[0]);
  a->padLeft = static_cast<int>(pads[1]);
  const int64_t spanH = x[2] + pads[0] + pads[2] - w[2], spanW = x[3] + pads[1] + pads[3] - w[3];
  if (spanH < 0 || spanW < 0) return ctx.error("the filter is larger than the padded input");
  a->convH = static_cast<int>(spanH / 2 + 1);
  a->convW = static_cast<int>(spanW / 2 + 1);
  const bool ceilMode = node.attrInt("pool_ceil_mode", 0) != 0;
  int64_t out[2];
  const int64_t convSize[2] = {a->convH, a->convW};
  for (int d = 0; d < 2; ++d) {
    const int64_t span = convSize[d] + poolPads[d] + poolPads[d + 2] - poolKernel[d];
    if (span < 0) return ctx.error("the pool window is larger than the padded conv output");
    out[d] = span / poolStrides[d] + 1;
    if (ceilMode) {
      out[d] = (span + poolStrides[d] - 1) / poolStrides[d] + 1;
      if ((out[d] - 1) * poolStrides[d] >= convSize[d] + poolPads[d]) --out[d];
    }
  }
  a->poolKH = static_cast<int>(poolKernel[0]);
  a->poolKW = static_cast<int>(poolKernel[1]);
  a->poolSH = static_cast<int>(poolStrides[0]);
  a->poolSW = static_cast<int>(poolStrides[1]);
  a->poolPadTop = static_cast<int>(poolPads[0]);
  a->poolPadLeft = static_cast<int>(poolPads[1]);
  a->outH = static_cast<int>(out[0]);
  a->outW = static_cast<int>(out[1]);
  a->tileRows = (kPoolTile - 1) * a->poolSH + a->poolKH;
  a->tileCols = (kPoolTile - 1) * a->poolSW + a->poolKW;
  a->tileColsMagic = ((1 << 16) + a->tileCols - 1) / a->tileCols;
  a->inRows = 2 * (a->tileRows - 1) + a->r;
  a->inPitch = 2 * (a->tileCols - 1) + kStemTaps;
  for (int j = 0; j < kStemFilterRows; ++j)
    a->rowOffset[j] = j < a->c * a->r ? 2 * ((j / a->r) * a->inRows + j % a->r) * a->inPitch : 0;
  a->mTiles = (a->tileRows * a->tileCols + 15) / 16;
  a->tilesH = (a->outH + kPoolTile - 1) / kPoolTile;
  a->tilesW = (a->outW + kPoolTile - 1) / kPoolTile;
  const std::string act = node.attrString("activation", "none");
  a->relu = act == "relu";
  if (act != "none" && act != "relu")
    *unsupported = "Kiln's stem kernel applies ReLU or no activation, not " + act;
  return Status::ok();
}

size_t stemSharedBytes(const StemArgs& a) {
  const size_t xsHalves = (static_cast<size_t>(a.c) * a.inRows * a.inPitch + 7) / 8 * 8;
  return (xsHalves + static_cast<size_t>(kStemFilters) * kFilterPitch +
          (static_cast<size_t>(a.tileRows) * a.tileCols + 1) * kConvPitch) *
             2 +
         kStemFilters * sizeof(float);
}

// Persistent blocks: as many as the SMs hold at once (found once per layer state).
template <class T, class Out>
Status launchStem(GpuKernelContext& ctx, const StemArgs& a, StemState* state) {
  auto kernel = convMaxPoolKernel<T, Out>;
  const size_t shared = stemSharedBytes(a);
  if (shared > kStemSharedCap)
    return ctx.unsupported("Kiln's stem kernel would need " + std::to_string(shared) +
                           " bytes of shared memory");
  if (state->blocks == 0) {
    KILN_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kStemSharedCap));
    int device = 0, sms = 0, perSm = 0;
    KILN_CUDA_CHECK(cudaGetDevice(&device));
    KILN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    KILN_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, kStemThreads, shared));
    if (perSm < 1)
      return ctx.unsupported("Kiln's stem kernel does not fit an SM (" + std::to_string(shared) +
                             " bytes of shared memory)");
    state->blocks = sms * perSm;
  }
  const int blocks = std::min(a.tiles, state->blocks);
  kernel<<<blocks, kStemThreads, shared, ctx.stream()>>>(a);
  KILN_CUDA_CHECK_LAUNCH("convMaxPoolKernel");
  return Status::ok();
}

// `type`: float16 or bfloat16, the engine's storage (a zero is all-zero bits in both).
Status packStemWeights(const Tensor& w, const Tensor* b, DataType type, const StemArgs& a,
                       StemState* s) {
  std::vector<uint16_t> packed(static_cast<size_t>(kStemFilters) * kStemDepth, 0);
  const int64_t perFilter = static_cast<int64_t>(a.c) * a.r * (w.dim(3));
  const int64_t sWidth = w.dim(3);
  for (int n = 0; n < kStemFilters; ++n)
    for (int c = 0; c < a.c; ++c)
      for (int r = 0; r < a.r; ++r)
        for (int64_t x = 0; x < sWidth; ++x) {
          const int k = (c * a.r + r) * kStemTaps + static_cast<int>(x);
          const float v =
              static_cast<float>(w.valueAsDouble(n * perFilter + (c * a.r + r) * sWidth + x));
          packed[static_cast<size_t>(n) * kStemDepth + k] =
              type == DataType::kFloat16 ? floatToHalf(v) : floatToBFloat16(v);
        }
  std::vector<float> bias(kStemFilters, 0.f);
  if (b)
    for (int n = 0; n < kStemFilters; ++n) bias[n] = static_cast<float>(b->valueAsDouble(n));
  KILN_RETURN_IF_ERROR(s->w.allocate(static_cast<int64_t>(packed.size() * 2), "the stem filter"));
  KILN_RETURN_IF_ERROR(s->bias.allocate(kStemFilters * sizeof(float), "the stem bias"));
  // Once per layer state, at the first enqueue: synchronous copies of host vectors.
  KILN_CUDA_CHECK(
      cudaMemcpy(s->w.data(), packed.data(), packed.size() * 2, cudaMemcpyHostToDevice));
  KILN_CUDA_CHECK(
      cudaMemcpy(s->bias.data(), bias.data(), bias.size() * sizeof(float), cudaMemcpyHostToDevice));
  return Status::ok();
}

// Checks the node against the kernel's class and builds the layer's state: geometry,
// quantization, the packed filter and bias on the device, the implementation text.
Status prepareStem(GpuKernelContext& ctx, const DeviceTensor& x, StemState* state) {
  KILN_ASSIGN_OR_RETURN(Tensor w, ctx.hostInput(kConvPoolW));
  if (w.rank() != 4)
    return ctx.error("input W must be 4-D [M, C, R, S], got " + shapeToString(w.shape()));
  StemArgs& a = state->args;
  std::string why;
  KILN_RETURN_IF_ERROR(stemGeometry(ctx, x.shape, w.shape(), &a, &why));
  if (!why.empty()) return ctx.unsupported(why);
  state->quantized = ctx.inputCount() > kConvPoolYScale && ctx.hasInput(kConvPoolYScale);
  if (state->quantized) {
    KILN_ASSIGN_OR_RETURN(Tensor scale, ctx.hostInput(kConvPoolYScale));
    if (scale.numel() != 1 || !(scale.valueAsDouble(0) > 0))
      return ctx.error("input y_scale must be one positive float");
    a.yScale = static_cast<float>(scale.valueAsDouble(0));
    a.yInverseScale = 1.f / a.yScale;
    if (ctx.inputCount() > kConvPoolYZeroPoint && ctx.hasInput(kConvPoolYZeroPoint)) {
      KILN_ASSIGN_OR_RETURN(Tensor zero, ctx.hostInput(kConvPoolYZeroPoint));
      if (zero.type() != DataType::kInt8 || zero.numel() != 1 || zero.valueAsDouble(0) != 0)
        return ctx.unsupported("Kiln's stem kernel writes int8 with zero point 0 only");
    }
  }
  a.tiles = static_cast<int>(x.shape[0]) * a.tilesH * a.tilesW;
  std::unique_ptr<Tensor> bias;
  if (ctx.inputCount() > kConvPoolBias && ctx.hasInput(kConvPoolBias)) {
    KILN_ASSIGN_OR_RETURN(Tensor b, ctx.hostInput(kConvPoolBias));
    if (b.numel() != kStemFilters) return ctx.error("input B must have 64 values");
    bias = std::make_unique<Tensor>(std::move(b));
  }
  KILN_RETURN_IF_ERROR(packStemWeights(w, bias.get(), x.type, a, state));
  a.w = static_cast<const uint32_t*>(state->w.data());
  a.bias = static_cast<const float*>(state->bias.data());
  ctx.setImplementation(
      std::string("kiln stem kernel: conv ") + std::to_string(a.r) + "x" +
      std::to_string(w.dim(3)) + "/2 + " + (a.relu ? "relu + " : "") + "maxpool " +
      std::to_string(a.poolKH) + "x" + std::to_string(a.poolKW) + "/" + std::to_string(a.poolSH) +
      (state->quantized ? " + int8 quantize" : "") + " in one pass (" +
      (x.type == DataType::kFloat16 ? "fp16" : "bf16") + " tensor cores, float accumulation)");
  return Status::ok();
}

Status fusedConvMaxPoolOp(GpuKernelContext& ctx) {
  if (ctx.inputCount() < 2 || !ctx.hasInput(kConvPoolX) || !ctx.hasInput(kConvPoolW))
    return ctx.error("needs inputs X and W");
  const DeviceTensor& x = ctx.input(kConvPoolX);
  if (x.rank() != 4)
    return ctx.error("input X must be 4-D [N, C, H, W], got " + shapeToString(x.shape));
  if (x.type != DataType::kFloat16 && x.type != DataType::kBFloat16)
    return ctx.unsupported("Kiln's stem kernel computes in fp16 or bf16");
  if (!isChannelsLast(ctx.node()))
    return ctx.unsupported("Kiln's stem kernel writes channels-last output only");
  std::shared_ptr<void>& slot = ctx.layerState();
  if (!slot) {
    auto state = std::make_shared<StemState>();
    KILN_RETURN_IF_ERROR(prepareStem(ctx, x, state.get()));
    slot = state;
  }
  auto* state = static_cast<StemState*>(slot.get());
  StemArgs a = state->args;
  const Shape outShape = {x.shape[0], a.outH, a.outW, kStemFilters};
  KILN_ASSIGN_OR_RETURN(
      DeviceTensor y, ctx.allocateOutput(0, state->quantized ? DataType::kInt8 : x.type, outShape));
  if (y.numel() == 0) return Status::ok();
  a.x = x.data;
  a.y = y.data;
  a.wordLoads = a.w_ % 2 == 0 && reinterpret_cast<uintptr_t>(x.data) % 4 == 0;
  if (x.type == DataType::kFloat16)
    return state->quantized ? launchStem<__half, int8_t>(ctx, a, state)
                            : launchStem<__half, __half>(ctx, a, state);
  return state->quantized ? launchStem<__nv_bfloat16, int8_t>(ctx, a, state)
                          : launchStem<__nv_bfloat16, __nv_bfloat16>(ctx, a, state);
}

std::string supportsStemTypes(const Node&, const std::vector<DataType>& types) {
  if (types.empty() || (types[0] != DataType::kFloat16 && types[0] != DataType::kBFloat16))
    return "Kiln's stem kernel computes in fp16 or bf16";
  return "";
}

}  // namespace

void registerConvMaxPoolGpuKernels(GpuKernelRegistry& registry) {
  GpuKernelEntry entry;
  entry.domain = "ai.kiln";
  entry.opType = kFusedConvMaxPoolOp;
  entry.fn = &fusedConvMaxPoolOp;
  entry.supports = &supportsStemTypes;
  registry.add(std::move(entry));
}

}  // namespace kiln::cuda
