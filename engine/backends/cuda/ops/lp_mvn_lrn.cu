// LpNormalization, MeanVarianceNormalization and LRN on the CUDA backend, with the CPU
// kernels' opset ranges, attributes, defaults and error messages; the family's contract is
// normalization.cu's header comment.
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/ops/normalization_common.cuh"

namespace kiln::cuda {
namespace {

using namespace nm;

// ---- LpNormalization -----------------------------------------------------------

template <class C>
__device__ __forceinline__ C lpTerm(C v, int p) {
  return p == 1 ? (v < C(0) ? -v : v) : v * v;
}

// A zero vector stays zero rather than becoming 0/0 = NaN.
template <class C>
__device__ __forceinline__ C lpScale(C accumulated, int p) {
  const C norm = p == 2 ? mathSqrt(accumulated) : accumulated;
  return norm == C(0) ? C(0) : C(1) / norm;
}

// [rows, n] contiguous rows.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    lpNormRowsKernel(const T* x, T* y, int64_t rows, int64_t n, int p, bool warpMode) {
  using C = Compute<T>;
  __shared__ C partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < rows; row += g.step) {
    const T* xr = x + row * n;
    T* yr = y + row * n;
    C sum = C(0);
    for (int64_t k = g.lane; k < n; k += g.size) sum += lpTerm(loadAs<C>(xr, k), p);
    const C scale = lpScale(groupSum(sum, warpMode, partial), p);
    for (int64_t k = g.lane; k < n; k += g.size) yr[k] = storeAs<T>(loadAs<C>(xr, k) * scale);
  }
}

// [outer, n, inner], inner > 1: one thread per column of n elements `inner` apart.
template <class T>
__global__ void lpNormColumnsKernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner,
                                    int p) {
  using C = Compute<T>;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < outer * inner;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = idx / inner, i = idx - o * inner;
    const int64_t base = o * n * inner + i;
    C sum = C(0);
    for (int64_t k = 0; k < n; ++k) sum += lpTerm(loadAs<C>(x, base + k * inner), p);
    const C scale = lpScale(sum, p);
    for (int64_t k = 0; k < n; ++k)
      y[base + k * inner] = storeAs<T>(loadAs<C>(x, base + k * inner) * scale);
  }
}

std::string supportsLpNorm(const Node& node, const std::vector<DataType>& types) {
  const int64_t p = node.attrInt("p", 2);
  if (p != 1 && p != 2) return "attribute 'p' must be 1 or 2";
  return supportsSameFloatType(node, types);
}

Status lpNormKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  auto axisOr = ops::axisAttribute(ctx.node(), -1, rank, rank - 1);
  if (!axisOr.isOk()) return ctx.error(axisOr.status().message());
  const int64_t p = ctx.node().attrInt("p", 2);
  if (p != 1 && p != 2)
    return ctx.unsupported("attribute 'p' must be 1 or 2, got " + std::to_string(p));
  const ops::AxisSplit split = ops::splitAround(x.shape, *axisOr);
  const int64_t outer = split.outer, inner = split.inner, n = split.n;
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (x.numel() == 0) return Status::ok();
  KILN_DISPATCH_FLOAT(x.type, ctx, {
    if (inner == 1) {
      const RowGeometry geo = rowGeometry(outer, n);
      lpNormRowsKernel<T><<<geo.grid, geo.block, 0, ctx.stream()>>>(
          x.as<const T>(), y.as<T>(), outer, n, static_cast<int>(p), geo.warpMode);
      KILN_CUDA_CHECK_LAUNCH("lpNormRowsKernel");
    } else {
      lpNormColumnsKernel<T><<<gridFor(outer * inner), kBlockSize, 0, ctx.stream()>>>(
          x.as<const T>(), y.as<T>(), outer, n, inner, static_cast<int>(p));
      KILN_CUDA_CHECK_LAUNCH("lpNormColumnsKernel");
    }
  });
  return Status::ok();
}

// ---- MeanVarianceNormalization -------------------------------------------------

// One row group per statistics element: its `count` elements sit at
// stridedOffset(kept, row) + stridedOffset(reduced, r). Y = (X - mean) /
// (sqrt(variance) + 1e-9), or X - mean without normalizeVariance.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    mvnRows(const T* x, T* y, ShapeInfo kept, ShapeInfo reduced, int64_t rows, int64_t count,
            bool normalizeVariance, bool warpMode) {
  using C = Compute<T>;
  __shared__ C partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < rows; row += g.step) {
    const int64_t base = stridedOffset(kept, row);
    C sum = C(0);
    for (int64_t r = g.lane; r < count; r += g.size)
      sum += loadAs<C>(x, base + stridedOffset(reduced, r));
    const C mean = groupSum(sum, warpMode, partial) / C(count);
    C squares = C(0);
    for (int64_t r = g.lane; r < count; r += g.size) {
      const C d = loadAs<C>(x, base + stridedOffset(reduced, r)) - mean;
      squares += d * d;
    }
    squares = groupSum(squares, warpMode, partial);
    const C scale = normalizeVariance ? C(1) / (mathSqrt(squares / C(count)) + C(1e-9)) : C(1);
    for (int64_t r = g.lane; r < count; r += g.size) {
      const int64_t offset = base + stridedOffset(reduced, r);
      y[offset] = storeAs<T>((loadAs<C>(x, offset) - mean) * scale);
    }
  }
}

Status mvnKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& x = ctx.input(0);
  const int rank = x.rank();
  auto params = ops::mvnParams(ctx.node(), ctx.opset(), rank);
  if (!params.isOk()) return ctx.error(params.status().message());
  const std::vector<bool>& reduced = params->reduced;
  const bool normalizeVariance = params->normalizeVariance;
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (x.numel() == 0) return Status::ok();
  // Kept and reduced axes as runs (size-1 axes dropped) with the input's strides.
  ShapeInfo kept, red;
  int64_t rows = 1, count = 1, stride = 1;
  bool lastReduced = false;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t size = x.shape[d];
    const bool r = reduced[d];
    (r ? count : rows) *= size;
    if (size != 1) {
      ShapeInfo& info = r ? red : kept;
      if (info.rank > 0 && lastReduced == r && info.strides[0] * info.dims[0] == stride) {
        info.dims[0] *= size;  // extends the run just added (same kind, adjacent)
      } else {
        if (info.rank == kMaxRank) return ctx.unsupported("too many alternating reduced axes");
        for (int i = info.rank; i > 0; --i) {  // runs are prepended: outermost first
          info.dims[i] = info.dims[i - 1];
          info.strides[i] = info.strides[i - 1];
        }
        info.dims[0] = size;
        info.strides[0] = stride;
        ++info.rank;
      }
      lastReduced = r;
    }
    stride *= size;
  }
  const RowGeometry geo = rowGeometry(rows, count);
  KILN_DISPATCH_FLOAT(x.type, ctx, {
    mvnRows<T><<<geo.grid, geo.block, 0, ctx.stream()>>>(
        x.as<const T>(), y.as<T>(), kept, red, rows, count, normalizeVariance, geo.warpMode);
    KILN_CUDA_CHECK_LAUNCH("mvnRows");
  });
  return Status::ok();
}

// ---- LRN -----------------------------------------------------------------------

// y = x / (bias + alpha / size * sum of x^2 over channels [c - lo, c + hi])^beta
// with lo = floor((size - 1) / 2), hi = ceil((size - 1) / 2), clipped to [0, C).
struct LrnArgs {
  int64_t numel = 0, channels = 1, spatial = 1, size = 1;
  double alpha = 1e-4, beta = 0.75, bias = 1.0;
};

template <class T>
__global__ void lrnApply(const T* x, T* y, LrnArgs args) {
  using C = Compute<T>;
  const int64_t lo = (args.size - 1) / 2;
  const int64_t hi = args.size - 1 - lo;
  const C alphaOverSize = C(args.alpha / static_cast<double>(args.size));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < args.numel;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = i % args.spatial;
    const int64_t c = (i / args.spatial) % args.channels;
    const int64_t batchBase = i - s - c * args.spatial;
    const int64_t first = c - lo < 0 ? 0 : c - lo;
    const int64_t last = c + hi > args.channels - 1 ? args.channels - 1 : c + hi;
    C sum = C(0);
    for (int64_t k = first; k <= last; ++k) {
      const C v = loadAs<C>(x, batchBase + k * args.spatial + s);
      sum += v * v;
    }
    y[i] = storeAs<T>(loadAs<C>(x, i) / mathPow(C(args.bias) + alphaOverSize * sum, C(args.beta)));
  }
}

Status lrnKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& x = ctx.input(0);
  if (x.rank() < 2)
    return ctx.error("input 'X' must have rank >= 2, got " + shapeToString(x.shape));
  LrnArgs args;
  args.size = ctx.node().attrInt("size", 0);
  if (args.size <= 0)
    return ctx.error("attribute 'size' must be positive, got " + std::to_string(args.size));
  args.alpha = ctx.node().attrFloat("alpha", 1e-4f);
  args.beta = ctx.node().attrFloat("beta", 0.75f);
  args.bias = ctx.node().attrFloat("bias", 1.0f);
  args.channels = x.shape[1];
  for (int d = 2; d < x.rank(); ++d) args.spatial *= x.shape[d];
  args.numel = x.numel();
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (args.numel == 0) return Status::ok();
  KILN_DISPATCH_FLOAT(x.type, ctx, {
    lrnApply<T>
        <<<gridFor(args.numel), kBlockSize, 0, ctx.stream()>>>(x.as<const T>(), y.as<T>(), args);
    KILN_CUDA_CHECK_LAUNCH("lrnApply");
  });
  return Status::ok();
}

}  // namespace

void registerLpMvnLrnGpuKernels(GpuKernelRegistry& registry) {
  registry.add("LpNormalization", 1, 1000, &lpNormKernel, supportsLpNorm);
  registry.add("MeanVarianceNormalization", 1, 1000, &mvnKernel, supportsSameFloatType);
  registry.add("LRN", 1, 1000, &lrnKernel, supportsSameFloatType);
}

}  // namespace kiln::cuda
