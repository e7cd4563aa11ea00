// Kernels of the tensor generators (contract: generators_impl.h; the op contract and the
// host checks: generators.cpp). Trilu, ConstantOfShape, EyeLike and OneHot move elements
// as the unsigned integer of their size; Range computes in AccOf of its type.
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "backends/cuda/ops/generators_impl.h"
#include "backends/cuda/ops/op_common.cuh"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda {
namespace {

// Tensor::valueAsInt64 on the device: integers as they are, floats truncated
// (non-finite -> 0, saturating at +-9.2e18). Used for OneHot indices and Trilu's k.
__device__ __forceinline__ int64_t floatToInt64(double v) {
  if (!isfinite(v)) return 0;
  if (v >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}
// Reads the types of isDeviceIndexType (generators_impl.h).
__device__ int64_t loadAsInt64(const void* data, DataType type, int64_t i) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kInt4:
    case DataType::kInt2:
      return static_cast<const int8_t*>(data)[i];
    case DataType::kUInt8:
    case DataType::kUInt4:
    case DataType::kUInt2:
    case DataType::kBool:
      return static_cast<const uint8_t*>(data)[i];
    case DataType::kInt16:
      return static_cast<const int16_t*>(data)[i];
    case DataType::kUInt16:
      return static_cast<const uint16_t*>(data)[i];
    case DataType::kInt32:
      return static_cast<const int32_t*>(data)[i];
    case DataType::kUInt32:
      return static_cast<const uint32_t*>(data)[i];
    case DataType::kInt64:
      return static_cast<const int64_t*>(data)[i];
    case DataType::kUInt64:
      return static_cast<int64_t>(static_cast<const uint64_t*>(data)[i]);
    case DataType::kFloat32:
      return floatToInt64(static_cast<const float*>(data)[i]);
    case DataType::kFloat64:
      return floatToInt64(static_cast<const double*>(data)[i]);
    case DataType::kFloat16:
      return floatToInt64(__half2float(static_cast<const __half*>(data)[i]));
    case DataType::kBFloat16:
      return floatToInt64(__bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]));
    default:
      return 0;
  }
}

// One element of T from host bytes (the host's firstElementBits).
template <class T>
T elementBits(const void* bytes) {
  T v{};
  std::memcpy(&v, bytes, sizeof(T));
  return v;
}

// ================================================================== Trilu

// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of every matrix; k is
// read on the device (0 when absent).
template <class T>
__global__ void triluKernel(const T* in, T* out, int64_t rows, int64_t cols, const void* kData,
                            DataType kType, bool upper, int64_t total) {
  const int64_t k = kData ? loadAsInt64(kData, kType, 0) : 0;
  KILN_POOL_GRID_LOOP(e, total) {
    const int64_t j = e % cols;
    const int64_t i = (e / cols) % rows;
    const bool keep = upper ? j - i >= k : j - i <= k;
    out[e] = keep ? in[e] : T{};
  }
}

// ================================================================== Range

// RangeLaunch's compute types (the host half computes the count in the same ones).
static_assert(std::is_same_v<AccOf<float>, float> && std::is_same_v<AccOf<__half>, float> &&
              std::is_same_v<AccOf<__nv_bfloat16>, float> && std::is_same_v<AccOf<int8_t>, float> &&
              std::is_same_v<AccOf<uint8_t>, float> && std::is_same_v<AccOf<double>, double>);
static_assert(std::is_same_v<AccOf<int16_t>, int16_t> &&
              std::is_same_v<AccOf<uint16_t>, uint16_t> &&
              std::is_same_v<AccOf<int32_t>, int32_t> &&
              std::is_same_v<AccOf<uint32_t>, uint32_t> &&
              std::is_same_v<AccOf<int64_t>, int64_t> && std::is_same_v<AccOf<uint64_t>, uint64_t>);

// start + i * delta in the compute type, the product rounded on its own as on the host.
template <class T>
__device__ __forceinline__ T rangeValue(AccOf<T> start, AccOf<T> delta, int64_t i) {
  using C = AccOf<T>;
  if constexpr (std::is_same_v<C, float>) {
    return fromAcc<T>(start + __fmul_rn(static_cast<float>(i), delta));
  } else if constexpr (std::is_same_v<C, double>) {
    return start + __dmul_rn(static_cast<double>(i), delta);
  } else {
    return static_cast<T>(start + static_cast<C>(i) * delta);
  }
}

template <class T>
__global__ void rangeKernel(T* out, AccOf<T> start, AccOf<T> delta, int64_t total) {
  KILN_POOL_GRID_LOOP(i, total) {
    out[i] = rangeValue<T>(start, delta, i);
  }
}

// ================================================================== ConstantOfShape / EyeLike

template <class T>
__global__ void fillKernel(T* out, T value, int64_t total) {
  KILN_POOL_GRID_LOOP(i, total) {
    out[i] = value;
  }
}

template <class T>
__global__ void eyeLikeKernel(T* out, int64_t cols, int64_t k, T one, int64_t total) {
  KILN_POOL_GRID_LOOP(e, total) {
    const int64_t i = e / cols, j = e - i * cols;
    out[e] = j - i == k ? one : T{};
  }
}

// ================================================================== OneHot

// out[o, v, i] = on when the (normalized) index at [o, i] equals v, else off.
template <class T>
__global__ void oneHotKernel(const void* indices, DataType indexType, const T* values, T* out,
                             int64_t depth, int64_t inner, int64_t total) {
  const T off = values[0], on = values[1];
  KILN_POOL_GRID_LOOP(e, total) {
    const int64_t r = e / inner;
    const int64_t i = e - r * inner;
    const int64_t o = r / depth;
    const int64_t v = r - o * depth;
    int64_t index = loadAsInt64(indices, indexType, o * inner + i);
    if (index < 0) index += depth;
    out[e] = index == v ? on : off;
  }
}

}  // namespace

Status launchTrilu(const TriluLaunch& args, cudaStream_t stream) {
  return dispatchWord(args.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    triluKernel<T><<<gridFor(args.total), kBlockSize, 0, stream>>>(
        static_cast<const T*>(args.in), static_cast<T*>(args.out), args.rows, args.cols, args.k,
        args.kType, args.upper, args.total);
    KILN_CUDA_CHECK_LAUNCH("triluKernel");
    return Status::ok();
  });
}

Status launchRange(const RangeLaunch& args, cudaStream_t stream) {
  return dispatchDeviceType<kRangeTypes>(args.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {  // not in kRangeTypes: never called, no kernel
      return Status(StatusCode::kUnsupported, "Range of bool");
    } else {
      using C = AccOf<T>;
      C start, delta;
      if constexpr (std::is_floating_point_v<C>) {
        start = static_cast<C>(args.floatStart);
        delta = static_cast<C>(args.floatDelta);
      } else {
        start = static_cast<C>(args.intStart);
        delta = static_cast<C>(args.intDelta);
      }
      rangeKernel<T><<<gridFor(args.count), kBlockSize, 0, stream>>>(static_cast<T*>(args.out),
                                                                     start, delta, args.count);
      KILN_CUDA_CHECK_LAUNCH("rangeKernel");
      return Status::ok();
    }
  });
}

Status launchFill(void* out, DataType type, const void* value, int64_t total, cudaStream_t stream) {
  return dispatchWord(type, [&](auto tag) -> Status {
    using T = decltype(tag);
    fillKernel<T><<<gridFor(total), kBlockSize, 0, stream>>>(static_cast<T*>(out),
                                                             elementBits<T>(value), total);
    KILN_CUDA_CHECK_LAUNCH("fillKernel");
    return Status::ok();
  });
}

Status launchEyeLike(const EyeLikeLaunch& args, cudaStream_t stream) {
  return dispatchWord(args.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    eyeLikeKernel<T><<<gridFor(args.total), kBlockSize, 0, stream>>>(
        static_cast<T*>(args.out), args.cols, args.k, elementBits<T>(args.one), args.total);
    KILN_CUDA_CHECK_LAUNCH("eyeLikeKernel");
    return Status::ok();
  });
}

Status launchOneHot(const OneHotLaunch& args, cudaStream_t stream) {
  return dispatchWord(args.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    oneHotKernel<T><<<gridFor(args.total), kBlockSize, 0, stream>>>(
        args.indices, args.indexType, static_cast<const T*>(args.values), static_cast<T*>(args.out),
        args.depth, args.inner, args.total);
    KILN_CUDA_CHECK_LAUNCH("oneHotKernel");
    return Status::ok();
  });
}

}  // namespace kiln::cuda
