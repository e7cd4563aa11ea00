// Kernels of TopK, CumProd, Dropout (inference) and NonZero (contract: selection_impl.h;
// the op contract and the host checks: selection.cpp).
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/selection_impl.h"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda {
namespace {

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

// ---- TopK -----------------------------------------------------------------------------

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

int nextPowerOfTwo(int64_t n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
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

// ---- Dropout (inference) ---------------------------------------------------------------

template <class T>
__global__ void fillOnesKernel(T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = fromFloat<T>(1.0f);
}

// ---- NonZero --------------------------------------------------------------------------

// The unsigned integer of T's size: NonZero tests an element's bits.
template <size_t Bytes>
struct BitsOfSize;
template <>
struct BitsOfSize<1> {
  using type = uint8_t;
};
template <>
struct BitsOfSize<2> {
  using type = uint16_t;
};
template <>
struct BitsOfSize<4> {
  using type = uint32_t;
};
template <>
struct BitsOfSize<8> {
  using type = uint64_t;
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

}  // namespace

Status launchTopK(const TopKLaunch& args, cudaStream_t stream) {
  const int64_t rows = args.rows, n = args.n, inner = args.inner, k = args.k;
  const bool largest = args.largest;
  int64_t* indices = args.indices;
  return dispatchDeviceType<kTopKTypes>(args.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    using C = typename ComputeType<T>::type;
    const T* src = static_cast<const T*>(args.x);
    T* values = static_cast<T*>(args.values);
    if (n <= kTopKBitonicMax) {
      const int pad = nextPowerOfTwo(n);
      const int threads = std::min(kBlockSize, std::max(32, pad / 2));
      const size_t shared = keyBytes(pad, sizeof(C)) + static_cast<size_t>(pad) * sizeof(int);
      topKBitonicKernel<T><<<gridFor(rows, 1), threads, shared, stream>>>(
          src, values, indices, rows, n, inner, k, pad, largest);
      KILN_CUDA_CHECK_LAUNCH("topKBitonicKernel");
    } else {
      topKSelectKernel<T><<<gridFor(rows, 1), kSelectBlock, 0, stream>>>(src, values, indices, rows,
                                                                         n, inner, k, largest);
      KILN_CUDA_CHECK_LAUNCH("topKSelectKernel");
    }
    return Status::ok();
  });
}

Status launchCumProd(const CumProdLaunch& args, cudaStream_t stream) {
  return dispatchDeviceType<kCumProdTypes>(args.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    cumProdKernel<T><<<gridFor(args.outer * args.inner), kBlockSize, 0, stream>>>(
        static_cast<const T*>(args.x), static_cast<T*>(args.y), args.outer, args.n, args.inner,
        args.exclusive, args.reverse);
    KILN_CUDA_CHECK_LAUNCH("cumProdKernel");
    return Status::ok();
  });
}

Status launchFillOnes(void* y, DataType type, int64_t n, cudaStream_t stream) {
  return dispatchDeviceType<device_types::kFloats>(type, [&](auto tag) -> Status {
    using T = decltype(tag);
    // Called with the float types only: no kernel for the others.
    if constexpr (std::is_floating_point_v<T> || kIsHalfLike<T>) {
      fillOnesKernel<T><<<gridFor(n), kBlockSize, 0, stream>>>(static_cast<T*>(y), n);
      KILN_CUDA_CHECK_LAUNCH("fillOnesKernel");
      return Status::ok();
    } else {
      return Status(StatusCode::kUnsupported, std::string("data type ") + dataTypeName(type));
    }
  });
}

Status launchNonZeroCount(const NonZeroLaunch& args, cudaStream_t stream) {
  auto launchCount = [&](auto tag) -> Status {
    using T = typename BitsOfSize<sizeof(decltype(tag))>::type;
    const T mask = nonZeroMask<T>(args.isFloat);
    nonZeroCountKernel<T><<<args.blocks, kBlockSize, 0, stream>>>(
        static_cast<const T*>(args.x), args.n, args.chunk, mask, args.counts);
    KILN_CUDA_CHECK_LAUNCH("nonZeroCountKernel");
    return Status::ok();
  };
  KILN_RETURN_IF_ERROR(dispatchDeviceType<kNonZeroTypes>(args.type, launchCount));
  nonZeroScanKernel<<<1, 32, 0, stream>>>(args.counts, args.blocks);
  KILN_CUDA_CHECK_LAUNCH("nonZeroScanKernel");
  return Status::ok();
}

Status launchNonZeroWrite(const NonZeroLaunch& args, const NonZeroShape& shape, int64_t count,
                          int64_t* out, cudaStream_t stream) {
  return dispatchDeviceType<kNonZeroTypes>(args.type, [&](auto tag) -> Status {
    using T = typename BitsOfSize<sizeof(decltype(tag))>::type;
    const T mask = nonZeroMask<T>(args.isFloat);
    nonZeroWriteKernel<T><<<args.blocks, kBlockSize, 0, stream>>>(
        static_cast<const T*>(args.x), args.n, args.chunk, mask, args.counts, shape, count, out);
    KILN_CUDA_CHECK_LAUNCH("nonZeroWriteKernel");
    return Status::ok();
  });
}

}  // namespace kiln::cuda
