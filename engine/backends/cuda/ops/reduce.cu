// CUDA kernels for reductions along axes: the Reduce* family and Softmax/LogSoftmax/Hardmax
// here; ArgMax/ArgMin and CumSum in arg_cumsum.cu (helpers of both: reduce_common.cuh).
//
// Contract: the same opset ranges, attributes, defaults and error messages as the
// CPU kernels (cpu/ops/reduce.cpp, softmax.cpp, scan_ops.cpp). Float types
// accumulate in float (double for double), int32/int64 in int64 with wrap-around
// like the CPU. A reduction collapses the input into alternating runs of kept and
// reduced axes; one reduced run is read as [outer, n, inner] (a warp or block per
// row when inner == 1, a 32-wide tile of columns per block otherwise), several
// reduced runs go through a general kernel with one thread per output element.
// ReduceLogSumExp runs twice: the largest finite value per output, then the shifted
// sum of exponentials. Rows longer than kWarpRowLimit use a whole block per row.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/ops/reduce_common.cuh"
#include "ops/axis_params.h"
#include "ops/reduce_params.h"

namespace kiln::cuda {
namespace {

using namespace rd;

// ---- Reduce* ---------------------------------------------------------------------

// kMaxFinite and kSumExpShifted are the two passes of ReduceLogSumExp.
enum class ReduceOp : int {
  kSum,
  kMean,
  kMax,
  kMin,
  kProd,
  kL1,
  kL2,
  kLogSum,
  kLogSumExp,
  kSumSquare,
  kMaxFinite,
  kSumExpShifted
};

template <class T, class A>
__device__ __forceinline__ A reduceInit(ReduceOp op) {
  switch (op) {
    case ReduceOp::kProd:
      return A(1);
    case ReduceOp::kMax:
    case ReduceOp::kMaxFinite:
      if constexpr (std::is_integral_v<T>)
        return static_cast<A>(std::numeric_limits<T>::lowest());
      else
        return A(-INFINITY);
    case ReduceOp::kMin:
      if constexpr (std::is_integral_v<T>)
        return static_cast<A>(std::numeric_limits<T>::max());
      else
        return A(INFINITY);
    default:
      return A(0);
  }
}

// The value an input element contributes (|v|, v*v, ...).
template <class A>
__device__ __forceinline__ A reducePrepare(ReduceOp op, A v, A shift) {
  switch (op) {
    case ReduceOp::kL1:
      return v < A(0) ? A(0) - v : v;
    case ReduceOp::kL2:
    case ReduceOp::kSumSquare:
      return accMul(v, v);
    case ReduceOp::kMaxFinite:
      if constexpr (std::is_floating_point_v<A>)
        return isFiniteValue(v) ? v : A(-INFINITY);
      else
        return v;
    case ReduceOp::kSumExpShifted:
      if constexpr (std::is_floating_point_v<A>)
        return mathExp(v - shift);
      else
        return v;
    default:
      return v;
  }
}

// Folds two partial results. Max/Min keep a NaN once seen, as the CPU kernel does.
template <class A>
__device__ __forceinline__ A reduceCombine(ReduceOp op, A a, A b) {
  switch (op) {
    case ReduceOp::kProd:
      return accMul(a, b);
    case ReduceOp::kMax:
    case ReduceOp::kMaxFinite:
      return (b > a || b != b) ? b : a;
    case ReduceOp::kMin:
      return (b < a || b != b) ? b : a;
    default:
      return accAdd(a, b);
  }
}

template <class A>
__device__ __forceinline__ A reduceFinish(ReduceOp op, A a, int64_t count, A shift) {
  switch (op) {
    case ReduceOp::kMean:
      if constexpr (std::is_integral_v<A>)
        return count == 0 ? A(0) : a / A(count);
      else
        return a / A(count);  // an empty reduction gives 0/0 = NaN, as on the CPU
    case ReduceOp::kL2:
      if constexpr (std::is_floating_point_v<A>)
        return mathSqrt(a);
      else
        return a;
    case ReduceOp::kLogSum:
      if constexpr (std::is_floating_point_v<A>)
        return mathLog(a);
      else
        return a;
    case ReduceOp::kMaxFinite:
      return isFiniteValue(a) ? a : A(0);
    case ReduceOp::kSumExpShifted:
      if constexpr (std::is_floating_point_v<A>)
        return mathLog(a) + shift;
      else
        return a;
    default:
      return a;
  }
}

// Combines `a` across the threads of a warp; every lane gets the result.
template <class A>
__device__ __forceinline__ A warpCombine(ReduceOp op, A a) {
#pragma unroll
  for (int mask = 16; mask >= 1; mask >>= 1) a = reduceCombine(op, a, shuffleXor(a, mask));
  return a;
}

// Combines `a` across the row group; every thread gets the result. `partial`
// holds one value per warp (block mode only).
template <class A>
__device__ __forceinline__ A groupCombine(ReduceOp op, A a, bool warpMode, A* partial) {
  a = warpCombine(op, a);
  if (warpMode) return a;
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (threadIdx.x % 32 == 0) partial[warp] = a;
  __syncthreads();
  a = partial[0];
  for (int w = 1; w < warps; ++w) a = reduceCombine(op, a, partial[w]);
  __syncthreads();  // `partial` is reused by the next call
  return a;
}

// What a reduction reads and writes. The result goes to `y`, or as an accumulator
// to `accOut` (the first pass of LogSumExp). `shift` is per output (second pass).
template <class T>
struct ReduceIo {
  const T* x = nullptr;
  T* y = nullptr;
  Acc<T>* accOut = nullptr;
  const Acc<T>* shift = nullptr;
  ReduceOp op = ReduceOp::kSum;
  int64_t count = 1;  // input elements per output element
};

template <class T>
__device__ __forceinline__ Acc<T> outputShift(const ReduceIo<T>& io, int64_t o) {
  return io.shift ? io.shift[o] : Acc<T>(0);
}

template <class T>
__device__ __forceinline__ void writeReduced(const ReduceIo<T>& io, int64_t o, Acc<T> a,
                                             Acc<T> shift) {
  const Acc<T> r = reduceFinish(io.op, a, io.count, shift);
  if (io.accOut)
    io.accOut[o] = r;
  else
    io.y[o] = storeAs<T>(r);
}

// [rows, n] contiguous rows, one output per row.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    reduceRowsKernel(ReduceIo<T> io, int64_t rows, int64_t n, bool warpMode) {
  using A = Acc<T>;
  __shared__ A partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < rows; row += g.step) {
    const A shift = outputShift(io, row);
    const T* x = io.x + row * n;
    A a = reduceInit<T, A>(io.op);
    for (int64_t k = g.lane; k < n; k += g.size)
      a = reduceCombine(io.op, a, reducePrepare(io.op, loadAs<A>(x, k), shift));
    a = groupCombine(io.op, a, warpMode, partial);
    if (g.lane == 0) writeReduced(io, row, a, shift);
  }
}

// [outer, n, inner] with inner > 1: each block takes 32 adjacent columns of one
// outer slice; blockDim.y threads split the n elements of each column.
constexpr int kColumnTile = 32;
constexpr int kMaxColumnSplit = 16;
constexpr int kMaxColumnBlock = kColumnTile * kMaxColumnSplit;

template <class T>
__global__ void __launch_bounds__(kMaxColumnBlock)
    reduceColumnsKernel(ReduceIo<T> io, int64_t outer, int64_t n, int64_t inner) {
  using A = Acc<T>;
  __shared__ A partial[kMaxColumnSplit][kColumnTile];
  const int64_t tilesPerOuter = (inner + kColumnTile - 1) / kColumnTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t tile = blockIdx.x; tile < outer * tilesPerOuter; tile += gridDim.x) {
    const int64_t o = tile / tilesPerOuter;
    const int64_t i = (tile - o * tilesPerOuter) * kColumnTile + tx;
    const int64_t out = o * inner + i;
    A a = reduceInit<T, A>(io.op);
    A shift = A(0);
    if (i < inner) {
      shift = outputShift(io, out);
      const T* x = io.x + o * n * inner + i;
      for (int64_t k = ty; k < n; k += blockDim.y)
        a = reduceCombine(io.op, a, reducePrepare(io.op, loadAs<A>(x, k * inner), shift));
    }
    partial[ty][tx] = a;
    __syncthreads();
    if (ty == 0 && i < inner) {
      for (int r = 1; r < static_cast<int>(blockDim.y); ++r)
        a = reduceCombine(io.op, a, partial[r][tx]);
      writeReduced(io, out, a, shift);
    }
    __syncthreads();
  }
}

// Any set of reduced axes: one thread per output element walks its reduced elements.
template <class T>
__global__ void reduceGeneralKernel(ReduceIo<T> io, ShapeInfo kept, ShapeInfo reduced,
                                    int64_t outNumel) {
  using A = Acc<T>;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < outNumel;
       o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = stridedOffset(kept, o);
    const A shift = outputShift(io, o);
    A a = reduceInit<T, A>(io.op);
    for (int64_t r = 0; r < io.count; ++r) {
      const A v = loadAs<A>(io.x, base + stridedOffset(reduced, r));
      a = reduceCombine(io.op, a, reducePrepare(io.op, v, shift));
    }
    writeReduced(io, o, a, shift);
  }
}

// The input as runs of kept/reduced axes (size-1 axes dropped), as the CPU plans it.
struct ReducePlan {
  Shape outShape;  // keepdims applied
  std::vector<int64_t> dims;
  std::vector<bool> runReduced;
  int64_t outNumel = 1;
  int64_t count = 1;
};

ReducePlan makePlan(const Shape& in, const std::vector<bool>& reduced, bool keepDims) {
  ReducePlan plan;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) {
      plan.count *= in[d];
      if (keepDims) plan.outShape.push_back(1);
    } else {
      plan.outShape.push_back(in[d]);
      plan.outNumel *= in[d];
    }
    if (in[d] == 1) continue;
    if (!plan.runReduced.empty() && plan.runReduced.back() == reduced[d]) {
      plan.dims.back() *= in[d];
    } else {
      plan.dims.push_back(in[d]);
      plan.runReduced.push_back(reduced[d]);
    }
  }
  return plan;
}

// The axes to reduce (ops/reduce_params.h); input 1 copied to the host when given.
Status resolveReducedAxes(GpuKernelContext& ctx, bool axesFromInput, int rank,
                          std::vector<bool>* reduced) {
  Tensor axesInput;
  const bool given = axesFromInput && ctx.hasInput(1);
  if (given) {
    KILN_ASSIGN_OR_RETURN(axesInput, ctx.hostInput(1));
  }
  auto axes = ops::reducedAxes(ctx.node(), axesFromInput, rank, given ? &axesInput : nullptr);
  if (!axes.isOk()) return ctx.error(axes.status().message());
  *reduced = std::move(axes.value());
  return Status::ok();
}

// Launches one pass of a reduction over the collapsed plan.
template <class T>
Status launchReduce(GpuKernelContext& ctx, const ReducePlan& plan, const ReduceIo<T>& io) {
  cudaStream_t stream = ctx.stream();
  int reducedRuns = 0;
  size_t firstReduced = 0;
  for (size_t r = 0; r < plan.dims.size(); ++r) {
    if (!plan.runReduced[r]) continue;
    if (reducedRuns++ == 0) firstReduced = r;
  }
  if (reducedRuns >= 2) {
    ShapeInfo kept, reduced;
    int64_t keptStride = 1;
    std::vector<int64_t> strides(plan.dims.size());
    for (int r = static_cast<int>(plan.dims.size()) - 1; r >= 0; --r) {
      strides[r] = keptStride;
      keptStride *= plan.dims[r];
    }
    for (size_t r = 0; r < plan.dims.size(); ++r) {
      ShapeInfo& info = plan.runReduced[r] ? reduced : kept;
      if (info.rank == kMaxRank) return ctx.unsupported("too many alternating reduced axes");
      info.dims[info.rank] = plan.dims[r];
      info.strides[info.rank] = strides[r];
      ++info.rank;
    }
    reduceGeneralKernel<T>
        <<<gridFor(plan.outNumel), kBlockSize, 0, stream>>>(io, kept, reduced, plan.outNumel);
    KILN_CUDA_CHECK_LAUNCH("reduceGeneralKernel");
    return Status::ok();
  }
  // [outer, n, inner]; without a reduced run (noop or size-1 axes) n is 1.
  int64_t outer = 1, n = 1, inner = 1;
  for (size_t r = 0; r < plan.dims.size(); ++r) {
    if (reducedRuns == 0 || r > firstReduced)
      inner *= plan.dims[r];
    else if (r < firstReduced)
      outer *= plan.dims[r];
    else
      n = plan.dims[r];
  }
  if (inner == 1) {
    const RowGeometry g = rowGeometry(outer, n);
    reduceRowsKernel<T><<<g.grid, g.block, 0, stream>>>(io, outer, n, g.warpMode);
    KILN_CUDA_CHECK_LAUNCH("reduceRowsKernel");
    return Status::ok();
  }
  const int64_t tiles = outer * ((inner + kColumnTile - 1) / kColumnTile);
  int split = n >= 64 ? 8 : 1;
  if (n >= 1024 && tiles < 512) split = kMaxColumnSplit;
  const dim3 block(kColumnTile, split);
  reduceColumnsKernel<T><<<gridFor(tiles, 1), block, 0, stream>>>(io, outer, n, inner);
  KILN_CUDA_CHECK_LAUNCH("reduceColumnsKernel");
  return Status::ok();
}

template <class T>
Status reduceTyped(GpuKernelContext& ctx, ReduceOp op, const DeviceTensor& input,
                   const ReducePlan& plan, const DeviceTensor& output) {
  ReduceIo<T> io;
  io.x = input.as<const T>();
  io.y = output.as<T>();
  io.count = plan.count;
  if (op != ReduceOp::kLogSumExp) {
    io.op = op;
    return launchReduce<T>(ctx, plan, io);
  }
  // log(sum(exp(x - shift))) + shift, shift = the largest finite value per output.
  KILN_ASSIGN_OR_RETURN(void* scratch, ctx.workspace(plan.outNumel * sizeof(Acc<T>)));
  ReduceIo<T> first = io;
  first.op = ReduceOp::kMaxFinite;
  first.accOut = static_cast<Acc<T>*>(scratch);
  KILN_RETURN_IF_ERROR(launchReduce<T>(ctx, plan, first));
  io.op = ReduceOp::kSumExpShifted;
  io.shift = static_cast<const Acc<T>*>(scratch);
  return launchReduce<T>(ctx, plan, io);
}

const char* reduceName(ReduceOp op) {
  static const char* const kNames[] = {
      "ReduceSum", "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",
      "ReduceL1",  "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  return kNames[static_cast<int>(op)];
}

// Ops that also run on int32/int64 data.
bool reduceAcceptsIntegers(const std::string& opType) {
  return opType == "ReduceSum" || opType == "ReduceMean" || opType == "ReduceMax" ||
         opType == "ReduceMin" || opType == "ReduceProd";
}

Status runReduce(GpuKernelContext& ctx, ReduceOp op) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& input = ctx.input(0);
  // ReduceSum took axes as an input from opset 13, the others from opset 18.
  const bool axesFromInput = ctx.opset() >= (op == ReduceOp::kSum ? 13 : 18);
  std::vector<bool> reduced;
  KILN_RETURN_IF_ERROR(resolveReducedAxes(ctx, axesFromInput, input.rank(), &reduced));
  const bool keepDims = ctx.node().attrInt("keepdims", 1) != 0;
  const ReducePlan plan = makePlan(input.shape, reduced, keepDims);
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, input.type, plan.outShape));
  if (plan.outNumel == 0) return Status::ok();
  const bool integers = reduceAcceptsIntegers(reduceName(op));
  return dispatchDeviceType(ctx, input.type,
                            device_types::kFloats | (integers ? device_types::kIndexIntegers : 0u),
                            [&](auto tag) {
                              using T = decltype(tag);
                              return reduceTyped<T>(ctx, op, input, plan, out);
                            });
}

template <ReduceOp kOp>
Status reduceKernel(GpuKernelContext& ctx) {
  return runReduce(ctx, kOp);
}

std::string supportsReduce(const Node& node, const std::vector<DataType>& types) {
  const DataType x = types.empty() ? DataType::kUndefined : types[0];
  const bool integers = reduceAcceptsIntegers(node.opType);
  if (x != DataType::kUndefined && !isFloatData(x) && !(integers && isIndexType(x)))
    return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(x);
  if (types.size() > 1 && types[1] != DataType::kUndefined && !isIndexType(types[1]))
    return std::string("input 'axes' of type ") + dataTypeName(types[1]);
  return "";
}

// ---- Softmax / LogSoftmax / Hardmax -------------------------------------------------

enum class SoftmaxKind : int { kSoftmax, kLogSoftmax, kHardmax };

// One normalized row per group: max, then the sum of exp(x - max), then the output.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    softmaxRowsKernel(const T* x, T* y, int64_t rows, int64_t n, SoftmaxKind kind, bool warpMode) {
  using C = Acc<T>;
  __shared__ C partial[32];
  __shared__ ArgBest<C> argPartial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < rows; row += g.step) {
    const T* xr = x + row * n;
    T* yr = y + row * n;
    if (kind == SoftmaxKind::kHardmax) {  // the first maximum wins ties
      ArgBest<C> best{C(0), -1};
      for (int64_t k = g.lane; k < n; k += g.size)
        best = argFold(best, loadAs<C>(xr, k), k, true, false);
      best = groupArg(best, true, false, warpMode, argPartial);
      for (int64_t k = g.lane; k < n; k += g.size) yr[k] = storeAs<T>(C(k == best.idx ? 1 : 0));
      continue;
    }
    C maxValue = C(-INFINITY);
    for (int64_t k = g.lane; k < n; k += g.size)
      maxValue = reduceCombine(ReduceOp::kMax, maxValue, loadAs<C>(xr, k));
    maxValue = groupCombine(ReduceOp::kMax, maxValue, warpMode, partial);
    C sum = C(0);
    for (int64_t k = g.lane; k < n; k += g.size) sum += mathExp(loadAs<C>(xr, k) - maxValue);
    sum = groupCombine(ReduceOp::kSum, sum, warpMode, partial);
    if (kind == SoftmaxKind::kSoftmax) {
      const C scale = C(1) / sum;
      for (int64_t k = g.lane; k < n; k += g.size)
        yr[k] = storeAs<T>(mathExp(loadAs<C>(xr, k) - maxValue) * scale);
    } else {
      // (x - max) - log(sum): keeps the small log term when max is large.
      const C logSum = mathLog(sum);
      for (int64_t k = g.lane; k < n; k += g.size)
        yr[k] = storeAs<T>((loadAs<C>(xr, k) - maxValue) - logSum);
    }
  }
}

// [outer, n, inner], inner > 1: one thread per column of n elements `inner` apart.
template <class T>
__global__ void softmaxColumnsKernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner,
                                     SoftmaxKind kind) {
  using C = Acc<T>;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < outer * inner;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = idx / inner, i = idx - o * inner;
    const T* xc = x + o * n * inner + i;
    T* yc = y + o * n * inner + i;
    if (kind == SoftmaxKind::kHardmax) {
      int64_t best = 0;
      C bestValue = loadAs<C>(xc, 0);
      for (int64_t k = 1; k < n; ++k) {
        const C v = loadAs<C>(xc, k * inner);
        if (v > bestValue) {
          bestValue = v;
          best = k;
        }
      }
      for (int64_t k = 0; k < n; ++k) yc[k * inner] = storeAs<T>(C(k == best ? 1 : 0));
      continue;
    }
    C maxValue = C(-INFINITY);
    for (int64_t k = 0; k < n; ++k)
      maxValue = reduceCombine(ReduceOp::kMax, maxValue, loadAs<C>(xc, k * inner));
    C sum = C(0);
    for (int64_t k = 0; k < n; ++k) sum += mathExp(loadAs<C>(xc, k * inner) - maxValue);
    if (kind == SoftmaxKind::kSoftmax) {
      const C scale = C(1) / sum;
      for (int64_t k = 0; k < n; ++k)
        yc[k * inner] = storeAs<T>(mathExp(loadAs<C>(xc, k * inner) - maxValue) * scale);
    } else {
      const C logSum = mathLog(sum);
      for (int64_t k = 0; k < n; ++k)
        yc[k * inner] = storeAs<T>((loadAs<C>(xc, k * inner) - maxValue) - logSum);
    }
  }
}

template <SoftmaxKind kKind>
Status softmaxKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& input = ctx.input(0);
  const int64_t rank = input.rank();
  const bool coerce2d = ctx.opset() < 13;
  // Opset < 13 allows axis == rank (the 2-D form's column count is then 1).
  auto axisOr = ops::axisAttribute(ctx.node(), coerce2d ? 1 : -1, rank,
                                   std::max<int64_t>(coerce2d ? rank : rank - 1, 0));
  if (!axisOr.isOk()) return ctx.error(axisOr.status().message());
  const Shape& shape = input.shape;
  const ops::AxisSplit split = ops::splitAround(shape, *axisOr, coerce2d);
  const int64_t outer = split.outer, n = split.n, inner = split.inner;
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, input.type, shape));
  if (input.numel() == 0) return Status::ok();
  cudaStream_t stream = ctx.stream();
  KILN_DISPATCH_FLOAT(input.type, ctx, {
    const T* x = input.as<const T>();
    if (inner == 1) {
      const RowGeometry g = rowGeometry(outer, n);
      softmaxRowsKernel<T>
          <<<g.grid, g.block, 0, stream>>>(x, out.as<T>(), outer, n, kKind, g.warpMode);
      KILN_CUDA_CHECK_LAUNCH("softmaxRowsKernel");
    } else {
      softmaxColumnsKernel<T><<<gridFor(outer * inner), kBlockSize, 0, stream>>>(
          x, out.as<T>(), outer, n, inner, kKind);
      KILN_CUDA_CHECK_LAUNCH("softmaxColumnsKernel");
    }
  });
  return Status::ok();
}

std::string supportsFloatData(const Node& node, const std::vector<DataType>& types) {
  for (DataType t : types) {
    if (t != DataType::kUndefined && !isFloatData(t))
      return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(t);
  }
  return "";
}

}  // namespace

void registerReduceGpuKernels(GpuKernelRegistry& registry) {
  // Each reduce kernel picks the axes attribute or input by opset itself.
  registry.add("ReduceSum", 1, 1000, &reduceKernel<ReduceOp::kSum>, supportsReduce);
  registry.add("ReduceMean", 1, 1000, &reduceKernel<ReduceOp::kMean>, supportsReduce);
  registry.add("ReduceMax", 1, 1000, &reduceKernel<ReduceOp::kMax>, supportsReduce);
  registry.add("ReduceMin", 1, 1000, &reduceKernel<ReduceOp::kMin>, supportsReduce);
  registry.add("ReduceProd", 1, 1000, &reduceKernel<ReduceOp::kProd>, supportsReduce);
  registry.add("ReduceL1", 1, 1000, &reduceKernel<ReduceOp::kL1>, supportsReduce);
  registry.add("ReduceL2", 1, 1000, &reduceKernel<ReduceOp::kL2>, supportsReduce);
  registry.add("ReduceLogSum", 1, 1000, &reduceKernel<ReduceOp::kLogSum>, supportsReduce);
  registry.add("ReduceLogSumExp", 1, 1000, &reduceKernel<ReduceOp::kLogSumExp>, supportsReduce);
  registry.add("ReduceSumSquare", 1, 1000, &reduceKernel<ReduceOp::kSumSquare>, supportsReduce);
  // Each softmax kernel branches on opset 13 (2-D coercion before, single axis after).
  registry.add("Softmax", 1, 1000, &softmaxKernel<SoftmaxKind::kSoftmax>, supportsFloatData);
  registry.add("LogSoftmax", 1, 1000, &softmaxKernel<SoftmaxKind::kLogSoftmax>, supportsFloatData);
  registry.add("Hardmax", 1, 1000, &softmaxKernel<SoftmaxKind::kHardmax>, supportsFloatData);
  registerArgCumSumGpuKernels(registry);
}

}  // namespace kiln::cuda
