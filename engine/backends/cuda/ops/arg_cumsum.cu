// ArgMax / ArgMin and CumSum on the CUDA backend, with the CPU kernels' opset ranges,
// attributes, defaults and error messages (cpu/ops/reduce.cpp, scan_ops.cpp); the family's
// contract is reduce.cu's header comment.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/ops/reduce_common.cuh"
#include "ops/axis_params.h"

namespace kiln::cuda {
namespace {

using namespace rd;

// ---- ArgMax / ArgMin ---------------------------------------------------------------

// [rows, n] contiguous rows.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    argRowsKernel(const T* x, int64_t* y, int64_t rows, int64_t n, bool isMax, bool last,
                  bool warpMode) {
  using A = Acc<T>;
  __shared__ ArgBest<A> partial[32];
  const RowGroup g = rowGroup(warpMode);
  for (int64_t row = g.first; row < rows; row += g.step) {
    const T* xr = x + row * n;
    ArgBest<A> best{A(0), -1};
    for (int64_t k = g.lane; k < n; k += g.size)
      best = argFold(best, loadAs<A>(xr, k), k, isMax, last);
    best = groupArg(best, isMax, last, warpMode, partial);
    if (g.lane == 0) y[row] = best.idx;
  }
}

// [outer, n, inner], inner > 1: the CPU's sequential scan, one thread per column.
template <class T>
__global__ void argColumnsKernel(const T* x, int64_t* y, int64_t outer, int64_t n, int64_t inner,
                                 bool isMax, bool last) {
  using A = Acc<T>;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < outer * inner;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = idx / inner, i = idx - o * inner;
    const T* column = x + o * n * inner + i;
    A best = loadAs<A>(column, 0);
    int64_t bestIndex = 0;
    for (int64_t k = 1; k < n; ++k) {
      const A v = loadAs<A>(column, k * inner);
      const bool better = isMax ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
      if (better) {
        best = v;
        bestIndex = k;
      }
    }
    y[idx] = bestIndex;
  }
}

template <bool kMax>
Status argKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& input = ctx.input(0);
  const int64_t rank = input.rank();
  auto axisOr = ops::axisAttribute(ctx.node(), 0, rank, std::max<int64_t>(rank - 1, 0));
  if (!axisOr.isOk()) return ctx.error(axisOr.status().message());
  const int64_t axis = *axisOr;
  const bool keepDims = ctx.node().attrInt("keepdims", 1) != 0;
  const bool last = ctx.node().attrInt("select_last_index", 0) != 0;
  const Shape& shape = input.shape;
  const ops::AxisSplit split = ops::splitAround(shape, axis);
  const int64_t outer = split.outer, n = split.n, inner = split.inner;
  const Shape outShape = ops::shapeWithoutAxis(shape, axis, keepDims);
  if (n == 0 && outer * inner > 0) return ctx.error("cannot take the arg of an empty axis");
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, DataType::kInt64, outShape));
  if (outer * inner == 0) return Status::ok();
  cudaStream_t stream = ctx.stream();
  return dispatchDeviceType(ctx, input.type, device_types::kFloats | device_types::kIndexIntegers,
                            [&](auto tag) -> Status {
                              using T = decltype(tag);
                              const T* x = input.as<const T>();
                              if (inner == 1) {
                                const RowGeometry g = rowGeometry(outer, n);
                                argRowsKernel<T><<<g.grid, g.block, 0, stream>>>(
                                    x, out.as<int64_t>(), outer, n, kMax, last, g.warpMode);
                                KILN_CUDA_CHECK_LAUNCH("argRowsKernel");
                              } else {
                                argColumnsKernel<T>
                                    <<<gridFor(outer * inner), kBlockSize, 0, stream>>>(
                                        x, out.as<int64_t>(), outer, n, inner, kMax, last);
                                KILN_CUDA_CHECK_LAUNCH("argColumnsKernel");
                              }
                              return Status::ok();
                            });
}

std::string supportsFloatOrIndex(const Node& node, const std::vector<DataType>& types) {
  for (DataType t : types) {
    if (t != DataType::kUndefined && !isFloatData(t) && !isIndexType(t))
      return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(t);
  }
  return "";
}

// ---- CumSum -------------------------------------------------------------------------

// [rows, n] contiguous rows, a block per row: the row is scanned in chunks of
// blockDim.x elements (warp scans, then warp totals), carrying the running sum.
template <class T>
__global__ void __launch_bounds__(kBlockSize)
    cumSumRowsKernel(const T* x, T* y, int64_t rows, int64_t n, bool exclusive, bool reverse) {
  using A = Acc<T>;
  __shared__ A warpTotals[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * n;
    T* yr = y + row * n;
    A carry = A(0);
    for (int64_t start = 0; start < n; start += blockDim.x) {
      const int64_t step = start + threadIdx.x;
      const int64_t k = reverse ? n - 1 - step : step;
      const A v = step < n ? loadAs<A>(xr, k) : A(0);
      A inclusive = v;  // within the warp
#pragma unroll
      for (int delta = 1; delta < 32; delta <<= 1) {
        const A other = shuffleUp(inclusive, delta);
        if (lane >= delta) inclusive = accAdd(inclusive, other);
      }
      const A previous = shuffleUp(inclusive, 1);
      if (lane == 31) warpTotals[warp] = inclusive;
      __syncthreads();
      A offset = carry;
      A chunkTotal = carry;
      for (int w = 0; w < warps; ++w) {
        if (w < warp) offset = accAdd(offset, warpTotals[w]);
        chunkTotal = accAdd(chunkTotal, warpTotals[w]);
      }
      if (step < n) {
        const A result =
            exclusive ? (lane == 0 ? offset : accAdd(offset, previous)) : accAdd(offset, inclusive);
        yr[k] = storeAs<T>(result);
      }
      carry = chunkTotal;
      __syncthreads();
    }
  }
}

// [outer, n, inner], inner > 1: one thread per column, sequential like the CPU.
template <class T>
__global__ void cumSumColumnsKernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner,
                                    bool exclusive, bool reverse) {
  using A = Acc<T>;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < outer * inner;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = idx / inner, i = idx - o * inner;
    const int64_t base = o * n * inner + i;
    A acc = A(0);
    for (int64_t step = 0; step < n; ++step) {
      const int64_t offset = base + (reverse ? n - 1 - step : step) * inner;
      const A v = loadAs<A>(x, offset);
      if (!exclusive) acc = accAdd(acc, v);
      y[offset] = storeAs<T>(acc);
      if (exclusive) acc = accAdd(acc, v);
    }
  }
}

Status cumSumKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& input = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(Tensor axisTensor, ctx.hostInput(1));
  if (axisTensor.type() != DataType::kInt64 && axisTensor.type() != DataType::kInt32) {
    return ctx.error(std::string("input 'axis' must be int32 or int64, got ") +
                     dataTypeName(axisTensor.type()));
  }
  if (axisTensor.numel() != 1 || axisTensor.rank() > 1) {
    return ctx.error("input 'axis' must hold one value, got shape " +
                     shapeToString(axisTensor.shape()));
  }
  const int64_t rank = input.rank();
  const int64_t axisValue = axisTensor.valueAsInt64(0);
  if (axisValue < -rank || axisValue >= rank) {
    return ctx.error("input 'axis' " + std::to_string(axisValue) + " is out of range for rank " +
                     std::to_string(rank));
  }
  const int64_t axis = axisValue < 0 ? axisValue + rank : axisValue;
  const bool exclusive = ctx.node().attrInt("exclusive", 0) != 0;
  const bool reverse = ctx.node().attrInt("reverse", 0) != 0;
  int64_t outer = 1, inner = 1;
  const int64_t n = input.shape[axis];
  for (int64_t d = 0; d < axis; ++d) outer *= input.shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= input.shape[d];
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, input.type, input.shape));
  if (input.numel() == 0) return Status::ok();
  cudaStream_t stream = ctx.stream();
  return dispatchDeviceType(ctx, input.type, device_types::kFloats | device_types::kIndexIntegers,
                            [&](auto tag) -> Status {
                              using T = decltype(tag);
                              const T* x = input.as<const T>();
                              if (inner == 1 && n > 32) {
                                cumSumRowsKernel<T><<<gridFor(outer, 1), kBlockSize, 0, stream>>>(
                                    x, out.as<T>(), outer, n, exclusive, reverse);
                                KILN_CUDA_CHECK_LAUNCH("cumSumRowsKernel");
                              } else {
                                cumSumColumnsKernel<T>
                                    <<<gridFor(outer * inner), kBlockSize, 0, stream>>>(
                                        x, out.as<T>(), outer, n, inner, exclusive, reverse);
                                KILN_CUDA_CHECK_LAUNCH("cumSumColumnsKernel");
                              }
                              return Status::ok();
                            });
}

}  // namespace

void registerArgCumSumGpuKernels(GpuKernelRegistry& registry) {
  registry.add("ArgMax", 1, 1000, &argKernel<true>, supportsFloatOrIndex);
  registry.add("ArgMin", 1, 1000, &argKernel<false>, supportsFloatOrIndex);
  registry.add("CumSum", 11, 1000, &cumSumKernel, supportsFloatOrIndex);
}

}  // namespace kiln::cuda
