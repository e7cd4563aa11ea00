// Gemm, MatMul (numpy batching and broadcasting), MatMulInteger and
// QLinearMatMul; Einsum lives in einsum.cpp. Floating-point products run on
// BLAS (float16/bfloat16 through float); integer types use a plain loop; the
// 8-bit ops shift by their zero points into double, where the sums are exact.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/einsum.h"
#include "backends/cpu/ops/matmul_plan.h"
#include "backends/cpu/ops/nn_common.h"
#include "kiln/tensor_size.h"

namespace kiln::cpu {
namespace {

template <class T>
Status gemmTyped(KernelContext& ctx, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                 Tensor& out) {
  using C = std::conditional_t<std::is_floating_point_v<ComputeType<T>>, BlasType<T>, T>;
  const float alphaAttr = ctx.node().attrFloat("alpha", 1.0f);
  const float betaAttr = ctx.node().attrFloat("beta", 1.0f);
  ComputeView<C> a(ctx.input(0).data<T>(), ctx.input(0).numel());
  ComputeView<C> b(ctx.input(1).data<T>(), ctx.input(1).numel());
  std::vector<C> y(static_cast<size_t>(m * n), C(0));
  const Tensor* c = ctx.inputOrNull(2);
  C beta = 0;
  if (c && betaAttr != 0.0f) {
    broadcastGemmC<C, T>(*c, m, n, y.data());
    beta = static_cast<C>(betaAttr);
  }
  gemmAny<C>(transA, transB, m, n, k, static_cast<C>(alphaAttr), a.data(), b.data(), beta,
             y.data());
  convertFromBuffer(y.data(), m * n, out.data<T>());
  return Status::ok();
}

Status gemmKernel(KernelContext& ctx) {
  GemmShape shape;
  KILN_RETURN_IF_ERROR(prepareGemmNode(ctx, &shape));
  const Tensor& a = ctx.input(0);
  Tensor& out = ctx.allocateOutput(0, a.type(), {shape.m, shape.n});
  Status status = dispatchAllTypes(a.type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    // The spec lists float types and 32/64-bit integers.
    constexpr bool kSupported =
        std::is_floating_point_v<ComputeType<T>> || (std::is_integral_v<T> && sizeof(T) >= 4);
    if constexpr (!kSupported) {
      return Status(StatusCode::kUnsupported, std::string("data type ") + dataTypeName(a.type()));
    } else {
      return gemmTyped<T>(ctx, shape.transA, shape.transB, shape.m, shape.n, shape.k, out);
    }
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

template <class T>
Status matmulTyped(const MatMulPlan& plan, const Tensor& a, const Tensor& b, Tensor& out) {
  using C = std::conditional_t<std::is_floating_point_v<ComputeType<T>>, BlasType<T>, T>;
  ComputeView<C> av(a.data<T>(), a.numel());
  ComputeView<C> bv(b.data<T>(), b.numel());
  if constexpr (std::is_same_v<C, T>) {
    runMatMulPlan(plan, av.data(), bv.data(), out.data<T>());
  } else {
    std::vector<C> y(static_cast<size_t>(out.numel()));
    runMatMulPlan(plan, av.data(), bv.data(), y.data());
    convertFromBuffer(y.data(), out.numel(), out.data<T>());
  }
  return Status::ok();
}

}  // namespace

Status prepareMatMulNode(const KernelContext& ctx, MatMulPlan* plan) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  if (ctx.input(0).type() != ctx.input(1).type())
    return ctx.error("inputs A and B must have one type");
  return planMatMul(ctx.input(0).shape(), ctx.input(1).shape(), plan)
      .withContext(ctx.node().describe());
}

namespace {

Status matmulKernel(KernelContext& ctx) {
  MatMulPlan plan;
  KILN_RETURN_IF_ERROR(prepareMatMulNode(ctx, &plan));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& out = ctx.allocateOutput(0, a.type(), plan.outShape);
  if (out.numel() == 0) return Status::ok();
  Status status = dispatchAllTypes(a.type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return Status(StatusCode::kUnsupported, "data type bool");
    } else {
      return matmulTyped<T>(plan, a, b, out);
    }
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

// A 8-bit operand minus its zero point, as double. The zero point is a scalar or,
// for A, one per row (dim -2) and, for B, one per column (dim -1).
Status shiftOperand(const KernelContext& ctx, const Tensor& t, const Tensor* zeroPoint, bool isA,
                    std::vector<double>* out) {
  const char* name = isA ? "A" : "B";
  if (!isQuantized8(t.type())) {
    return ctx.unsupported(std::string("input ") + name + " must be int8 or uint8");
  }
  const std::vector<double> zp = zeroPoint ? valuesAsDoubles(*zeroPoint) : std::vector<double>{0.0};
  const int64_t rows = t.rank() >= 2 ? t.dim(-2) : 1;
  const int64_t cols = t.dim(-1);
  const int64_t axisSize = isA ? (t.rank() >= 2 ? rows : 1) : cols;
  if (zp.size() != 1 && static_cast<int64_t>(zp.size()) != axisSize) {
    return ctx.error(std::string("zero point of ") + name + " must be a scalar or one per " +
                     (isA ? "row" : "column"));
  }
  if (zeroPoint && zeroPoint->type() != t.type()) {
    return ctx.error(std::string("zero point of ") + name + " must have the type of " + name);
  }
  out->resize(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t axisIndex = isA ? (i / cols) % rows : i % cols;
    (*out)[i] = t.valueAsDouble(i) - zp[zp.size() == 1 ? 0 : axisIndex];
  }
  return Status::ok();
}

Status integerProduct(const KernelContext& ctx, const Tensor* aZero, const Tensor* bZero,
                      const Tensor& a, const Tensor& b, MatMulPlan* plan, std::vector<double>* y) {
  KILN_RETURN_IF_ERROR_CTX(planMatMul(a.shape(), b.shape(), plan), ctx.node().describe());
  std::vector<double> as, bs;
  KILN_RETURN_IF_ERROR(shiftOperand(ctx, a, aZero, true, &as));
  KILN_RETURN_IF_ERROR(shiftOperand(ctx, b, bZero, false, &bs));
  // The double accumulators are the output's size: held to the tensor cap first (as
  // ConvInteger's, whose geometry fuzz_onnx_import pushed to 64 TiB).
  KILN_RETURN_IF_ERROR(
      checkTensorSize(DataType::kFloat64, plan->outShape, ctx.node().describe() + " accumulators"));
  y->assign(static_cast<size_t>(shapeNumel(plan->outShape)), 0.0);
  if (!y->empty()) runMatMulPlan(*plan, as.data(), bs.data(), y->data());
  return Status::ok();
}

Status matmulIntegerKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  MatMulPlan plan;
  std::vector<double> y;
  KILN_RETURN_IF_ERROR(integerProduct(ctx, ctx.inputOrNull(2), ctx.inputOrNull(3), ctx.input(0),
                                      ctx.input(1), &plan, &y));
  Tensor& out = ctx.allocateOutput(0, DataType::kInt32, plan.outShape);
  int32_t* data = out.data<int32_t>();
  for (size_t i = 0; i < y.size(); ++i) data[i] = static_cast<int32_t>(std::llround(y[i]));
  return Status::ok();
}

// y = saturate(round(((a - a_zp) x (b - b_zp)) * a_scale * b_scale / y_scale) + y_zp).
Status qlinearMatmulKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(8));
  const Tensor& yZero = ctx.input(7);
  if (!isQuantized8(yZero.type()) || yZero.numel() != 1) {
    return ctx.error("y_zero_point must be an int8 or uint8 scalar");
  }
  MatMulPlan plan;
  std::vector<double> acc;
  KILN_RETURN_IF_ERROR(
      integerProduct(ctx, &ctx.input(2), &ctx.input(5), ctx.input(0), ctx.input(3), &plan, &acc));
  const std::vector<double> aScale = valuesAsDoubles(ctx.input(1));
  const std::vector<double> bScale = valuesAsDoubles(ctx.input(4));
  const double yScale = ctx.input(6).valueAsDouble(0);
  const bool aPerRow = aScale.size() != 1, bPerCol = bScale.size() != 1;
  if ((aPerRow && static_cast<int64_t>(aScale.size()) != plan.m) ||
      (bPerCol && static_cast<int64_t>(bScale.size()) != plan.n) || ctx.input(6).numel() != 1) {
    return ctx.error("scales must be scalars, or one per row of A / column of B");
  }
  Tensor& out = ctx.allocateOutput(0, yZero.type(), plan.outShape);
  const double zero = yZero.valueAsDouble(0);
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t col = static_cast<int64_t>(i) % plan.n;
    const int64_t row = static_cast<int64_t>(i) / plan.n % plan.m;
    // Scales combine in float32, as the reference computes them.
    const float scale = static_cast<float>(aScale[aPerRow ? row : 0]) *
                        static_cast<float>(bScale[bPerCol ? col : 0]) / static_cast<float>(yScale);
    const double v = acc[i] * static_cast<double>(scale) + zero;
    if (yZero.type() == DataType::kInt8) {
      out.data<int8_t>()[i] = saturateRound<int8_t>(v);
    } else {
      out.data<uint8_t>()[i] = saturateRound<uint8_t>(v);
    }
  }
  return Status::ok();
}

}  // namespace

Status prepareGemmNode(const KernelContext& ctx, GemmShape* shape) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.rank() != 2 || b.rank() != 2 || a.type() != b.type()) {
    return ctx.error("inputs A " + shapeToString(a.shape()) + " and B " + shapeToString(b.shape()) +
                     " must be 2-D of one type");
  }
  const bool transA = ctx.node().attrInt("transA", 0) != 0;
  const bool transB = ctx.node().attrInt("transB", 0) != 0;
  const int64_t m = transA ? a.dim(1) : a.dim(0), k = transA ? a.dim(0) : a.dim(1);
  const int64_t n = transB ? b.dim(0) : b.dim(1), kb = transB ? b.dim(1) : b.dim(0);
  if (k != kb)
    return ctx.error("inner dimensions of A and B differ: " + std::to_string(k) + " vs " +
                     std::to_string(kb));
  if (const Tensor* c = ctx.inputOrNull(2)) {
    const bool rowsOk = c->rank() < 2 || c->dim(0) == 1 || c->dim(0) == m;
    const bool colsOk = c->rank() < 1 || c->dim(-1) == 1 || c->dim(-1) == n;
    if (c->type() != a.type() || c->rank() > 2 || !rowsOk || !colsOk) {
      return ctx.error("input C " + shapeToString(c->shape()) + " does not broadcast to [" +
                       std::to_string(m) + ", " + std::to_string(n) + "]");
    }
  }
  *shape = {transA, transB, m, n, k};
  return Status::ok();
}

Status planMatMul(const Shape& aShape, const Shape& bShape, MatMulPlan* plan) {
  if (aShape.empty() || bShape.empty()) return invalidArgument("MatMul inputs must have rank >= 1");
  Shape a = aShape, b = bShape;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  plan->m = a[a.size() - 2];
  plan->k = a.back();
  plan->n = b.back();
  if (b[b.size() - 2] != plan->k) {
    return invalidArgument("MatMul inner dimensions differ: " + shapeToString(aShape) + " x " +
                           shapeToString(bShape));
  }
  const Shape aBatch(a.begin(), a.end() - 2), bBatch(b.begin(), b.end() - 2);
  Shape batch;
  KILN_RETURN_IF_ERROR(broadcastShapes(aBatch, bBatch, &batch));
  plan->outShape = batch;
  if (aShape.size() > 1) plan->outShape.push_back(plan->m);
  if (bShape.size() > 1) plan->outShape.push_back(plan->n);
  const std::vector<int64_t> aStrides = broadcastStrides(aBatch, batch);
  const std::vector<int64_t> bStrides = broadcastStrides(bBatch, batch);
  plan->aOffsets.clear();
  plan->bOffsets.clear();
  const int64_t aMatrix = plan->m * plan->k, bMatrix = plan->k * plan->n;
  // An empty output (a batch, M or N of 0) computes nothing: no offsets, however many
  // batches the other dims claim (2^40 of them once looped past libFuzzer's timeout). The
  // offsets of a non-empty output are held to the tensor cap like any buffer.
  KILN_ASSIGN_OR_RETURN(const int64_t batchCount, checkedNumel(batch, "MatMul's broadcast batch"));
  if (batchCount == 0 || plan->m == 0 || plan->n == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(
      checkTensorSize(DataType::kInt64, {2, batchCount}, "MatMul's batch offsets"));
  forEachBroadcast(batch, {aStrides, bStrides}, [&](int64_t, const std::vector<int64_t>& offsets) {
    plan->aOffsets.push_back(offsets[0] * aMatrix);
    plan->bOffsets.push_back(offsets[1] * bMatrix);
  });
  plan->foldBatch = true;
  for (size_t i = 0; i < plan->aOffsets.size(); ++i) {
    if (plan->aOffsets[i] != static_cast<int64_t>(i) * aMatrix || plan->bOffsets[i] != 0) {
      plan->foldBatch = false;
    }
  }
  return Status::ok();
}

void registerMatMulKernels(KernelRegistry& registry) {
  // Gemm before opset 11 requires C; 11 made it optional; 13 adds bfloat16.
  registry.add("Gemm", 1, 1000, &gemmKernel);
  registry.add("MatMul", 1, 1000, &matmulKernel);
  registry.add("MatMulInteger", 10, 1000, &matmulIntegerKernel);
  registry.add("QLinearMatMul", 10, 1000, &qlinearMatmulKernel);
  registry.add("Einsum", 12, 1000, &einsumKernel);
}

}  // namespace kiln::cpu
