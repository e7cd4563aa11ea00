// Kernels of the variadic Sum / Mean / Max / Min, Where and the conversions Cast and
// CastLike (contract: elementwise_nary_cast_impl.h; host half: elementwise_nary_cast.cpp).
// The family's contract is elementwise_impl.cu's header comment.
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "backends/cuda/ops/elementwise_common.cuh"
#include "backends/cuda/ops/elementwise_nary_cast_impl.h"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda {
namespace {

using namespace ew;

// ---- Variadic Sum, Mean, Max, Min.

template <class T>
struct VariadicArgs {
  const T* data[kMaxVariadic];
  Operand operands[kMaxVariadic];
  int count = 0;
  VariadicOp op = VariadicOp::kSum;
  int meanDivisor = 0;  // > 0: divide the result by this (Mean's last launch)
};

// Max and Min propagate NaN from either side, as numpy's maximum/minimum do.
template <class C>
__device__ __forceinline__ C fold(VariadicOp op, C x, C y) {
  switch (op) {
    case VariadicOp::kMax:
      return ((x >= y) | isNan(x)) ? x : y;
    case VariadicOp::kMin:
      return ((x <= y) | isNan(x)) ? x : y;
    default:
      if constexpr (std::is_floating_point_v<C>) return x + y;
      return x;  // Sum and Mean take floats only
  }
}

template <class T>
__global__ void variadicKernel(VariadicArgs<T> args, T* out, int64_t n) {
  using C = Compute<T>;
  KILN_FOR_EACH_INDEX(i, n) {
    C acc = load(args.data[0], operandIndex(args.operands[0], i));
    for (int k = 1; k < args.count; ++k) {
      acc = fold(args.op, acc, load(args.data[k], operandIndex(args.operands[k], i)));
    }
    if constexpr (std::is_floating_point_v<C>) {
      if (args.meanDivisor > 0) acc = acc / static_cast<C>(args.meanDivisor);
    }
    store(out, i, acc);
  }
}

// ---- Where.

template <class T>
__global__ void whereKernel(const bool* cond, const T* x, const T* y, T* out, int64_t n, Operand oc,
                            Operand ox, Operand oy) {
  KILN_FOR_EACH_INDEX(i, n) {
    out[i] = cond[operandIndex(oc, i)] ? x[operandIndex(ox, i)] : y[operandIndex(oy, i)];
  }
}

// ---- Cast and CastLike.

// double -> float rounding to odd, so that a second rounding to half or bfloat16 is exact
// (the CPU's toFloatRoundOdd).
__device__ __forceinline__ float toFloatRoundOdd(double d) {
  float f = __double2float_rn(d);
  if (static_cast<double>(f) == d || d != d) return f;
  if ((__float_as_uint(f) & 1u) == 0) f = nextafterf(f, d > f ? INFINITY : -INFINITY);
  return f;
}

// One element with ONNX Cast semantics, from the compute type CF of the source.
template <class To, class CF>
__device__ __forceinline__ To convertValue(CF x) {
  if constexpr (std::is_same_v<To, bool>) {
    return x != CF(0);
  } else if constexpr (kIntegerLike<To> && std::is_floating_point_v<CF>) {
    return truncateToInteger<To>(static_cast<double>(x));
  } else if constexpr (kHalfLike<To>) {
    if constexpr (std::is_same_v<CF, float>)
      return fromFloat<To>(x);
    else
      return fromFloat<To>(toFloatRoundOdd(static_cast<double>(x)));
  } else {
    return static_cast<To>(x);
  }
}

template <class To, class CF>
__device__ __forceinline__ void storeConverted(void* dst, int64_t i, CF x) {
  static_cast<To*>(dst)[i] = convertValue<To>(x);
}

template <class From>
__global__ void castKernel(const From* src, void* dst, DataType to, int64_t n) {
  KILN_FOR_EACH_INDEX(i, n) {
    const Compute<From> x = load(src, i);
    switch (to) {
      case DataType::kFloat32:
        storeConverted<float>(dst, i, x);
        break;
      case DataType::kFloat16:
        storeConverted<__half>(dst, i, x);
        break;
      case DataType::kBFloat16:
        storeConverted<__nv_bfloat16>(dst, i, x);
        break;
      case DataType::kFloat64:
        storeConverted<double>(dst, i, x);
        break;
      case DataType::kInt8:
        storeConverted<int8_t>(dst, i, x);
        break;
      case DataType::kUInt8:
        storeConverted<uint8_t>(dst, i, x);
        break;
      case DataType::kInt16:
        storeConverted<int16_t>(dst, i, x);
        break;
      case DataType::kUInt16:
        storeConverted<uint16_t>(dst, i, x);
        break;
      case DataType::kInt32:
        storeConverted<int32_t>(dst, i, x);
        break;
      case DataType::kUInt32:
        storeConverted<uint32_t>(dst, i, x);
        break;
      case DataType::kInt64:
        storeConverted<int64_t>(dst, i, x);
        break;
      case DataType::kUInt64:
        storeConverted<uint64_t>(dst, i, x);
        break;
      default:
        storeConverted<bool>(dst, i, x);
        break;
    }
  }
}
}  // namespace

namespace ew {

Status launchVariadic(const VariadicLaunch& launch, cudaStream_t stream) {
  return dispatchDeviceType<kElementwiseDeviceTypes>(launch.type, [&](auto tag) {
    using T = decltype(tag);
    // elementwise_nary_cast.cpp refuses bool inputs first; no variadic kernel for bool.
    if constexpr (std::is_same_v<T, bool>) {
      return Status(StatusCode::kUnsupported, "bool inputs");
    } else {
      VariadicArgs<T> args;
      for (int k = 0; k < kMaxVariadic; ++k) {
        args.data[k] = static_cast<const T*>(launch.data[k]);
        args.operands[k] = launch.operands[k];
      }
      args.count = launch.count;
      args.op = launch.op;
      args.meanDivisor = launch.meanDivisor;
      const int64_t n = launch.n;
      variadicKernel<T>
          <<<gridFor(n), kBlockSize, 0, stream>>>(args, static_cast<T*>(launch.out), n);
      KILN_CUDA_CHECK_LAUNCH("variadicKernel");
      return Status::ok();
    }
  });
}

Status launchWhere(const WhereLaunch& launch, cudaStream_t stream) {
  const auto run = [&](auto tag) {
    using T = decltype(tag);
    whereKernel<T><<<gridFor(launch.n), kBlockSize, 0, stream>>>(
        static_cast<const bool*>(launch.cond), static_cast<const T*>(launch.x),
        static_cast<const T*>(launch.y), static_cast<T*>(launch.out), launch.n, launch.operands[0],
        launch.operands[1], launch.operands[2]);
  };
  switch (dataTypeSize(launch.type)) {
    case 1:
      run(uint8_t{});
      break;
    case 2:
      run(uint16_t{});
      break;
    case 4:
      run(uint32_t{});
      break;
    case 8:
      run(uint64_t{});
      break;
    default:
      return Status(StatusCode::kUnsupported,
                    std::string("data type ") + dataTypeName(launch.type));
  }
  KILN_CUDA_CHECK_LAUNCH("whereKernel");
  return Status::ok();
}

Status launchCast(const CastLaunch& launch, cudaStream_t stream) {
  KILN_RETURN_IF_ERROR(dispatchDeviceType<kElementwiseDeviceTypes>(launch.from, [&](auto tag) {
    using T = decltype(tag);
    castKernel<T><<<gridFor(launch.n), kBlockSize, 0, stream>>>(static_cast<const T*>(launch.src),
                                                                launch.dst, launch.to, launch.n);
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("castKernel");
  return Status::ok();
}

}  // namespace ew
}  // namespace kiln::cuda
