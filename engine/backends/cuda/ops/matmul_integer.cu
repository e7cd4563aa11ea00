// CUDA kernels of the integer GEMMs: MatMulInteger and QLinearMatMul, with the CPU kernels'
// opset ranges, attributes, defaults, error messages and bit-exact results
// (cpu/ops/matmul.cpp). A 16x16 shared-memory tiled kernel accumulating in int32
// (MatMulInteger wraps like the CPU's cast; QLinearMatMul refuses K beyond the int32-exact
// range instead of diverging from the CPU's exact sum).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/matmul_integer.h"
#include "backends/cuda/ops/op_common.cuh"
#include "backends/cuda/ops/quantize_common.cuh"

namespace kiln::cuda {
namespace {

using namespace qz;

// ---- MatMulInteger / QLinearMatMul --------------------------------------------------

constexpr int kTile = 16;
// Beyond this K an int32 sum of 8-bit products could overflow (255 * 255 * K).
constexpr int64_t kMaxExactK = 33025;

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

bool isQuantized8(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUInt8;
}

// MatMul's shape rules (cpu planMatMul): 1-D operands get a unit dim, batches broadcast.
Status planIntegerGemm(const GpuKernelContext& ctx, const DeviceTensor& aT, const DeviceTensor& bT,
                       IntGemmParams* p, Shape* outShape) {
  if (aT.rank() == 0 || bT.rank() == 0) return ctx.error("MatMul inputs must have rank >= 1");
  Shape a = aT.shape, b = bT.shape;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  p->m = a[a.size() - 2];
  p->k = a.back();
  p->n = b.back();
  if (b[b.size() - 2] != p->k) {
    return ctx.error("MatMul inner dimensions differ: " + shapeToString(aT.shape) + " x " +
                     shapeToString(bT.shape));
  }
  const Shape aBatch(a.begin(), a.end() - 2), bBatch(b.begin(), b.end() - 2);
  const size_t rank = std::max(aBatch.size(), bBatch.size());
  Shape batch(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i + aBatch.size() >= rank ? aBatch[i + aBatch.size() - rank] : 1;
    const int64_t db = i + bBatch.size() >= rank ? bBatch[i + bBatch.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) {
      return ctx.error("MatMul batch dims do not broadcast: " + shapeToString(aT.shape) + " x " +
                       shapeToString(bT.shape));
    }
    batch[i] = da == 1 ? db : da;
  }
  if (rank > static_cast<size_t>(kMaxRank)) return ctx.unsupported("batch rank above 8");
  *outShape = batch;
  if (aT.rank() > 1) outShape->push_back(p->m);
  if (bT.rank() > 1) outShape->push_back(p->n);
  p->batch = shapeNumel(batch);
  p->batchA = broadcastStrides(aBatch, batch);
  p->batchB = broadcastStrides(bBatch, batch);
  return Status::ok();
}

// A zero point: a scalar or, for A, one per row (dim -2), for B, one per column (dim -1).
Status bindZeroPoint(const GpuKernelContext& ctx, const DeviceTensor& t, const DeviceTensor* zero,
                     bool isA, const void** data, int64_t* count) {
  const char* name = isA ? "A" : "B";
  if (!isQuantized8(t.type)) {
    return ctx.unsupported(std::string("input ") + name + " must be int8 or uint8");
  }
  if (!zero) return Status::ok();
  const int64_t rows = t.rank() >= 2 ? t.shape[t.rank() - 2] : 1;
  const int64_t cols = t.shape[t.rank() - 1];
  const int64_t axisSize = isA ? (t.rank() >= 2 ? rows : 1) : cols;
  if (zero->numel() != 1 && zero->numel() != axisSize) {
    return ctx.error(std::string("zero point of ") + name + " must be a scalar or one per " +
                     (isA ? "row" : "column"));
  }
  if (zero->type != t.type) {
    return ctx.error(std::string("zero point of ") + name + " must have the type of " + name);
  }
  *data = zero->data;
  *count = zero->numel();
  return Status::ok();
}

Status launchIntegerGemm(GpuKernelContext& ctx, DataType aType, DataType bType,
                         const IntGemmParams& p) {
  if (p.batch == 0 || p.m == 0 || p.n == 0) return Status::ok();
  const dim3 block(kTile, kTile);
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((p.n + kTile - 1) / kTile, 65535)),
                  static_cast<unsigned>(std::min<int64_t>((p.m + kTile - 1) / kTile, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(p.batch, 65535)));
  cudaStream_t stream = ctx.stream();
  const bool aSigned = aType == DataType::kInt8, bSigned = bType == DataType::kInt8;
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

Status bindOperands(GpuKernelContext& ctx, const DeviceTensor* aZero, const DeviceTensor* bZero,
                    IntGemmParams* p, Shape* outShape) {
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& b = ctx.input(ctx.node().opType == "QLinearMatMul" ? 3 : 1);
  KILN_RETURN_IF_ERROR(planIntegerGemm(ctx, a, b, p, outShape));
  KILN_RETURN_IF_ERROR(bindZeroPoint(ctx, a, aZero, true, &p->aZero, &p->aZeroCount));
  KILN_RETURN_IF_ERROR(bindZeroPoint(ctx, b, bZero, false, &p->bZero, &p->bZeroCount));
  p->bZeroPerRow = b.rank() == 1 && p->bZeroCount != 1;
  p->a = a.data;
  p->b = b.data;
  return Status::ok();
}

Status matmulIntegerKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  IntGemmParams p;
  Shape outShape;
  KILN_RETURN_IF_ERROR(bindOperands(ctx, inputOrNull(ctx, 2), inputOrNull(ctx, 3), &p, &outShape));
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, DataType::kInt32, outShape));
  p.y = y.data;
  if (p.k == 0 && y.numel() > 0) {
    KILN_CUDA_CHECK(cudaMemsetAsync(y.data, 0, y.byteSize(), ctx.stream()));
    return Status::ok();
  }
  return launchIntegerGemm(ctx, ctx.input(0).type, ctx.input(1).type, p);
}

// y = saturate(round(((a - a_zp) x (b - b_zp)) * a_scale * b_scale / y_scale) + y_zp).
Status qlinearMatmulKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 8));
  const DeviceTensor& yZero = ctx.input(7);
  if (!isQuantized8(yZero.type) || yZero.numel() != 1) {
    return ctx.error("y_zero_point must be an int8 or uint8 scalar");
  }
  IntGemmParams p;
  Shape outShape;
  KILN_RETURN_IF_ERROR(bindOperands(ctx, &ctx.input(2), &ctx.input(5), &p, &outShape));
  const DeviceTensor& aScale = ctx.input(1);
  const DeviceTensor& bScale = ctx.input(4);
  const DeviceTensor& yScale = ctx.input(6);
  const bool aPerRow = aScale.numel() != 1, bPerCol = bScale.numel() != 1;
  if ((aPerRow && aScale.numel() != p.m) || (bPerCol && bScale.numel() != p.n) ||
      yScale.numel() != 1) {
    return ctx.error("scales must be scalars, or one per row of A / column of B");
  }
  for (const DeviceTensor* s : {&aScale, &bScale, &yScale}) {
    if (!isFloatData(s->type))
      return ctx.unsupported(std::string("scale of type ") + dataTypeName(s->type));
  }
  if (p.k > kMaxExactK) return ctx.unsupported("K above the int32-exact range of the GPU GEMM");
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, yZero.type, outShape));
  p.y = y.data;
  p.requantize = true;
  p.aScale = aScale.data;
  p.aScaleType = aScale.type;
  p.aScaleCount = aScale.numel();
  p.bScale = bScale.data;
  p.bScaleType = bScale.type;
  p.bScaleCount = bScale.numel();
  p.yScale = yScale.data;
  p.yScaleType = yScale.type;
  p.yZero = yZero.data;
  p.yZeroType = yZero.type;
  return launchIntegerGemm(ctx, ctx.input(0).type, ctx.input(3).type, p);
}

std::string supportsMatMulInteger(const Node&, const std::vector<DataType>& types) {
  if (!isQuantized8(typeAt(types, 0)) || !isQuantized8(typeAt(types, 1)))
    return "MatMulInteger on the GPU needs int8/uint8 A and B";
  return "";
}

std::string supportsQLinearMatMul(const Node&, const std::vector<DataType>& types) {
  if (!isQuantized8(typeAt(types, 0)) || !isQuantized8(typeAt(types, 3)))
    return "QLinearMatMul on the GPU needs int8/uint8 A and B";
  for (size_t i : {1, 4, 6}) {
    const DataType t = typeAt(types, i);
    if (t != DataType::kUndefined && !isFloatData(t))
      return std::string("no GPU kernel for a scale of ") + dataTypeName(t);
  }
  return "";
}

}  // namespace

void registerIntegerMatMulGpuKernels(GpuKernelRegistry& registry) {
  registry.add("MatMulInteger", 10, 1000, &matmulIntegerKernel, &supportsMatMulInteger);
  registry.add("QLinearMatMul", 10, 1000, &qlinearMatmulKernel, &supportsQLinearMatMul);
}

}  // namespace kiln::cuda
