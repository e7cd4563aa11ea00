// Device half of the integer GEMMs (contract: matmul_integer_impl.h; host half, op
// contract and checks: matmul_integer.cpp): a 16x16 shared-memory tiled kernel
// accumulating in int32 (MatMulInteger wraps like the CPU's cast), with QLinearMatMul's
// requantizing epilogue.
#include <algorithm>
#include <cmath>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/matmul_integer_impl.h"
#include "backends/cuda/ops/quantize_common.cuh"

namespace kiln::cuda {
namespace {

using namespace qz;

constexpr int kTile = 16;

struct IntGemmParams {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* aZero = nullptr;  // nullptr: zero; else aZeroCount values (1 or m)
  const void* bZero = nullptr;  // 1, n, or k (rank-1 B) values
  int64_t aZeroCount = 1, bZeroCount = 1;
  bool bZeroPerRow = false;  // rank-1 B: its zero point runs along k
  int64_t m = 0, n = 0, k = 0, batch = 1;
  ShapeInfo batchA, batchB;  // batch index -> matrix index of A / B
  // Epilogue: int32 output, or QLinearMatMul's requantization to int8/uint8.
  bool requantize = false;
  const void* aScale = nullptr;
  const void* bScale = nullptr;
  const void* yScale = nullptr;
  const void* yZero = nullptr;
  DataType aScaleType{}, bScaleType{}, yScaleType{}, yZeroType{};
  int64_t aScaleCount = 1, bScaleCount = 1;
  void* y = nullptr;
};

template <class T>
__device__ __forceinline__ int32_t zeroAt(const void* zero, int64_t count, int64_t i) {
  if (!zero) return 0;
  return static_cast<int32_t>(static_cast<const T*>(zero)[count == 1 ? 0 : i]);
}

__device__ double saturateRoundDev(double value, double lo, double hi) {
  const double r = rint(value);
  if (!(r >= lo)) return lo;  // NaN too
  if (r > hi) return hi;
  return r;
}

template <class TA, class TB>
__global__ void __launch_bounds__(kTile* kTile) integerGemmKernel(IntGemmParams p) {
  __shared__ int32_t as[kTile][kTile + 1];
  __shared__ int32_t bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t rowTiles = (p.m + kTile - 1) / kTile, colTiles = (p.n + kTile - 1) / kTile;
  for (int64_t bz = blockIdx.z; bz < p.batch; bz += gridDim.z) {
    const TA* a = static_cast<const TA*>(p.a) + stridedOffset(p.batchA, bz) * p.m * p.k;
    const TB* b = static_cast<const TB*>(p.b) + stridedOffset(p.batchB, bz) * p.k * p.n;
    for (int64_t by = blockIdx.y; by < rowTiles; by += gridDim.y) {
      for (int64_t bx = blockIdx.x; bx < colTiles; bx += gridDim.x) {
        const int64_t row = by * kTile + ty, col = bx * kTile + tx;
        uint32_t acc = 0;  // wraps like the CPU's cast to int32
        for (int64_t k0 = 0; k0 < p.k; k0 += kTile) {
          const int64_t ak = k0 + tx, bk = k0 + ty;
          as[ty][tx] = row < p.m && ak < p.k ? static_cast<int32_t>(a[row * p.k + ak]) -
                                                   zeroAt<TA>(p.aZero, p.aZeroCount, row)
                                             : 0;
          bs[ty][tx] = bk < p.k && col < p.n
                           ? static_cast<int32_t>(b[bk * p.n + col]) -
                                 zeroAt<TB>(p.bZero, p.bZeroCount, p.bZeroPerRow ? bk : col)
                           : 0;
          __syncthreads();
#pragma unroll
          for (int kk = 0; kk < kTile; ++kk)
            acc += static_cast<uint32_t>(as[ty][kk]) * static_cast<uint32_t>(bs[kk][tx]);
          __syncthreads();
        }
        if (row >= p.m || col >= p.n) continue;
        const int64_t out = (bz * p.m + row) * p.n + col;
        const int32_t sum = static_cast<int32_t>(acc);
        if (!p.requantize) {
          static_cast<int32_t*>(p.y)[out] = sum;
          continue;
        }
        // Scales combine in float32, as the CPU computes them.
        const float aScale = loadAsFloat(p.aScale, p.aScaleType, p.aScaleCount == 1 ? 0 : row);
        const float bScale = loadAsFloat(p.bScale, p.bScaleType, p.bScaleCount == 1 ? 0 : col);
        const float scale =
            __fdiv_rn(__fmul_rn(aScale, bScale), loadAsFloat(p.yScale, p.yScaleType, 0));
        const double zero = static_cast<double>(loadAsFloat(p.yZero, p.yZeroType, 0));
        const double v =
            __dadd_rn(__dmul_rn(static_cast<double>(sum), static_cast<double>(scale)), zero);
        if (p.yZeroType == DataType::kInt8)
          static_cast<int8_t*>(p.y)[out] = static_cast<int8_t>(saturateRoundDev(v, -128.0, 127.0));
        else
          static_cast<uint8_t*>(p.y)[out] = static_cast<uint8_t>(saturateRoundDev(v, 0.0, 255.0));
      }
    }
  }
}

Shape shapeOf(const IntegerGemmBatchShape& s) {
  return Shape(s.dims, s.dims + s.rank);
}

// The kernel's parameters: the launch's, with the batch index -> matrix index strides of
// A and B (device_common's broadcastStrides).
IntGemmParams intGemmParams(const IntegerGemmLaunch& a) {
  IntGemmParams p;
  p.a = a.a;
  p.b = a.b;
  p.aZero = a.aZero;
  p.bZero = a.bZero;
  p.aZeroCount = a.aZeroCount;
  p.bZeroCount = a.bZeroCount;
  p.bZeroPerRow = a.bZeroPerRow;
  p.m = a.m;
  p.n = a.n;
  p.k = a.k;
  p.batch = a.batch;
  const Shape batch = shapeOf(a.batchShape);
  p.batchA = broadcastStrides(shapeOf(a.aBatch), batch);
  p.batchB = broadcastStrides(shapeOf(a.bBatch), batch);
  p.requantize = a.requantize;
  p.aScale = a.aScale;
  p.bScale = a.bScale;
  p.yScale = a.yScale;
  p.yZero = a.yZero;
  p.aScaleType = a.aScaleType;
  p.bScaleType = a.bScaleType;
  p.yScaleType = a.yScaleType;
  p.yZeroType = a.yZeroType;
  p.aScaleCount = a.aScaleCount;
  p.bScaleCount = a.bScaleCount;
  p.y = a.y;
  return p;
}

}  // namespace

Status launchIntegerGemm(const IntegerGemmLaunch& args, cudaStream_t stream) {
  if (args.batch == 0 || args.m == 0 || args.n == 0) return Status::ok();
  const IntGemmParams p = intGemmParams(args);
  const dim3 block(kTile, kTile);
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((p.n + kTile - 1) / kTile, 65535)),
                  static_cast<unsigned>(std::min<int64_t>((p.m + kTile - 1) / kTile, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(p.batch, 65535)));
  const bool aSigned = args.aType == DataType::kInt8, bSigned = args.bType == DataType::kInt8;
  if (aSigned && bSigned)
    integerGemmKernel<int8_t, int8_t><<<grid, block, 0, stream>>>(p);
  else if (aSigned)
    integerGemmKernel<int8_t, uint8_t><<<grid, block, 0, stream>>>(p);
  else if (bSigned)
    integerGemmKernel<uint8_t, int8_t><<<grid, block, 0, stream>>>(p);
  else
    integerGemmKernel<uint8_t, uint8_t><<<grid, block, 0, stream>>>(p);
  KILN_CUDA_CHECK_LAUNCH("integerGemmKernel");
  return Status::ok();
}

}  // namespace kiln::cuda
