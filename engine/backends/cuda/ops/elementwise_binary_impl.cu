// Kernels of the binary elementwise ops (contract: elementwise_binary_impl.h; host half:
// elementwise_binary.cpp): arithmetic, comparisons, logic, BitShift, Mod, PRelu, SwiGLU with
// numpy broadcasting, and Pow with an exponent of another numeric type. The family's
// contract is elementwise_impl.cu's header comment.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/ops/elementwise_binary_impl.h"
#include "backends/cuda/ops/elementwise_common.cuh"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda {
namespace {

using namespace ew;

// ---- Binary ops.

template <class C>
__device__ __forceinline__ bool compare(BinaryOp op, C x, C y) {
  switch (op) {
    case BinaryOp::kLess:
      return x < y;
    case BinaryOp::kLessOrEqual:
      return x <= y;
    case BinaryOp::kGreater:
      return x > y;
    case BinaryOp::kGreaterOrEqual:
      return x >= y;
    default:
      return x == y;
  }
}

// C is float or double.
template <class C>
__device__ __forceinline__ C floatBinary(const BinaryParams& p, C x, C y) {
  switch (p.op) {
    case BinaryOp::kAdd:
      return x + y;
    case BinaryOp::kSub:
      return x - y;
    case BinaryOp::kMul:
      return x * y;
    case BinaryOp::kDiv:
      return x / y;
    case BinaryOp::kFmod:
      return mFmod(x, y);
    case BinaryOp::kMod: {
      C r = mFmod(x, y);
      if (r != C(0) && ((r < C(0)) != (y < C(0)))) r = r + y;
      return r;
    }
    case BinaryOp::kPRelu:
      return x < C(0) ? x * y : x;
    case BinaryOp::kSwiGlu:
      return x / (C(1) + mExp(-C(p.alpha) * x)) * y;
    default:
      return x;
  }
}

// C is an integer type. Arithmetic wraps; zero divisors give 0 (see the file comment).
template <class C>
__device__ __forceinline__ C integerBinary(const BinaryParams& p, C x, C y) {
  using W = WrapType<C>;
  switch (p.op) {
    case BinaryOp::kAdd:
      return static_cast<C>(W(x) + W(y));
    case BinaryOp::kSub:
      return static_cast<C>(W(x) - W(y));
    case BinaryOp::kMul:
      return static_cast<C>(W(x) * W(y));
    case BinaryOp::kDiv:
      if (y == C(0)) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (y == C(-1)) return negate(x);  // INT_MIN / -1 wraps
      }
      return static_cast<C>(x / y);
    case BinaryOp::kMod:
    case BinaryOp::kFmod: {
      if (y == C(0)) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (y == C(-1)) return C(0);
      }
      C r = static_cast<C>(x % y);
      if constexpr (std::is_signed_v<C>) {
        if (p.op == BinaryOp::kMod && r != C(0) && ((r < C(0)) != (y < C(0))))
          r = static_cast<C>(r + y);
      }
      return r;
    }
    case BinaryOp::kBitAnd:
      return static_cast<C>(x & y);
    case BinaryOp::kBitOr:
      return static_cast<C>(x | y);
    case BinaryOp::kBitXor:
      return static_cast<C>(x ^ y);
    case BinaryOp::kShiftLeft:
    case BinaryOp::kShiftRight: {
      // Shifts outside [0, width): left gives 0, right the sign fill.
      const bool left = p.op == BinaryOp::kShiftLeft;
      bool outside = y >= static_cast<C>(sizeof(C) * 8);
      C fill = C(0);
      if constexpr (std::is_signed_v<C>) {
        outside = outside || y < C(0);
        fill = x < C(0) ? C(-1) : C(0);
      }
      if (outside) return left ? C(0) : fill;
      using U = std::make_unsigned_t<C>;
      if (left) return static_cast<C>(static_cast<U>(static_cast<U>(x) << y));
      return static_cast<C>(x >> y);
    }
    case BinaryOp::kPRelu:
      if constexpr (std::is_signed_v<C>) {
        if (x < C(0)) return static_cast<C>(W(x) * W(y));
      }
      return x;
    default:
      return x;
  }
}

template <class C>
__device__ __forceinline__ C combine(const BinaryParams& p, C x, C y) {
  if constexpr (std::is_same_v<C, bool>) {
    // And, Or, Xor.
    if (p.op == BinaryOp::kBitAnd) return x && y;
    if (p.op == BinaryOp::kBitOr) return x || y;
    return x != y;
  } else if constexpr (std::is_floating_point_v<C>) {
    return floatBinary(p, x, y);
  } else {
    return integerBinary(p, x, y);
  }
}

// Loads the pack of elements starting at i of an operand (one wide access when it is
// contiguous; i is a multiple of the pack width).
template <class T>
__device__ __forceinline__ Pack<T> loadPack(const T* p, const Operand& o, int64_t i) {
  constexpr int W = kPackWidth<T>;
  if (o.mode == kContiguous) return reinterpret_cast<const Pack<T>*>(p)[i / W];
  Pack<T> r;
  if (o.mode == kScalar) {
#pragma unroll
    for (int j = 0; j < W; ++j) r.v[j] = p[0];
  } else if (o.packRows) {
    const int64_t base = operandIndex(o, i);
#pragma unroll
    for (int j = 0; j < W; ++j) r.v[j] = p[base + j * o.innerStride];
  } else {
#pragma unroll
    for (int j = 0; j < W; ++j) r.v[j] = p[operandIndex(o, i + j)];
  }
  return r;
}

template <class T>
__global__ void binaryKernel(const T* a, const T* b, void* out, int64_t n, BinaryParams p,
                             Operand oa, Operand ob, bool packed) {
  using C = Compute<T>;
  if constexpr (kFloatLike<T>) {
    if (packed && !p.boolOut) {
      T* y = static_cast<T*>(out);
      constexpr int W = kPackWidth<T>;
      const int64_t packs = n / W;
      KILN_FOR_EACH_INDEX(v, packs) {
        const int64_t i = v * W;
        const Pack<T> x = loadPack(a, oa, i);
        const Pack<T> z = loadPack(b, ob, i);
        Pack<T> r;
#pragma unroll
        for (int j = 0; j < W; ++j) store(r.v, j, combine<C>(p, load(x.v, j), load(z.v, j)));
        reinterpret_cast<Pack<T>*>(y)[v] = r;
      }
      for (int64_t i = packs * W + blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
           i += int64_t(gridDim.x) * blockDim.x)
        store(y, i, combine<C>(p, load(a, operandIndex(oa, i)), load(b, operandIndex(ob, i))));
      return;
    }
  }
  if (p.boolOut) {
    bool* y = static_cast<bool*>(out);
    KILN_FOR_EACH_INDEX(i, n) {
      y[i] = compare<C>(p.op, load(a, operandIndex(oa, i)), load(b, operandIndex(ob, i)));
    }
  } else {
    T* y = static_cast<T*>(out);
    KILN_FOR_EACH_INDEX(i, n) {
      store(y, i, combine<C>(p, load(a, operandIndex(oa, i)), load(b, operandIndex(ob, i))));
    }
  }
}

// Both operands and the output contiguous, aligned and whole packs (a residual Add of two
// same-shaped activations): kContiguousUnroll packs a thread, every load issued before the
// first combine, none of the general kernel's operand index paths. SwinV2-T's residual Adds
// at batch 128 on an H200: 1.298 -> 0.809 ms (stage 1's, 302 MB moved: ~2.5 -> ~3.9 TB/s).
constexpr int kContiguousUnroll = 2;

template <class T>
__global__ void __launch_bounds__(kBlockSize)
    binaryContiguousKernel(const Pack<T>* a, const Pack<T>* b, Pack<T>* y, int64_t packs,
                           BinaryParams p) {
  using C = Compute<T>;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t v = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; v < packs;
       v += kContiguousUnroll * stride) {
    Pack<T> x[kContiguousUnroll], z[kContiguousUnroll];
#pragma unroll
    for (int u = 0; u < kContiguousUnroll; ++u) {
      if (v + u * stride < packs) {
        x[u] = a[v + u * stride];
        z[u] = b[v + u * stride];
      }
    }
#pragma unroll
    for (int u = 0; u < kContiguousUnroll; ++u) {
      if (v + u * stride >= packs) continue;
      Pack<T> r;
#pragma unroll
      for (int j = 0; j < kPackWidth<T>; ++j)
        store(r.v, j, combine<C>(p, load(x[u].v, j), load(z[u].v, j)));
      y[v + u * stride] = r;
    }
  }
}

// ---- Pow.

__device__ __forceinline__ int64_t loadAsInt64(const void* p, DataType type, int64_t i) {
  switch (type) {
    case DataType::kInt8:
      return static_cast<const int8_t*>(p)[i];
    case DataType::kUInt8:
      return static_cast<const uint8_t*>(p)[i];
    case DataType::kInt16:
      return static_cast<const int16_t*>(p)[i];
    case DataType::kUInt16:
      return static_cast<const uint16_t*>(p)[i];
    case DataType::kInt32:
      return static_cast<const int32_t*>(p)[i];
    case DataType::kUInt32:
      return static_cast<const uint32_t*>(p)[i];
    case DataType::kUInt64:
      return static_cast<int64_t>(static_cast<const uint64_t*>(p)[i]);
    default:
      return static_cast<const int64_t*>(p)[i];
  }
}

__device__ __forceinline__ double loadAsDouble(const void* p, DataType type, int64_t i) {
  switch (type) {
    case DataType::kFloat16:
      return toFloat(static_cast<const __half*>(p)[i]);
    case DataType::kBFloat16:
      return toFloat(static_cast<const __nv_bfloat16*>(p)[i]);
    case DataType::kFloat64:
      return static_cast<const double*>(p)[i];
    default:
      return static_cast<const float*>(p)[i];
  }
}

// Integer powers by squaring, wrapping like numpy; negative exponents truncate 1/x^n.
template <class C>
__device__ __forceinline__ C integerPow(C base, int64_t exponent) {
  if (exponent < 0) {
    if (base == C(1)) return C(1);
    if constexpr (std::is_signed_v<C>) {
      if (base == C(-1)) return (exponent & 1) ? C(-1) : C(1);
    }
    return C(0);
  }
  using W = WrapType<C>;
  W result = 1;
  W factor = static_cast<W>(base);
  for (uint64_t e = static_cast<uint64_t>(exponent); e != 0; e >>= 1) {
    if (e & 1) result = static_cast<W>(result * factor);
    factor = static_cast<W>(factor * factor);
  }
  return static_cast<C>(result);
}

template <class T>
__global__ void powKernel(const T* a, const void* b, DataType bType, T* out, int64_t n,
                          PowMode mode, Operand oa, Operand ob) {
  using C = Compute<T>;
  KILN_FOR_EACH_INDEX(i, n) {
    const C x = load(a, operandIndex(oa, i));
    const int64_t j = operandIndex(ob, i);
    if constexpr (std::is_floating_point_v<C>) {
      if (mode == PowMode::kSameFloat) {
        const C y = load(static_cast<const T*>(b), j);
        store(out, i, y == C(2) ? x * x : mPow(x, y));
      } else {
        const double e = mode == PowMode::kIntExponent
                             ? static_cast<double>(loadAsInt64(b, bType, j))
                             : loadAsDouble(b, bType, j);
        store(out, i, static_cast<C>(pow(static_cast<double>(x), e)));
      }
    } else if constexpr (kIntegerLike<C>) {
      if (mode == PowMode::kIntExponent) {
        out[i] = integerPow(x, loadAsInt64(b, bType, j));
      } else {
        out[i] = truncateToInteger<C>(pow(static_cast<double>(x), loadAsDouble(b, bType, j)));
      }
    }
  }
}
}  // namespace

namespace ew {

Status launchBinary(const BinaryLaunch& launch, cudaStream_t stream) {
  KILN_RETURN_IF_ERROR(dispatchDeviceType<kElementwiseDeviceTypes>(launch.type, [&](auto tag) {
    using T = decltype(tag);
    const Operand* operands = launch.operands;
    const int64_t n = launch.n;
    // Contiguous operands and the output move four elements per access when aligned.
    const bool packed =
        packAligned<T>({launch.out, operands[0].mode == kContiguous ? launch.a : nullptr,
                        operands[1].mode == kContiguous ? launch.b : nullptr});
    const int64_t work = packed ? (n + kPackWidth<T> - 1) / kPackWidth<T> : n;
    if constexpr (kFloatLike<T>) {
      if (packed && !launch.params.boolOut && operands[0].mode == kContiguous &&
          operands[1].mode == kContiguous && n % kPackWidth<T> == 0) {
        binaryContiguousKernel<T><<<gridFor((work + kContiguousUnroll - 1) / kContiguousUnroll),
                                    kBlockSize, 0, stream>>>(
            static_cast<const Pack<T>*>(launch.a), static_cast<const Pack<T>*>(launch.b),
            static_cast<Pack<T>*>(launch.out), work, launch.params);
        return Status::ok();
      }
    }
    binaryKernel<T><<<gridFor(work), kBlockSize, 0, stream>>>(
        static_cast<const T*>(launch.a), static_cast<const T*>(launch.b), launch.out, n,
        launch.params, operands[0], operands[1], packed);
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("binaryKernel");
  return Status::ok();
}

Status launchPow(const PowLaunch& launch, cudaStream_t stream) {
  return dispatchDeviceType<kElementwiseDeviceTypes>(launch.aType, [&](auto tag) {
    using T = decltype(tag);
    // elementwise_binary.cpp refuses a bool base first; no Pow kernel for bool.
    if constexpr (std::is_same_v<T, bool>) {
      return Status(StatusCode::kUnsupported, "Pow of bool");
    } else {
      const int64_t n = launch.n;
      powKernel<T><<<gridFor(n), kBlockSize, 0, stream>>>(
          static_cast<const T*>(launch.a), launch.b, launch.bType, static_cast<T*>(launch.out), n,
          launch.mode, launch.operands[0], launch.operands[1]);
      KILN_CUDA_CHECK_LAUNCH("powKernel");
      return Status::ok();
    }
  });
}

}  // namespace ew
}  // namespace kiln::cuda
