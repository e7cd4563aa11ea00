// Kiln's own 1x1 INT8 convolution (int8_pointwise_gemm.h has the contract): one
// thread block computes a 64-pixel x 128-channel tile of Y with int8 tensor-core MMAs
// (mma.sync m16n8k32, int32 accumulate). X and W chunks of 64 input channels are staged
// in shared memory (rows padded by 16 bytes: the fragment loads of a warp hit 32
// different banks); the epilogue reads the residual tile and writes the output tile
// through shared memory, so every global access is a coalesced 16-byte one.
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/int8_pointwise_gemm.h"

namespace kiln::cuda {
namespace {

constexpr int kRows = 64;      // pixels per block
constexpr int kCols = 128;     // output channels per block
constexpr int kDepth = 64;     // input channels per shared-memory chunk
constexpr int kPad = 16;       // bytes added to each shared row
constexpr int kThreads = 256;  // 8 warps: 4 along the pixels x 2 along the channels
constexpr int kWarpCols = 64;  // output channels per warp: 8 MMA tiles of 8
constexpr int kXStride = kDepth + kPad;
constexpr int kYStride = kCols + kPad;

__device__ __forceinline__ void mmaS8(int32_t (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                      uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

struct PointwiseMmaArgs {
  const int8_t* x;  // [rows, channels]
  const int8_t* w;  // [outChannels, channels]
  const float* alpha;
  const float* bias;
  const int8_t* z;  // [rows, outChannels] or null
  int8_t* y;        // [rows, outChannels]
  float beta;
  int64_t rows;
  int channels, outChannels;
  bool relu;
};

// Measured on an H200 (ResNet-50 layer1 conv3 + residual): requesting the residual
// tile with the first X and W chunk, running column tiles fastest and capping the
// registers for 3 blocks per SM, together, made this slower (0.31 -> 0.35 ms).
__global__ void __launch_bounds__(kThreads) pointwiseMmaKernel(PointwiseMmaArgs p) {
  __shared__ __align__(16) int8_t xs[kRows * kXStride];
  __shared__ __align__(16) int8_t ws[kCols * kXStride];
  __shared__ __align__(16) int8_t ys[kRows * kYStride];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int group = lane >> 2, quad = lane & 3;
  const int warpRow = (warp & 3) * 16, warpCol = (warp >> 2) * kWarpCols;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int col0 = blockIdx.y * kCols;
  constexpr int kPieces = kCols / 16;  // 16-byte pieces per row of a Y tile
  int32_t acc[kWarpCols / 8][4] = {};
  for (int c0 = 0; c0 < p.channels; c0 += kDepth) {
    {  // X: 64 rows x 64 bytes, one 16-byte piece per thread
      const int r = tid >> 2, piece = (tid & 3) * 16;
      int4 v = make_int4(0, 0, 0, 0);
      if (row0 + r < p.rows)
        v = *reinterpret_cast<const int4*>(p.x + (row0 + r) * p.channels + c0 + piece);
      *reinterpret_cast<int4*>(xs + r * kXStride + piece) = v;
    }
    for (int i = tid; i < kCols * 4; i += kThreads) {  // W: 128 rows x 64 bytes
      const int r = i >> 2, piece = (i & 3) * 16;
      *reinterpret_cast<int4*>(ws + r * kXStride + piece) = *reinterpret_cast<const int4*>(
          p.w + static_cast<int64_t>(col0 + r) * p.channels + c0 + piece);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kDepth; k += 32) {
      const int8_t* a = xs + (warpRow + group) * kXStride + k + quad * 4;
      const uint32_t a0 = *reinterpret_cast<const uint32_t*>(a);
      const uint32_t a1 = *reinterpret_cast<const uint32_t*>(a + 8 * kXStride);
      const uint32_t a2 = *reinterpret_cast<const uint32_t*>(a + 16);
      const uint32_t a3 = *reinterpret_cast<const uint32_t*>(a + 8 * kXStride + 16);
#pragma unroll
      for (int t = 0; t < kWarpCols / 8; ++t) {
        const int8_t* b = ws + (warpCol + t * 8 + group) * kXStride + k + quad * 4;
        mmaS8(acc[t], a0, a1, a2, a3, *reinterpret_cast<const uint32_t*>(b),
              *reinterpret_cast<const uint32_t*>(b + 16));
      }
    }
    __syncthreads();
  }
  // The residual tile into ys (rows past the end stay unread).
  for (int i = tid; p.z && i < kRows * kPieces; i += kThreads) {
    const int r = i / kPieces, piece = (i % kPieces) * 16;
    if (row0 + r < p.rows)
      *reinterpret_cast<int4*>(ys + r * kYStride + piece) =
          *reinterpret_cast<const int4*>(p.z + (row0 + r) * p.outChannels + col0 + piece);
  }
  __syncthreads();
#pragma unroll
  for (int t = 0; t < kWarpCols / 8; ++t) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = warpRow + group + (e >> 1) * 8;
      const int c = warpCol + t * 8 + quad * 2 + (e & 1);
      float v =
          static_cast<float>(acc[t][e]) * __ldg(p.alpha + col0 + c) + __ldg(p.bias + col0 + c);
      if (p.z) v += p.beta * static_cast<float>(ys[r * kYStride + c]);
      if (p.relu) v = fmaxf(v, 0.f);
      ys[r * kYStride + c] = static_cast<int8_t>(fminf(fmaxf(rintf(v), -128.f), 127.f));
    }
  }
  __syncthreads();
  for (int i = tid; i < kRows * kPieces; i += kThreads) {
    const int r = i / kPieces, piece = (i % kPieces) * 16;
    if (row0 + r < p.rows)
      *reinterpret_cast<int4*>(p.y + (row0 + r) * p.outChannels + col0 + piece) =
          *reinterpret_cast<const int4*>(ys + r * kYStride + piece);
  }
}

}  // namespace

bool pointwiseMmaSupports(int64_t channels, int64_t outChannels) {
  return channels > 0 && channels % kDepth == 0 && outChannels > 0 && outChannels % kCols == 0;
}

Status runPointwiseMma(const void* x, const void* w, const float* alpha, const float* bias,
                       float beta, const void* z, void* y, int64_t rows, int64_t channels,
                       int64_t outChannels, bool relu, cudaStream_t stream) {
  if (!pointwiseMmaSupports(channels, outChannels))
    return Status(StatusCode::kInvalidArgument,
                  "the int8 MMA kernel needs C % 64 == 0 and K % 128 == 0");
  if (rows == 0) return Status::ok();
  PointwiseMmaArgs p{static_cast<const int8_t*>(x), static_cast<const int8_t*>(w), alpha, bias,
                     static_cast<const int8_t*>(z), static_cast<int8_t*>(y),       beta,  rows,
                     static_cast<int>(channels),    static_cast<int>(outChannels), relu};
  const int64_t rowTiles = (rows + kRows - 1) / kRows;
  if (rowTiles > 0x7fffffff)
    return Status(StatusCode::kInvalidArgument, "too many pixels for the int8 MMA kernel");
  const dim3 grid(static_cast<unsigned>(rowTiles), static_cast<unsigned>(outChannels / kCols));
  pointwiseMmaKernel<<<grid, kThreads, 0, stream>>>(p);
  KILN_CUDA_CHECK_LAUNCH("pointwiseMmaKernel");
  return Status::ok();
}

}  // namespace kiln::cuda
