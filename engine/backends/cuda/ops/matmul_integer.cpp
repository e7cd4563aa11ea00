// CUDA kernels of the integer GEMMs, host half: MatMulInteger and QLinearMatMul, with the
// CPU kernels' opset ranges, attributes, defaults, error messages and bit-exact results
// (cpu/ops/matmul.cpp): shapes, zero points and scales checked here, the GEMM in
// matmul_integer_impl.cu (contract: matmul_integer_impl.h). A 16x16 shared-memory tiled
// kernel accumulating in int32 (MatMulInteger wraps like the CPU's cast; QLinearMatMul
// refuses K beyond the int32-exact range instead of diverging from the CPU's exact sum).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/matmul_integer.h"
#include "backends/cuda/ops/matmul_integer_impl.h"
#include "backends/cuda/ops/quantize_common.h"

namespace kiln::cuda {
namespace {

using namespace qz;

// ---- MatMulInteger / QLinearMatMul --------------------------------------------------

// Beyond this K an int32 sum of 8-bit products could overflow (255 * 255 * K).
constexpr int64_t kMaxExactK = 33025;

// `dims` (at most kIntegerGemmMaxBatchRank of them) as the launch's batch shape.
IntegerGemmBatchShape batchShapeOf(const Shape& dims) {
  IntegerGemmBatchShape s;
  s.rank = static_cast<int>(dims.size());
  std::copy(dims.begin(), dims.end(), s.dims);
  return s;
}

// MatMul's shape rules (cpu planMatMul): 1-D operands get a unit dim, batches broadcast.
Status planIntegerGemm(const GpuKernelContext& ctx, const DeviceTensor& aT, const DeviceTensor& bT,
                       IntegerGemmLaunch* p, Shape* outShape) {
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
  if (rank > static_cast<size_t>(kIntegerGemmMaxBatchRank)) {
    return ctx.unsupported("batch rank above 8");
  }
  *outShape = batch;
  if (aT.rank() > 1) outShape->push_back(p->m);
  if (bT.rank() > 1) outShape->push_back(p->n);
  p->batch = shapeNumel(batch);
  p->batchShape = batchShapeOf(batch);
  p->aBatch = batchShapeOf(aBatch);
  p->bBatch = batchShapeOf(bBatch);
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

Status bindOperands(GpuKernelContext& ctx, const DeviceTensor* aZero, const DeviceTensor* bZero,
                    IntegerGemmLaunch* p, Shape* outShape) {
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
  IntegerGemmLaunch p;
  Shape outShape;
  KILN_RETURN_IF_ERROR(bindOperands(ctx, inputOrNull(ctx, 2), inputOrNull(ctx, 3), &p, &outShape));
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, DataType::kInt32, outShape));
  p.y = y.data;
  if (p.k == 0 && y.numel() > 0) {
    KILN_CUDA_CHECK(cudaMemsetAsync(y.data, 0, y.byteSize(), ctx.stream()));
    return Status::ok();
  }
  p.aType = ctx.input(0).type;
  p.bType = ctx.input(1).type;
  return launchIntegerGemm(p, ctx.stream());
}

// y = saturate(round(((a - a_zp) x (b - b_zp)) * a_scale * b_scale / y_scale) + y_zp).
Status qlinearMatmulKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 8));
  const DeviceTensor& yZero = ctx.input(7);
  if (!isQuantized8(yZero.type) || yZero.numel() != 1) {
    return ctx.error("y_zero_point must be an int8 or uint8 scalar");
  }
  IntegerGemmLaunch p;
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
  p.aType = ctx.input(0).type;
  p.bType = ctx.input(3).type;
  return launchIntegerGemm(p, ctx.stream());
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
