// Binary elementwise kernels of the CUDA backend (arithmetic, comparisons, logic, BitShift,
// Mod, PRelu, SwiGLU) with numpy broadcasting, and Pow with an exponent of another numeric
// type; the family's contract is elementwise.cu's header comment.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/ops/elementwise_common.cuh"

namespace kiln::cuda {
namespace {

using namespace ew;

// ---- Binary ops.

enum class BinaryOp : int {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,   // fmod = 0: the result takes the divisor's sign
  kFmod,  // fmod = 1: the dividend's
  kBitAnd,
  kBitOr,
  kBitXor,
  kShiftLeft,
  kShiftRight,
  kEqual,
  kLess,
  kLessOrEqual,
  kGreater,
  kGreaterOrEqual,
  kPRelu,
  kSwiGlu,
};

struct BinaryParams {
  BinaryOp op = BinaryOp::kAdd;
  bool boolOut = false;  // comparisons
  float alpha = 1.f;     // SwiGLU
};

bool isComparison(BinaryOp op) {
  return op == BinaryOp::kEqual || op == BinaryOp::kLess || op == BinaryOp::kLessOrEqual ||
         op == BinaryOp::kGreater || op == BinaryOp::kGreaterOrEqual;
}

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

// Checks two same-typed inputs from `allowed` and computes their broadcast shape.
Status prepareBinary(GpuKernelContext& ctx, TypeSet allowed, Shape* shape) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& b = ctx.input(1);
  KILN_RETURN_IF_ERROR(checkType(ctx, "input A", a.type, allowed));
  if (a.type != b.type) {
    return ctx.error(std::string("inputs A and B differ in type (") + dataTypeName(a.type) +
                     " vs " + dataTypeName(b.type) + ")");
  }
  return broadcastPair(ctx, a.shape, b.shape, shape);
}

// out = op(a, b) over `shape` (already checked), written as T or bool.
Status launchBinary(GpuKernelContext& ctx, const BinaryParams& params, const Shape& shape) {
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& b = ctx.input(1);
  KILN_ASSIGN_OR_RETURN(DeviceTensor out,
                        ctx.allocateOutput(0, params.boolOut ? DataType::kBool : a.type, shape));
  const int64_t n = shapeNumel(shape);
  if (n == 0) return Status::ok();
  Operand operands[2];
  KILN_RETURN_IF_ERROR(planOperands(ctx, shape, {&a.shape, &b.shape}, operands));
  KILN_DISPATCH_NUMERIC(a.type, ctx, {
    // Contiguous operands and the output move four elements per access when aligned.
    const bool packed =
        packAligned<T>({out.data, operands[0].mode == kContiguous ? a.data : nullptr,
                        operands[1].mode == kContiguous ? b.data : nullptr});
    const int64_t work = packed ? (n + kPackWidth<T> - 1) / kPackWidth<T> : n;
    binaryKernel<T><<<gridFor(work), kBlockSize, 0, ctx.stream()>>>(
        a.as<T>(), b.as<T>(), out.data, n, params, operands[0], operands[1], packed);
  });
  KILN_CUDA_CHECK_LAUNCH("binaryKernel");
  return Status::ok();
}

Status binary(GpuKernelContext& ctx, BinaryOp op, TypeSet set) {
  Shape shape;
  KILN_RETURN_IF_ERROR(prepareBinary(ctx, set, &shape));
  BinaryParams params;
  params.op = op;
  params.boolOut = isComparison(op);
  return launchBinary(ctx, params, shape);
}

#define KILN_BINARY_KERNEL(fnName, op, set)         \
  Status fnName(GpuKernelContext& ctx) {            \
    return binary(ctx, BinaryOp::op, TypeSet::set); \
  }
KILN_BINARY_KERNEL(addKernel, kAdd, kNumeric)
KILN_BINARY_KERNEL(subKernel, kSub, kNumeric)
KILN_BINARY_KERNEL(mulKernel, kMul, kNumeric)
KILN_BINARY_KERNEL(divKernel, kDiv, kNumeric)
KILN_BINARY_KERNEL(andKernel, kBitAnd, kBool)
KILN_BINARY_KERNEL(orKernel, kBitOr, kBool)
KILN_BINARY_KERNEL(xorKernel, kBitXor, kBool)
KILN_BINARY_KERNEL(bitwiseAndKernel, kBitAnd, kInteger)
KILN_BINARY_KERNEL(bitwiseOrKernel, kBitOr, kInteger)
KILN_BINARY_KERNEL(bitwiseXorKernel, kBitXor, kInteger)
KILN_BINARY_KERNEL(equalKernel, kEqual, kAll)
KILN_BINARY_KERNEL(lessKernel, kLess, kNumeric)
KILN_BINARY_KERNEL(lessOrEqualKernel, kLessOrEqual, kNumeric)
KILN_BINARY_KERNEL(greaterKernel, kGreater, kNumeric)
KILN_BINARY_KERNEL(greaterOrEqualKernel, kGreaterOrEqual, kNumeric)
#undef KILN_BINARY_KERNEL

Status modKernel(GpuKernelContext& ctx) {
  const int64_t fmod = ctx.node().attrInt("fmod", 0);
  if (fmod != 0 && fmod != 1) return ctx.error("attribute fmod must be 0 or 1");
  return binary(ctx, fmod ? BinaryOp::kFmod : BinaryOp::kMod, TypeSet::kNumeric);
}

Status bitShiftKernel(GpuKernelContext& ctx) {
  const std::string direction = ctx.node().attrString("direction", "");
  if (direction == "LEFT") return binary(ctx, BinaryOp::kShiftLeft, TypeSet::kInteger);
  if (direction == "RIGHT") return binary(ctx, BinaryOp::kShiftRight, TypeSet::kInteger);
  return ctx.error("attribute direction must be LEFT or RIGHT, got '" + direction + "'");
}

// PRelu: y = x < 0 ? slope * x : x, with slope broadcast to X's shape (never the reverse).
Status preluKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& slope = ctx.input(1);
  KILN_RETURN_IF_ERROR(checkType(ctx, "input X", x.type, TypeSet::kNumeric));
  if (slope.type != x.type) return ctx.error("input slope must have the type of X");
  Shape shape;
  KILN_RETURN_IF_ERROR(broadcastPair(ctx, x.shape, slope.shape, &shape));
  if (shape != x.shape) {
    return ctx.error("slope shape " + shapeToString(slope.shape) +
                     " does not broadcast to X shape " + shapeToString(x.shape));
  }
  BinaryParams params;
  params.op = BinaryOp::kPRelu;
  return launchBinary(ctx, params, shape);
}

// SwiGLU (opset 28): Swish(A) * B; A and B have one shape and type.
Status swiGluKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& b = ctx.input(1);
  if (a.type != b.type) return ctx.error("inputs A and B must have one data type");
  if (a.shape != b.shape) {
    return ctx.error("inputs A " + shapeToString(a.shape) + " and B " + shapeToString(b.shape) +
                     " must have one shape (no broadcasting)");
  }
  KILN_RETURN_IF_ERROR(checkType(ctx, "input", a.type, TypeSet::kFloat));
  BinaryParams params;
  params.op = BinaryOp::kSwiGlu;
  params.alpha = attr(ctx, "alpha", 1.0f);
  return launchBinary(ctx, params, a.shape);
}

// ---- Pow: the exponent may have another numeric type than the base (opset 12+).

enum class PowMode : int {
  kSameFloat,      // float base and exponent of one type: pow in the compute type
  kIntExponent,    // integer exponent, read as int64
  kFloatExponent,  // float exponent of another type than the base, read as double
};

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

template <class T>
Status launchPow(GpuKernelContext& ctx, const DeviceTensor& out, PowMode mode, const Operand& oa,
                 const Operand& ob) {
  if constexpr (std::is_same_v<T, bool>) {
    return ctx.unsupported("Pow of bool");
  } else {
    const DeviceTensor& b = ctx.input(1);
    const int64_t n = out.numel();
    powKernel<T><<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(ctx.input(0).as<T>(), b.data, b.type,
                                                              out.as<T>(), n, mode, oa, ob);
    KILN_CUDA_CHECK_LAUNCH("powKernel");
    return Status::ok();
  }
}

Status powKernelFn(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& b = ctx.input(1);
  KILN_RETURN_IF_ERROR(checkType(ctx, "input X", a.type, TypeSet::kNumeric));
  KILN_RETURN_IF_ERROR(checkType(ctx, "input Y", b.type, TypeSet::kNumeric));
  Shape shape;
  KILN_RETURN_IF_ERROR(broadcastPair(ctx, a.shape, b.shape, &shape));
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, a.type, shape));
  const int64_t n = shapeNumel(shape);
  if (n == 0) return Status::ok();
  PowMode mode = PowMode::kFloatExponent;
  if (a.type == b.type && inTypeSet(a.type, TypeSet::kFloat))
    mode = PowMode::kSameFloat;
  else if (inTypeSet(b.type, TypeSet::kInteger))
    mode = PowMode::kIntExponent;
  Operand operands[2];
  KILN_RETURN_IF_ERROR(planOperands(ctx, shape, {&a.shape, &b.shape}, operands));
  KILN_DISPATCH_NUMERIC(a.type, ctx,
                        { return launchPow<T>(ctx, out, mode, operands[0], operands[1]); });
  return Status::ok();
}

}  // namespace

void registerBinaryElementwiseGpuKernels(GpuKernelRegistry& registry) {
  using namespace ew;
  registry.add("SwiGLU", 28, 1000, swiGluKernel, kSupportsFloat);
  registry.add("PRelu", 7, 1000, preluKernel, kSupportsNumeric);
  registry.add("Add", 7, 1000, addKernel, kSupportsNumeric);
  registry.add("Sub", 7, 1000, subKernel, kSupportsNumeric);
  registry.add("Mul", 7, 1000, mulKernel, kSupportsNumeric);
  registry.add("Div", 7, 1000, divKernel, kSupportsNumeric);
  registry.add("Pow", 7, 1000, powKernelFn, kSupportsNumeric);
  registry.add("Mod", 10, 1000, modKernel, kSupportsNumeric);
  registry.add("BitShift", 11, 1000, bitShiftKernel, kSupportsInteger);
  registry.add("And", 7, 1000, andKernel, kSupportsBool);
  registry.add("Or", 7, 1000, orKernel, kSupportsBool);
  registry.add("Xor", 7, 1000, xorKernel, kSupportsBool);
  registry.add("BitwiseAnd", 18, 1000, bitwiseAndKernel, kSupportsInteger);
  registry.add("BitwiseOr", 18, 1000, bitwiseOrKernel, kSupportsInteger);
  registry.add("BitwiseXor", 18, 1000, bitwiseXorKernel, kSupportsInteger);
  registry.add("Equal", 7, 1000, equalKernel, kSupportsAll);
  registry.add("Less", 7, 1000, lessKernel, kSupportsNumeric);
  registry.add("LessOrEqual", 12, 1000, lessOrEqualKernel, kSupportsNumeric);
  registry.add("Greater", 7, 1000, greaterKernel, kSupportsNumeric);
  registry.add("GreaterOrEqual", 12, 1000, greaterOrEqualKernel, kSupportsNumeric);
}

}  // namespace kiln::cuda
