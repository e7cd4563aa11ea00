// Kiln's channels-last depthwise convolution (contract: depthwise_conv.h).
//
// A block computes a tile of 16 output columns x kTileRows rows for a slice of 8 G
// channels (G of 8, 4, 2, 1 16-byte packs, the largest that divides C / 8, so no thread
// idles on C = 96 or 72; kTileRows = 32 / G keeps 128 threads busy). Its threads first copy
// the tile's input window (zero outside the image: the padding; cp.async, every copy in
// flight at once) and the slice's filters (float, transposed from W's [C, R, S] to
// [R, S, C], loaded while the copies run) into shared memory; then each thread computes 4
// consecutive outputs of one row for one pack of 8 channels from shared memory, in float, the
// epilogue applied before its 16-byte stores. (A first form read the window through L1 from each
// thread's registers: ~15x its floor, every filter row one global-memory latency.)
//
// Floor (ConvNeXt-T stage 1 at batch 128: X and Y of 128 x 56 x 56 x 96 fp16, 77 MB
// each): 154 MB of DRAM traffic, ~0.045 ms at 3.4 TB/s; 49 FMAs per output, 1.9 G FMA,
// ~0.06 ms at the float FMA rate.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/async_copy.cuh"
#include "backends/cuda/ops/depthwise_conv.h"
#include "backends/cuda/ops/epilogue_activation.cuh"

namespace kiln::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kTileCols = 16;  // output columns per tile
constexpr int kPix = 4;        // output columns per thread

struct DepthwiseArgs {
  const void* x;
  const void* w;
  const void* bias;
  const void* z;
  void* y;
  int h, w_, c, ho, wo;
  int padH, padW;
  int packsPerBlock;   // G
  int tilesW, tilesH;  // tiles per output row and per image
  EpilogueActivation activation;
  float alpha, beta;
};

template <class T>
__device__ __forceinline__ void unpack8(const uint4& v, float out[8]) {
  const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = toFloat(e[i]);
}

template <class T>
__device__ __forceinline__ uint4 pack8(const float in[8]) {
  uint4 v;
  T* e = reinterpret_cast<T*>(&v);
#pragma unroll
  for (int i = 0; i < 8; ++i) e[i] = fromFloat<T>(in[i]);
  return v;
}

// Shared memory of one block: the float filters [kR * kS][8 G + 4], then the input window
// [rows][slots][G] of 16-byte packs (columnSlot below). Up to kMaxSharedBytes: past the
// default 48 KB the launch raises the kernel's dynamic shared-memory limit first.
constexpr size_t kMaxSharedBytes = 96 * 1024;
__host__ __device__ constexpr int windowRows(int tileRows, int r, int stride) {
  return (tileRows - 1) * stride + r;
}
__host__ __device__ constexpr int windowCols(int s, int stride) {
  return (kTileCols - 1) * stride + s;
}
// Shared-memory layout without bank conflicts (each conflict counted in the SASS and the
// layout, 2026-11-29; the kernel measured ~7x its floor before):
// - the window's column c sits at slot c + c / 4: the threads of a quarter warp read
//   columns 4 apart (col0 0 and 4 of two neighbours), which without the spare slot
//   landed on the same banks (two wavefronts for every window load);
// - a filter tap's row of the slice's channels is padded to 8 G + 4 floats: the stores of
//   the transposed filters (consecutive threads, consecutive taps of one channel) hit one
//   bank 32 times at a stride of 8 G floats (32-way for G = 4), 4 times with the pad; the
//   float4 reads of a row stay 16-byte aligned.
__host__ __device__ constexpr int columnSlot(int c) {
  return c + c / 4;
}
__host__ __device__ constexpr int windowSlots(int s, int stride) {
  return columnSlot(windowCols(s, stride) - 1) + 1;
}
__host__ __device__ constexpr int filterStride(int packs) {
  return 8 * packs + 4;
}

int packsPerBlockFor(int64_t c) {
  int packs = 8;
  while ((c / 8) % packs != 0) packs /= 2;
  return packs;
}

size_t sharedBytesFor(int64_t c, int r, int s, int stride) {
  const int g = packsPerBlockFor(c);
  return sizeof(float) * filterStride(g) * r * s +
         16 * static_cast<size_t>(g) * windowRows(32 / g, r, stride) * windowSlots(s, stride);
}

template <class T, int kR, int kS, int kStride>
__global__ void __launch_bounds__(kThreads) depthwiseNhwc(DepthwiseArgs a) {
  extern __shared__ __align__(16) unsigned char shared[];
  const int g = a.packsPerBlock, sliceChannels = 8 * g, tileRows = 32 / g;
  const int rows = windowRows(tileRows, kR, kStride);
  constexpr int kCols = windowCols(kS, kStride);
  constexpr int kSlots = windowSlots(kS, kStride);
  const int fStride = filterStride(g);
  float* sW = reinterpret_cast<float*>(shared);
  uint4* sX = reinterpret_cast<uint4*>(shared + sizeof(float) * fStride * kR * kS);
  const int c0 = blockIdx.y * sliceChannels;
  int tile = blockIdx.x;
  const int tw = tile % a.tilesW;
  tile /= a.tilesW;
  const int th = tile % a.tilesH;
  const int img = tile / a.tilesH;
  const int oh0 = th * tileRows, ow0 = tw * kTileCols;
  const int ih0 = oh0 * kStride - a.padH, iw0 = ow0 * kStride - a.padW;
  // The input window, zero outside the image, copied with cp.async so that every copy of
  // a thread is in flight at once (plain loads were not: in the SASS each 16-byte load
  // waited for the store of the one before it). Measured on an H200 (2026-11-29): ConvNeXt-T
  // stage 1 at b128 0.394 -> 0.381 ms, still ~7x its floor, so the load phase was not
  // what bounds the kernel; cuDNN's engine 5 + Kiln's bias pass (0.34 ms) stays ahead.
  const T* x = static_cast<const T*>(a.x) + c0;
  for (int i = threadIdx.x; i < rows * kCols * g; i += kThreads) {
    const int pack = i % g, col = (i / g) % kCols, row = i / (g * kCols);
    const int ih = ih0 + row, iw = iw0 + col;
    const bool inside = ih >= 0 && ih < a.h && iw >= 0 && iw < a.w_;
    const T* source =
        inside ? x + ((static_cast<int64_t>(img) * a.h + ih) * a.w_ + iw) * a.c + 8 * pack : x;
    copyAsync16(sX + (row * kSlots + columnSlot(col)) * g + pack, source, inside);
  }
  commitCopies();
  // The slice's filters while the window copies run: every load of a thread issued before
  // the first store (at most kFilterLoads per thread), W's [C, R, S] order read coalesced.
  constexpr int kTaps = kR * kS;
  constexpr int kFilterLoads = (64 * kTaps + kThreads - 1) / kThreads;
  const T* w = static_cast<const T*>(a.w) + static_cast<int64_t>(c0) * kTaps;
  const int filterValues = sliceChannels * kTaps;
  float taps[kFilterLoads];
#pragma unroll
  for (int k = 0; k < kFilterLoads; ++k) {
    const int i = threadIdx.x + k * kThreads;
    taps[k] = i < filterValues ? toFloat(w[i]) : 0.f;
  }
#pragma unroll
  for (int k = 0; k < kFilterLoads; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i < filterValues) sW[(i % kTaps) * fStride + i / kTaps] = taps[k];
  }
  waitCopies<0>();
  __syncthreads();
  const int pack = threadIdx.x % g, worker = threadIdx.x / g;
  const int row = worker / (kTileCols / kPix), col0 = (worker % (kTileCols / kPix)) * kPix;
  const int oh = oh0 + row;
  if (oh >= a.ho || ow0 + col0 >= a.wo) return;  // no barrier follows
  float acc[kPix][8] = {};
  // The window slots this thread's outputs read in every filter row.
  constexpr int kReads = (kPix - 1) * kStride + kS;
  int slot[kReads];
#pragma unroll
  for (int j = 0; j < kReads; ++j) slot[j] = columnSlot(col0 * kStride + j);
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    // The row's taps for this thread's 8 channels, read from shared memory once and used
    // by all kPix outputs (read per output, they made the kernel shared-memory bound).
    float4 tap[kS][2];
#pragma unroll
    for (int s = 0; s < kS; ++s) {
      const float4* src = reinterpret_cast<const float4*>(sW + (r * kS + s) * fStride + 8 * pack);
      tap[s][0] = src[0];
      tap[s][1] = src[1];
    }
    const uint4* windowRow = sX + (row * kStride + r) * kSlots * g + pack;
#pragma unroll
    for (int j = 0; j < kReads; ++j) {
      float v[8];
      unpack8<T>(windowRow[slot[j] * g], v);
#pragma unroll
      for (int p = 0; p < kPix; ++p) {
        const int s = j - p * kStride;
        if (s < 0 || s >= kS) continue;  // resolved at compile time
        const float4 lo = tap[s][0], hi = tap[s][1];
        acc[p][0] = fmaf(v[0], lo.x, acc[p][0]);
        acc[p][1] = fmaf(v[1], lo.y, acc[p][1]);
        acc[p][2] = fmaf(v[2], lo.z, acc[p][2]);
        acc[p][3] = fmaf(v[3], lo.w, acc[p][3]);
        acc[p][4] = fmaf(v[4], hi.x, acc[p][4]);
        acc[p][5] = fmaf(v[5], hi.y, acc[p][5]);
        acc[p][6] = fmaf(v[6], hi.z, acc[p][6]);
        acc[p][7] = fmaf(v[7], hi.w, acc[p][7]);
      }
    }
  }
  const int channel = c0 + 8 * pack;
  float bias[8] = {};
  if (a.bias) {
    const T* b = static_cast<const T*>(a.bias) + channel;
#pragma unroll
    for (int i = 0; i < 8; ++i) bias[i] = toFloat(b[i]);
  }
#pragma unroll
  for (int p = 0; p < kPix; ++p) {
    const int ow = ow0 + col0 + p;
    if (ow >= a.wo) break;
    const int64_t offset = ((static_cast<int64_t>(img) * a.ho + oh) * a.wo + ow) * a.c + channel;
    float out[8], zv[8] = {};
    if (a.z) unpack8<T>(*reinterpret_cast<const uint4*>(static_cast<const T*>(a.z) + offset), zv);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      out[i] = applyEpilogueActivation(acc[p][i] + bias[i] + zv[i], a.activation, a.alpha, a.beta);
    *reinterpret_cast<uint4*>(static_cast<T*>(a.y) + offset) = pack8<T>(out);
  }
}

template <class T, int kR, int kS, int kStride>
Status launchShape(const DepthwiseArgs& args, dim3 grid, size_t sharedBytes, cudaStream_t stream) {
  if (sharedBytes > 48 * 1024)
    KILN_CUDA_CHECK(cudaFuncSetAttribute(depthwiseNhwc<T, kR, kS, kStride>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(sharedBytes)));
  depthwiseNhwc<T, kR, kS, kStride><<<grid, kThreads, sharedBytes, stream>>>(args);
  KILN_CUDA_CHECK_LAUNCH("depthwiseNhwc");
  return Status::ok();
}

template <class T, int kK>
Status launchStride(const DepthwiseConvProblem& p, const DepthwiseArgs& args, dim3 grid,
                    size_t sharedBytes, cudaStream_t stream) {
  return p.strideH == 1 ? launchShape<T, kK, kK, 1>(args, grid, sharedBytes, stream)
                        : launchShape<T, kK, kK, 2>(args, grid, sharedBytes, stream);
}

template <class T>
Status launchType(const DepthwiseConvProblem& p, const DepthwiseArgs& args, dim3 grid,
                  size_t sharedBytes, cudaStream_t stream) {
  switch (p.r) {
    case 3:
      return launchStride<T, 3>(p, args, grid, sharedBytes, stream);
    case 5:
      return launchStride<T, 5>(p, args, grid, sharedBytes, stream);
    default:
      return launchStride<T, 7>(p, args, grid, sharedBytes, stream);
  }
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

}  // namespace

std::string depthwiseConvUnsupported(const ConvGeometry& g, const void* x, const void* z,
                                     const void* y) {
  if (g.type != DataType::kFloat16 && g.type != DataType::kBFloat16) return "not 16-bit";
  if (!g.channelsLast || g.transpose || g.x.size() != 4) return "not a channels-last 2-D conv";
  const int64_t c = g.x[1];
  if (g.w[1] != 1 || g.w[0] != c || g.y[1] != c) return "not depthwise";
  if (c % 8 != 0) return "C not a multiple of 8";
  if (c > (int64_t{1} << 24)) return "C beyond 2^24";
  const int64_t k = g.w[2];
  if (g.w[3] != k || (k != 3 && k != 5 && k != 7)) return "filter not 3x3, 5x5 or 7x7";
  if (g.strides[0] != g.strides[1] || (g.strides[0] != 1 && g.strides[0] != 2))
    return "strides not 1 or 2";
  if (g.dilations[0] != 1 || g.dilations[1] != 1) return "dilated";
  for (int64_t d : {g.x[0], g.x[2], g.x[3], g.y[2], g.y[3], g.pre[0], g.pre[1]})
    if (d < 0 || d > (int64_t{1} << 30)) return "dims beyond the kernel's int range";
  if (!aligned16(x) || !aligned16(y) || (z && !aligned16(z))) return "buffers not 16-byte aligned";
  if (sharedBytesFor(c, static_cast<int>(k), static_cast<int>(k), static_cast<int>(g.strides[0])) >
      kMaxSharedBytes)
    return "tile beyond 96 KB of shared memory";
  const int g8 = packsPerBlockFor(c);
  const int64_t tiles =
      g.x[0] * ((g.y[3] + kTileCols - 1) / kTileCols) * ((g.y[2] + 32 / g8 - 1) / (32 / g8));
  if (c / 8 / g8 > 65535 || tiles > 0x7fffffff) return "grid beyond the launch limits";
  return "";
}

DepthwiseConvProblem depthwiseConvProblem(const ConvGeometry& g, const void* x, const void* w,
                                          const void* bias, const void* z, void* y,
                                          const ConvEpilogue& epilogue) {
  DepthwiseConvProblem p;
  p.type = g.type;
  p.n = g.x[0], p.c = g.x[1], p.h = g.x[2], p.w = g.x[3];
  p.ho = g.y[2], p.wo = g.y[3];
  p.r = static_cast<int>(g.w[2]), p.s = static_cast<int>(g.w[3]);
  p.strideH = static_cast<int>(g.strides[0]), p.strideW = static_cast<int>(g.strides[1]);
  p.padH = static_cast<int>(g.pre[0]), p.padW = static_cast<int>(g.pre[1]);
  p.x = x, p.weights = w, p.bias = bias, p.z = z, p.y = y;
  p.epilogue = epilogue;
  return p;
}

Status runDepthwiseConv(const DepthwiseConvProblem& p, cudaStream_t stream) {
  // Checked at every run: the layer keeps its choice while only its buffers move (a user
  // binding a new input address), and a misaligned 16-byte access would fault.
  if (!aligned16(p.x) || !aligned16(p.y) || (p.z && !aligned16(p.z)))
    return unsupported("Kiln's depthwise kernel: X, Y or Z is not 16-byte aligned");
  const int64_t packs = p.c / 8;
  const int packsPerBlock = packsPerBlockFor(p.c);
  const int tileRows = 32 / packsPerBlock;
  DepthwiseArgs args{};
  args.x = p.x, args.w = p.weights, args.bias = p.bias, args.z = p.z, args.y = p.y;
  args.h = static_cast<int>(p.h), args.w_ = static_cast<int>(p.w);
  args.c = static_cast<int>(p.c), args.ho = static_cast<int>(p.ho),
  args.wo = static_cast<int>(p.wo);
  args.padH = p.padH, args.padW = p.padW;
  args.packsPerBlock = packsPerBlock;
  args.tilesW = static_cast<int>((p.wo + kTileCols - 1) / kTileCols);
  args.tilesH = static_cast<int>((p.ho + tileRows - 1) / tileRows);
  args.activation = p.epilogue.activation;
  args.alpha = p.epilogue.alpha, args.beta = p.epilogue.beta;
  const int64_t blocks = p.n * args.tilesW * args.tilesH;
  if (blocks == 0) return Status::ok();
  const int64_t slices = packs / packsPerBlock;
  if (blocks > 0x7fffffff || slices > 65535)
    return unsupported("depthwise convolution grid too large");
  const size_t sharedBytes = sharedBytesFor(p.c, p.r, p.s, p.strideH);
  if (sharedBytes > kMaxSharedBytes)
    return unsupported("depthwise tile beyond 96 KB of shared memory");
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(slices));
  if (p.type == DataType::kFloat16) return launchType<__half>(p, args, grid, sharedBytes, stream);
  return launchType<__nv_bfloat16>(p, args, grid, sharedBytes, stream);
}

}  // namespace kiln::cuda
