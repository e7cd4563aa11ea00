// CUDA kernels for TopK, CumProd, Dropout (inference) and NonZero.
//
// Contract: the CPU kernels' opset ranges, attributes, defaults, error messages and
// results (cpu/ops/scan_ops.cpp, tensor_extra_ops.cpp, misc.cpp, selection_ops.cpp).
// - TopK orders (value, index) pairs like the CPU's TopKOrder: larger (or smaller)
//   first, NaN above every number, equal values by lower index, so results are
//   exact. A row of up to kBitonicMax elements is bitonic-sorted in shared memory by
//   one block; longer rows run k selection passes (each the best element ranking
//   after the previous one) when k <= kSelectMaxK, else the node moves to the host.
// - CumProd runs each [outer, inner] column sequentially like the CPU: float types
//   in double, integers in wrapping uint64.
// - Dropout is inference-only here (training_mode input present: host fallback):
//   a copy, with an all-true (opset < 10: all-one, x's type) mask.
// - NonZero counts per block, scans the counts, reads the total on the host (a
//   synchronizing copy; refused during graph capture), then writes coordinates in
//   row-major order. Non-zero is tested on the element bits (sign bit masked off for
//   floats, so -0 is zero and NaN is non-zero, as the CPU's float compare).
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/type_dispatch.cuh"
#include "backends/cuda/ops/op_common.cuh"
#include "ops/scalar_inputs.h"

namespace kiln::cuda {
namespace {

Status resolveAxis(const GpuKernelContext& ctx, int64_t axis, int64_t rank, const char* what,
                   int64_t* out) {
  if (axis < -rank || axis >= rank) {
    return ctx.error(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  *out = axis < 0 ? axis + rank : axis;
  return Status::ok();
}

template <class T>
constexpr bool kIsHalfLike = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// T's value in its compute type (float for the 16-bit floats).
template <class T>
__device__ __forceinline__ typename ComputeType<T>::type loadCompute(const T* p, int64_t i) {
  if constexpr (kIsHalfLike<T>)
    return toFloat(p[i]);
  else
    return p[i];
}

bool isTopKType(DataType t) {
  return isFloatData(t) || t == DataType::kInt8 || t == DataType::kUInt8 || t == DataType::kInt32 ||
         t == DataType::kInt64;
}

// ---- TopK -----------------------------------------------------------------------------

constexpr int64_t kBitonicMax = 4096;  // (4 or 8-byte key + int32 index) * 4096 <= 48 KiB
constexpr int64_t kSelectMaxK = 256;
constexpr int kSelectBlock = 256;

// a ranks before b (the CPU's TopKOrder). Index -1 marks padding, ranking last.
template <class C>
__device__ __forceinline__ bool ranksBefore(C va, int64_t ia, C vb, int64_t ib, bool largest) {
  if (ib < 0) return ia >= 0;
  if (ia < 0) return false;
  if constexpr (std::is_floating_point_v<C>) {
    const bool nanA = isnan(va), nanB = isnan(vb);
    if (nanA != nanB) return nanA == largest;
    if (nanA) return ia < ib;
  }
  if (va != vb) return largest ? va > vb : va < vb;
  return ia < ib;
}

// Bytes of the key array in shared memory; the int32 ids follow, 16-byte aligned.
__host__ __device__ __forceinline__ size_t keyBytes(int pad, size_t keySize) {
  return (static_cast<size_t>(pad) * keySize + 15) / 16 * 16;
}

// One block per row (grid-stride): sorts the row's `pad` (a power of two) slots in
// shared memory and writes the first k.
template <class T>
__global__ void topKBitonicKernel(const T* x, T* values, int64_t* indices, int64_t rows, int64_t n,
                                  int64_t inner, int64_t k, int pad, bool largest) {
  using C = typename ComputeType<T>::type;
  extern __shared__ __align__(16) unsigned char topKShared[];
  C* keys = reinterpret_cast<C*>(topKShared);
  int* ids = reinterpret_cast<int*>(topKShared + keyBytes(pad, sizeof(C)));
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t o = row / inner, i = row - o * inner;
    const int64_t in = o * n * inner + i;
    for (int j = threadIdx.x; j < pad; j += blockDim.x) {
      if (j < n) {
        keys[j] = loadCompute(x, in + j * inner);
        ids[j] = j;
      } else {
        ids[j] = -1;
      }
    }
    __syncthreads();
    for (int size = 2; size <= pad; size <<= 1) {
      for (int stride = size >> 1; stride > 0; stride >>= 1) {
        for (int t = threadIdx.x; t < pad / 2; t += blockDim.x) {
          const int a = 2 * t - (t & (stride - 1)), b = a + stride;
          const bool up = (a & size) == 0;  // this run ends in ranking order
          const bool bFirst = ranksBefore(keys[b], ids[b], keys[a], ids[a], largest);
          const bool aFirst = ranksBefore(keys[a], ids[a], keys[b], ids[b], largest);
          if (up ? bFirst : aFirst) {
            const C key = keys[a];
            keys[a] = keys[b];
            keys[b] = key;
            const int id = ids[a];
            ids[a] = ids[b];
            ids[b] = id;
          }
        }
        __syncthreads();
      }
    }
    const int64_t out = o * k * inner + i;
    for (int64_t j = threadIdx.x; j < k; j += blockDim.x) {
      values[out + j * inner] = x[in + int64_t(ids[j]) * inner];
      indices[out + j * inner] = ids[j];
    }
    __syncthreads();
  }
}

// One block per row (grid-stride): pass j finds the element ranking first among those
// ranking after pass j-1's.
template <class T>
__global__ void __launch_bounds__(kSelectBlock)
    topKSelectKernel(const T* x, T* values, int64_t* indices, int64_t rows, int64_t n,
                     int64_t inner, int64_t k, bool largest) {
  using C = typename ComputeType<T>::type;
  __shared__ C bestKeys[kSelectBlock];
  __shared__ int64_t bestIds[kSelectBlock];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t o = row / inner, i = row - o * inner;
    const int64_t in = o * n * inner + i, out = o * k * inner + i;
    C prevKey = C(0);
    int64_t prevId = -1;
    for (int64_t j = 0; j < k; ++j) {
      C key = C(0);
      int64_t id = -1;
      for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
        const C v = loadCompute(x, in + e * inner);
        if (prevId >= 0 && !ranksBefore(prevKey, prevId, v, e, largest)) continue;
        if (ranksBefore(v, e, key, id, largest)) {
          key = v;
          id = e;
        }
      }
      bestKeys[threadIdx.x] = key;
      bestIds[threadIdx.x] = id;
      __syncthreads();
      for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride &&
            ranksBefore(bestKeys[threadIdx.x + stride], bestIds[threadIdx.x + stride],
                        bestKeys[threadIdx.x], bestIds[threadIdx.x], largest)) {
          bestKeys[threadIdx.x] = bestKeys[threadIdx.x + stride];
          bestIds[threadIdx.x] = bestIds[threadIdx.x + stride];
        }
        __syncthreads();
      }
      prevKey = bestKeys[0];
      prevId = bestIds[0];
      if (threadIdx.x == 0) {
        values[out + j * inner] = x[in + prevId * inner];
        indices[out + j * inner] = prevId;
      }
      __syncthreads();
    }
  }
}

// Reads TopK's one-element K input (the CPU's readScalarInput).
Status readK(GpuKernelContext& ctx, int64_t* k) {
  KILN_ASSIGN_OR_RETURN(Tensor t, ctx.hostInput(1));
  if (t.type() != DataType::kInt64 && t.type() != DataType::kInt32) {
    return ctx.error(std::string("input 'K' must be int32 or int64, got ") +
                     dataTypeName(t.type()));
  }
  if (t.numel() != 1 || t.rank() > 1) {
    return ctx.error("input 'K' must hold one value, got shape " + shapeToString(t.shape()));
  }
  *k = t.valueAsInt64(0);
  return Status::ok();
}

int nextPowerOfTwo(int64_t n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

Status topKKernel(GpuKernelContext& ctx) {
  const bool kFromInput = ctx.opset() >= 10;  // opset 1 had a 'k' attribute
  KILN_RETURN_IF_ERROR(requireInputs(ctx, kFromInput ? 2 : 1));
  const DeviceTensor& x = ctx.input(0);
  int64_t axis = 0, k = ctx.node().attrInt("k", -1);
  KILN_RETURN_IF_ERROR(
      resolveAxis(ctx, ctx.node().attrInt("axis", -1), x.rank(), "attribute 'axis'", &axis));
  if (kFromInput) KILN_RETURN_IF_ERROR(readK(ctx, &k));
  int64_t outer = 1, inner = 1;
  const int64_t n = x.shape[axis];
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape[d];
  if (k < 0 || k > n) {
    return ctx.error("k = " + std::to_string(k) + " is outside [0, " + std::to_string(n) +
                     "] for axis " + std::to_string(axis) + " of " + shapeToString(x.shape));
  }
  // 'sorted' = 0 allows any order; sorted output satisfies that too.
  const bool largest = ctx.node().attrInt("largest", 1) != 0;
  if (n > kBitonicMax && k > kSelectMaxK) {
    return ctx.unsupported("TopK with k = " + std::to_string(k) + " of a row of " +
                           std::to_string(n) + " elements");
  }
  Shape outShape = x.shape;
  outShape[axis] = k;
  KILN_ASSIGN_OR_RETURN(DeviceTensor values, ctx.allocateOutput(0, x.type, outShape));
  KILN_ASSIGN_OR_RETURN(DeviceTensor indices, ctx.allocateOutput(1, DataType::kInt64, outShape));
  const int64_t rows = outer * inner;
  if (rows == 0 || k == 0) return Status::ok();
  cudaStream_t stream = ctx.stream();
  return dispatchDeviceType(
      ctx, x.type, device_types::kFloats | device_types::kByteAndIndexIntegers,
      [&](auto tag) -> Status {
        using T = decltype(tag);
        using C = typename ComputeType<T>::type;
        const T* src = x.as<const T>();
        if (n <= kBitonicMax) {
          const int pad = nextPowerOfTwo(n);
          const int threads = std::min(kBlockSize, std::max(32, pad / 2));
          const size_t shared = keyBytes(pad, sizeof(C)) + static_cast<size_t>(pad) * sizeof(int);
          topKBitonicKernel<T><<<gridFor(rows, 1), threads, shared, stream>>>(
              src, values.as<T>(), indices.as<int64_t>(), rows, n, inner, k, pad, largest);
          KILN_CUDA_CHECK_LAUNCH("topKBitonicKernel");
        } else {
          topKSelectKernel<T><<<gridFor(rows, 1), kSelectBlock, 0, stream>>>(
              src, values.as<T>(), indices.as<int64_t>(), rows, n, inner, k, largest);
          KILN_CUDA_CHECK_LAUNCH("topKSelectKernel");
        }
        return Status::ok();
      });
}

std::string supportsTopK(const Node& node, const std::vector<DataType>& types) {
  const DataType x = typeAt(types, 0);
  if (!isTopKType(x))
    return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(x);
  return "";
}

// ---- CumProd --------------------------------------------------------------------------

// [outer, n, inner]: one thread per column, sequential like the CPU.
template <class T>
__global__ void cumProdKernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner,
                              bool exclusive, bool reverse) {
  // Integers multiply in uint64_t: wrapping like the narrow type, as the CPU does.
  using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < outer * inner;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = idx / inner, i = idx - o * inner;
    const int64_t base = o * n * inner + i;
    Acc acc = Acc(1);
    for (int64_t step = 0; step < n; ++step) {
      const int64_t offset = base + (reverse ? n - 1 - step : step) * inner;
      const Acc v = static_cast<Acc>(loadCompute(x, offset));
      if (!exclusive) acc *= v;
      if constexpr (kIsHalfLike<T>)
        y[offset] = fromFloat<T>(static_cast<float>(acc));
      else
        y[offset] = static_cast<T>(acc);
      if (exclusive) acc *= v;
    }
  }
}

Status cumProdGpuKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& x = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(Tensor axisIn, ctx.hostInput(1));
  auto axisOr = ops::scalarAxisInput(axisIn, x.rank());
  if (!axisOr.isOk()) return ctx.error(axisOr.status().message());
  const int64_t axis = *axisOr;
  const bool exclusive = ctx.node().attrInt("exclusive", 0) != 0;
  const bool reverse = ctx.node().attrInt("reverse", 0) != 0;
  int64_t outer = 1, inner = 1, n = 1;
  if (x.rank() > 0) {
    n = x.shape[axis];
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape[d];
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (x.numel() == 0) return Status::ok();
  cudaStream_t stream = ctx.stream();
  return dispatchDeviceType(ctx, x.type, device_types::kFloats | device_types::kIntegers,
                            [&](auto tag) -> Status {
                              using T = decltype(tag);
                              cumProdKernel<T><<<gridFor(outer * inner), kBlockSize, 0, stream>>>(
                                  x.as<const T>(), y.as<T>(), outer, n, inner, exclusive, reverse);
                              KILN_CUDA_CHECK_LAUNCH("cumProdKernel");
                              return Status::ok();
                            });
}

std::string supportsCumProd(const Node& node, const std::vector<DataType>& types) {
  const DataType x = typeAt(types, 0);
  const bool ok = isFloatData(x) || (isInteger(x) && packedElementBits(x) == 0);
  if (!ok) return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(x);
  return "";
}

// ---- Dropout (inference) ---------------------------------------------------------------

template <class T>
__global__ void fillOnesKernel(T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = fromFloat<T>(1.0f);
}

// A one-element numeric input as double (the CPU's readScalarDouble).
Status readScalarDouble(GpuKernelContext& ctx, size_t index, const char* name, double* out) {
  KILN_ASSIGN_OR_RETURN(Tensor t, ctx.hostInput(index));
  auto value = ops::scalarNumber(t, name);
  if (!value.isOk()) return ctx.error(value.status().message());
  *out = *value;
  return Status::ok();
}

Status dropoutKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& x = ctx.input(0);
  double ratio = 0.5;
  bool training = false;
  if (ctx.opset() < 12) {
    ratio = ctx.node().attrFloat("ratio", 0.5f);
  } else {
    if (ctx.inputCount() > 1 && ctx.hasInput(1))
      KILN_RETURN_IF_ERROR(readScalarDouble(ctx, 1, "ratio", &ratio));
    if (ctx.inputCount() > 2 && ctx.hasInput(2)) {
      double flag = 0;
      KILN_RETURN_IF_ERROR(readScalarDouble(ctx, 2, "training_mode", &flag));
      training = flag != 0;
    }
  }
  if (!(ratio >= 0.0 && ratio <= 1.0)) {
    return ctx.error("ratio must be in [0, 1], got " + std::to_string(ratio));
  }
  if (training && ratio > 0.0) return ctx.unsupported("Dropout in training mode");
  if (!isFloatData(x.type)) {
    return ctx.unsupported(std::string("data type ") + dataTypeName(x.type));
  }
  cudaStream_t stream = ctx.stream();
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (x.numel() > 0 && y.data != x.data) {
    KILN_CUDA_CHECK(
        cudaMemcpyAsync(y.data, x.data, x.byteSize(), cudaMemcpyDeviceToDevice, stream));
  }
  if (ctx.outputCount() < 2 || !ctx.wantsOutput(1)) return Status::ok();
  // Opsets 7..9 typed the mask like the input; 10 made it bool.
  const DataType maskType = ctx.opset() < 10 ? x.type : DataType::kBool;
  KILN_ASSIGN_OR_RETURN(DeviceTensor mask, ctx.allocateOutput(1, maskType, x.shape));
  const int64_t n = x.numel();
  if (n == 0) return Status::ok();
  if (maskType == DataType::kBool) {
    KILN_CUDA_CHECK(cudaMemsetAsync(mask.data, 1, mask.byteSize(), stream));
    return Status::ok();
  }
  KILN_DISPATCH_FLOAT(maskType, ctx, {
    fillOnesKernel<T><<<gridFor(n), kBlockSize, 0, stream>>>(mask.as<T>(), n);
    KILN_CUDA_CHECK_LAUNCH("fillOnesKernel");
  });
  return Status::ok();
}

std::string supportsDropout(const Node& node, const std::vector<DataType>& types) {
  const DataType x = typeAt(types, 0);
  if (!isFloatData(x)) return std::string("no GPU kernel for Dropout on ") + dataTypeName(x);
  if (node.opset >= 12 && node.inputs.size() > 2 && !node.inputs[2].empty())
    return "Dropout with a training_mode input runs on the host";
  return "";
}

// ---- NonZero --------------------------------------------------------------------------

constexpr int kNonZeroMaxBlocks = 1024;
constexpr int64_t kNonZeroMinChunk = 4096;

struct NonZeroShape {
  int rank = 1;
  int64_t strides[kMaxRank] = {};  // packed strides of the (scalar -> [1]) input
};

// The bits that make an element non-zero: all of them, or all but a float's sign bit.
template <class T>
T nonZeroMask(bool isFloat) {
  const T all = static_cast<T>(~T(0));
  return isFloat ? static_cast<T>(all >> 1) : all;
}

template <class T>
__device__ __forceinline__ bool isNonZero(const T* x, int64_t i, T mask) {
  return (x[i] & mask) != 0;
}

template <class T>
__global__ void __launch_bounds__(kBlockSize)
    nonZeroCountKernel(const T* x, int64_t n, int64_t chunk, T mask, int64_t* counts) {
  __shared__ unsigned long long total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  const int64_t begin = blockIdx.x * chunk, end = min(n, begin + chunk);
  unsigned long long mine = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) mine += isNonZero(x, i, mask);
  atomicAdd(&total, mine);
  __syncthreads();
  if (threadIdx.x == 0) counts[blockIdx.x] = static_cast<int64_t>(total);
}

// One thread: counts[b] becomes block b's first output slot; counts[blocks] the total.
__global__ void nonZeroScanKernel(int64_t* counts, int blocks) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  int64_t sum = 0;
  for (int b = 0; b < blocks; ++b) {
    const int64_t c = counts[b];
    counts[b] = sum;
    sum += c;
  }
  counts[blocks] = sum;
}

// Block b writes the coordinates of its chunk's hits from slot offsets[b] on, in order.
template <class T>
__global__ void __launch_bounds__(kBlockSize)
    nonZeroWriteKernel(const T* x, int64_t n, int64_t chunk, T mask, const int64_t* offsets,
                       NonZeroShape shape, int64_t count, int64_t* out) {
  __shared__ int warpTotals[kBlockSize / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const int64_t begin = blockIdx.x * chunk, end = min(n, begin + chunk);
  int64_t slot = offsets[blockIdx.x];
  for (int64_t start = begin; start < end; start += blockDim.x) {
    const int64_t i = start + threadIdx.x;
    const bool hit = i < end && isNonZero(x, i, mask);
    const unsigned ballot = __ballot_sync(0xffffffffu, hit);
    if (lane == 0) warpTotals[warp] = __popc(ballot);
    __syncthreads();
    int before = 0, tileTotal = 0;
    for (int w = 0; w < warps; ++w) {
      if (w < warp) before += warpTotals[w];
      tileTotal += warpTotals[w];
    }
    if (hit) {
      const int64_t h = slot + before + __popc(ballot & ((1u << lane) - 1u));
      int64_t rest = i;
      for (int d = 0; d < shape.rank; ++d) {
        out[d * count + h] = rest / shape.strides[d];
        rest %= shape.strides[d];
      }
    }
    slot += tileTotal;
    __syncthreads();
  }
}

Status nonZeroKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& in = ctx.input(0);
  const Shape shape = in.rank() == 0 ? Shape{1} : in.shape;
  const int rank = static_cast<int>(shape.size());
  if (rank > kMaxRank) return ctx.unsupported("NonZero above rank 8");
  cudaStream_t stream = ctx.stream();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  KILN_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    return ctx.unsupported(
        "NonZero reads its output size on the host, which a CUDA graph cannot "
        "capture");
  }
  const int64_t n = in.numel();
  const DataType type = in.type;
  if (!(isFloatData(type) || type == DataType::kBool ||
        (isInteger(type) && packedElementBits(type) == 0))) {
    return ctx.unsupported(std::string("data type ") + dataTypeName(type));
  }
  int64_t count = 0;
  const int blocks = static_cast<int>(
      std::clamp<int64_t>((n + kNonZeroMinChunk - 1) / kNonZeroMinChunk, 1, kNonZeroMaxBlocks));
  const int64_t chunk = std::max<int64_t>((n + blocks - 1) / blocks, 1);
  int64_t* counts = nullptr;
  if (n > 0) {
    KILN_ASSIGN_OR_RETURN(void* workspace, ctx.workspace(sizeof(int64_t) * (blocks + 1)));
    counts = static_cast<int64_t*>(workspace);
  }
  // Floats: the sign bit does not make a value non-zero (-0 == 0); NaN bits stay.
  const bool isFloat = isFloatData(type);
  auto launchCount = [&](auto tag) -> Status {
    using T = decltype(tag);
    const T mask = nonZeroMask<T>(isFloat);
    nonZeroCountKernel<T>
        <<<blocks, kBlockSize, 0, stream>>>(in.as<const T>(), n, chunk, mask, counts);
    KILN_CUDA_CHECK_LAUNCH("nonZeroCountKernel");
    return Status::ok();
  };
  if (n > 0) {
    KILN_DISPATCH_BYTES(type, ctx, KILN_RETURN_IF_ERROR(launchCount(T{})));
    nonZeroScanKernel<<<1, 32, 0, stream>>>(counts, blocks);
    KILN_CUDA_CHECK_LAUNCH("nonZeroScanKernel");
    KILN_RETURN_IF_ERROR(ctx.hostRoundTrip("reads the non-zero count to size its output"));
    KILN_CUDA_CHECK(
        cudaMemcpyAsync(&count, counts + blocks, sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
    KILN_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, DataType::kInt64, {rank, count}));
  if (count == 0) return Status::ok();
  NonZeroShape info;
  info.rank = rank;
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    info.strides[d] = stride;
    stride *= shape[d];
  }
  auto launchWrite = [&](auto tag) -> Status {
    using T = decltype(tag);
    const T mask = nonZeroMask<T>(isFloat);
    nonZeroWriteKernel<T><<<blocks, kBlockSize, 0, stream>>>(
        in.as<const T>(), n, chunk, mask, counts, info, count, out.as<int64_t>());
    KILN_CUDA_CHECK_LAUNCH("nonZeroWriteKernel");
    return Status::ok();
  };
  KILN_DISPATCH_BYTES(type, ctx, KILN_RETURN_IF_ERROR(launchWrite(T{})));
  return Status::ok();
}

}  // namespace

void registerSelectionGpuKernels(GpuKernelRegistry& registry) {
  registry.add("TopK", 1, 1000, &topKKernel, &supportsTopK);  // branches on opset 10 (K input)
  registry.add("CumProd", 26, 1000, &cumProdGpuKernel, &supportsCumProd);
  registry.add("Dropout", 1, 1000, &dropoutKernel, &supportsDropout);
  registry.add("NonZero", 9, 1000, &nonZeroKernel, &supportsNumericTypes);
}

}  // namespace kiln::cuda
