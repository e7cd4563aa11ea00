// The warp-level pieces of Kiln's mma.sync INT8 kernels (int8_conv_mma.cu,
// int8_conv_halo.cu): a warp owns a kTilesM x kTilesN grid of 16 x 8 int32
// accumulator tiles (mma.sync m16n8k32, s8 x s8), kTilesN == 4 (32 output channels).
// Operands come from shared memory through ldmatrix; W's rows (output channels) are
// rows of 64 bytes of depth, `wStride` bytes apart. Include from .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/ops/int8_conv_mma_device.cuh"

namespace kiln::cuda::int8mma {

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

// Where W's rows (output channels) lie in shared memory. The B fragment of n tile t
// (t < 4) takes, for its column j, channel 8 (j / 2) + 2 t + j % 2 of the warp's 32: the
// thread holding columns 2 quad, 2 quad + 1 of each tile then owns 8 consecutive
// channels, 8 quad .. 8 quad + 7, and the epilogue moves them 8 bytes at a time.
//  - In channel order (PermutedB false) the 8 rows one ldmatrix phase reads are
//    channels 2 t + {0, 1, 8, 9, 16, 17, 24, 25}: with 80-byte rows, four of them share
//    each bank group (a 4-way conflict on every B load; found in review, fourth session).
//  - PermutedB: the copy side stores channel 32 (row / 32) + permutedChannel(row % 32) in
//    shared row `row` (permutedChannel: that formula with t = row / 8, j = row % 8), so
//    n tile t reads the 8 consecutive rows 8 t .. 8 t + 7: conflict-free.
__host__ __device__ constexpr int permutedChannel(int row) {
  return 32 * (row >> 5) + 8 * ((row & 7) >> 1) + 2 * ((row >> 3) & 3) + (row & 1);
}

// acc += A x B^T over 32 bytes of depth at kk: aRow(m) is the shared-memory address of
// this lane's A row for m tile m (row lane % 16 of it) at depth kk + 16 (lane / 16);
// B is the warp's 32 output channels from W's shared row warpCol on (see above).
template <int TilesM, int WStride, bool PermutedB, class ARow>
__device__ __forceinline__ void warpMmaStep(int32_t (&acc)[TilesM][4][4], ARow aRow,
                                            const int8_t* ws, int warpCol, int kk, int lane) {
  uint32_t a[TilesM][4], b[4][2];
#pragma unroll
  for (int m = 0; m < TilesM; ++m) loadMatrices(a[m], aRow(m));
#pragma unroll
  for (int n = 0; n < 4; n += 2) {
    uint32_t four[4];
    const int t = n + (lane >> 4), j = lane & 7;
    const int row = PermutedB ? 8 * t + j : 8 * (j >> 1) + 2 * t + (j & 1);
    loadMatrices(four, ws + (warpCol + row) * WStride + kk + ((lane >> 3) & 1) * 16);
    b[n][0] = four[0];
    b[n][1] = four[1];
    b[n + 1][0] = four[2];
    b[n + 1][1] = four[3];
  }
#pragma unroll
  for (int m = 0; m < TilesM; ++m)
#pragma unroll
    for (int n = 0; n < 4; ++n) mmaS8(acc[m][n], a[m], b[n][0], b[n][1]);
}

// The warp's accumulators become int8 in the output tile `out` (rows outStride apart;
// with Residual it holds the residual tile already), then zero. col0 is the tile's
// first output channel (for alpha and bias); warpRow, warpCol the warp's corner.
template <int TilesM, bool Residual, bool SmallDepth>
__device__ __forceinline__ void warpEpilogue(int32_t (&acc)[TilesM][4][4], const ConvMmaArgs& p,
                                             int col0, int warpRow, int warpCol, int lane,
                                             int8_t* out, int outStride) {
  const int group = lane >> 2, quad = lane & 3;
  const float low = p.relu ? 0.f : -128.f;
  const int column = warpCol + quad * 8;  // this thread's 8 channels (see the B loads)
  float alpha[8], bias[8];
  loadEight(p.alpha + col0 + column, alpha);
  loadEight(p.bias + col0 + column, bias);
#pragma unroll
  for (int m = 0; m < TilesM; ++m) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = warpRow + m * 16 + group + half * 8;
      // channel column + e: n tile e / 2, element e % 2
      requantizeEight<Residual, SmallDepth>(
          [&](int e) { return acc[m][e >> 1][half * 2 + (e & 1)]; }, alpha, bias, p.beta, low,
          reinterpret_cast<uint2*>(out + r * outStride + column));
    }
  }
#pragma unroll
  for (int m = 0; m < TilesM; ++m)
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[m][n][e] = 0;
}

}  // namespace kiln::cuda::int8mma
