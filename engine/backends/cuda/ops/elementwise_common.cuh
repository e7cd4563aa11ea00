// What the elementwise kernels share (elementwise.cu: unary math and activations;
// elementwise_binary.cu: binary arithmetic, comparisons, logic, PRelu, SwiGLU, Pow;
// elementwise_nary_cast.cu: Sum/Mean/Max/Min, Where, Cast, CastLike): the type sets and
// support predicates, broadcast planning on the host, and the device helpers (operand
// indexing, packed accesses, loads and stores, math overloads). Internal to kiln_cuda.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "ops/broadcast_params.h"

namespace kiln::cuda {

// Registered by registerElementwiseGpuKernels (elementwise.cu) after its unary ops.
void registerBinaryElementwiseGpuKernels(GpuKernelRegistry& registry);
void registerNaryAndCastGpuKernels(GpuKernelRegistry& registry);

namespace ew {

// ---- Type sets (mirroring the CPU's TypeSet) and support predicates.

enum class TypeSet {
  kAll,      // every numeric type and bool
  kNumeric,  // float32/16/bf16/64 and the integers
  kFloat,    // float32/16/bf16/64
  kInteger,  // int8..uint64
  kSigned,   // floats and signed integers
  kBool,
};

inline bool isGpuFloat(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 ||
         t == DataType::kFloat64;
}
inline bool isGpuSignedInt(DataType t) {
  return t == DataType::kInt8 || t == DataType::kInt16 || t == DataType::kInt32 ||
         t == DataType::kInt64;
}
inline bool isGpuUnsignedInt(DataType t) {
  return t == DataType::kUInt8 || t == DataType::kUInt16 || t == DataType::kUInt32 ||
         t == DataType::kUInt64;
}

inline bool inTypeSet(DataType t, TypeSet set) {
  if (t == DataType::kBool) return set == TypeSet::kAll || set == TypeSet::kBool;
  if (isGpuFloat(t)) return set != TypeSet::kInteger && set != TypeSet::kBool;
  if (isGpuSignedInt(t)) return set != TypeSet::kFloat && set != TypeSet::kBool;
  if (isGpuUnsignedInt(t)) {
    return set == TypeSet::kAll || set == TypeSet::kNumeric || set == TypeSet::kInteger;
  }
  return false;
}

inline std::string typeReason(DataType t) {
  return std::string("no GPU kernel for ") + dataTypeName(t) + " inputs";
}

// Every known input type in kSet.
template <TypeSet kSet>
std::string supportsSet(const Node&, const std::vector<DataType>& types) {
  for (DataType t : types) {
    if (t != DataType::kUndefined && !inTypeSet(t, kSet)) return typeReason(t);
  }
  return "";
}

// The support predicates the family's registrations name.
inline constexpr GpuSupportFn kSupportsAll = &supportsSet<TypeSet::kAll>;
inline constexpr GpuSupportFn kSupportsNumeric = &supportsSet<TypeSet::kNumeric>;
inline constexpr GpuSupportFn kSupportsFloat = &supportsSet<TypeSet::kFloat>;
inline constexpr GpuSupportFn kSupportsInteger = &supportsSet<TypeSet::kInteger>;
inline constexpr GpuSupportFn kSupportsSigned = &supportsSet<TypeSet::kSigned>;
inline constexpr GpuSupportFn kSupportsBool = &supportsSet<TypeSet::kBool>;

// Where: a bool condition and X, Y of any GPU type.
inline std::string supportsWhere(const Node&, const std::vector<DataType>& types) {
  for (size_t i = 0; i < types.size(); ++i) {
    DataType t = types[i];
    if (t == DataType::kUndefined) continue;
    if (i == 0 ? t != DataType::kBool : !inTypeSet(t, TypeSet::kAll)) return typeReason(t);
  }
  return "";
}

// Cast: numeric or bool on both sides; float8, int4/2, float4 and strings stay on the host.
inline std::string supportsCast(const Node& node, const std::vector<DataType>& types) {
  if (!types.empty() && types[0] != DataType::kUndefined && !inTypeSet(types[0], TypeSet::kAll))
    return typeReason(types[0]);
  const int64_t to = node.attrInt("to", 0);
  if (to <= 0 || to > kLastDataTypeCode || !inTypeSet(static_cast<DataType>(to), TypeSet::kAll))
    return "no GPU kernel for casts to data type code " + std::to_string(to);
  return "";
}

// CastLike: the target type is input 1's.
inline std::string supportsCastLike(const Node& node, const std::vector<DataType>& types) {
  return supportsSet<TypeSet::kAll>(node, types);
}

inline Status checkType(const GpuKernelContext& ctx, const char* what, DataType type, TypeSet set) {
  if (inTypeSet(type, set)) return Status::ok();
  return ctx.unsupported(std::string(what) + " has data type " + dataTypeName(type) +
                         ", which this operator does not take");
}

inline Status requireInputs(const GpuKernelContext& ctx, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (i >= ctx.inputCount() || !ctx.hasInput(i))
      return ctx.error("required input " + std::to_string(i) + " is missing");
  }
  return Status::ok();
}

// ---- Broadcast planning (host).

// An operand read at output index i: i itself, element 0, or through strides.
enum OperandMode : int { kContiguous = 0, kScalar = 1, kStrided = 2 };

struct Operand {
  ShapeInfo info;  // coalesced output dims and this operand's strides (kStrided only)
  int mode = kContiguous;
  bool small = false;  // every index fits 32 bits: cheaper division
  // kStrided with an innermost output dim that is a multiple of 8: a pack of up to 8
  // consecutive outputs stays in one row, so its operand elements are consecutive
  // (innerStride 1) or all the same (innerStride 0) and one index computation serves it.
  bool packRows = false;
  int innerStride = 0;
};

// The ops row's broadcast (ops/broadcast_params.h), its error named after the node.
inline Status broadcastPair(const GpuKernelContext& ctx, const Shape& a, const Shape& b,
                            Shape* out) {
  const Status s = ops::broadcastShapes(a, b, out);
  return s.isOk() ? s : ctx.error(s.message());
}

// Element strides of `in` read as if broadcast to `out` (0 on broadcast dims).
inline std::vector<int64_t> fullStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  const size_t offset = out.size() - in.size();
  int64_t stride = 1;
  for (size_t k = in.size(); k-- > 0;) {
    if (in[k] != 1) strides[k + offset] = stride;
    stride *= in[k];
  }
  return strides;
}

// Plans how each of `inputs` is read at the indices of `out`. Size-1 output dims are
// dropped and adjacent dims merge where every input is contiguous (or broadcast) across
// both, so [N,C,H,W] + [1,C,1,1] reads through 3 dims: N, C and H*W.
inline Status planOperands(const GpuKernelContext& ctx, const Shape& out,
                           const std::vector<const Shape*>& inputs, Operand* operands) {
  const int64_t n = shapeNumel(out);
  const size_t count = inputs.size();
  bool anyStrided = false;
  for (size_t k = 0; k < count; ++k) {
    const int64_t nk = shapeNumel(*inputs[k]);
    operands[k] = Operand{};
    operands[k].mode = nk == n ? kContiguous : (nk == 1 ? kScalar : kStrided);
    anyStrided = anyStrided || operands[k].mode == kStrided;
  }
  if (!anyStrided) return Status::ok();
  std::vector<std::vector<int64_t>> full(count);
  for (size_t k = 0; k < count; ++k) full[k] = fullStrides(*inputs[k], out);
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides(count);
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < count && merge; ++k) merge = full[k][d] * out[d] == strides[k].back();
    if (merge) {
      dims.back() *= out[d];
      for (size_t k = 0; k < count; ++k) strides[k].back() = full[k][d];
    } else {
      dims.push_back(out[d]);
      for (size_t k = 0; k < count; ++k) strides[k].push_back(full[k][d]);
    }
  }
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return ctx.unsupported("broadcast over " + std::to_string(dims.size()) +
                           " dimensions that do not merge (at most " + std::to_string(kMaxRank) +
                           ")");
  }
  const bool small = n <= static_cast<int64_t>(std::numeric_limits<uint32_t>::max());
  for (size_t k = 0; k < count; ++k) {
    if (operands[k].mode != kStrided) continue;
    ShapeInfo& info = operands[k].info;
    info.rank = static_cast<int>(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) {
      info.dims[d] = dims[d];
      info.strides[d] = strides[k][d];
    }
    operands[k].small = small;
    const int64_t innerDim = dims.back();
    const int64_t innerStride = strides[k].back();
    operands[k].packRows = innerDim % 8 == 0 && (innerStride == 0 || innerStride == 1);
    operands[k].innerStride = static_cast<int>(innerStride);
  }
  return Status::ok();
}

// ---- Device helpers.

#define KILN_FOR_EACH_INDEX(i, n)                                           \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

__device__ __forceinline__ int64_t operandIndex(const Operand& o, int64_t i) {
  if (o.mode == kContiguous) return i;
  if (o.mode == kScalar) return 0;
  if (!o.small) return stridedOffset(o.info, i);
  uint32_t j = static_cast<uint32_t>(i);
  uint32_t offset = 0;
#pragma unroll
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (d >= o.info.rank) continue;
    const uint32_t dim = static_cast<uint32_t>(o.info.dims[d]);
    const uint32_t q = j / dim;
    offset += (j - q * dim) * static_cast<uint32_t>(o.info.strides[d]);
    j = q;
  }
  return offset;
}

// Consecutive elements moved as one aligned access: 16 bytes for the 4- and 2-byte types
// (4 float32 or 8 float16/bfloat16 values), 4 for 1-byte types, 32 for float64. Memory-
// bound kernels need wide accesses to reach bandwidth.
template <class T>
constexpr int kPackWidth = sizeof(T) == 2 ? 8 : 4;
template <class T>
struct alignas(sizeof(T) * kPackWidth<T>) Pack {
  T v[kPackWidth<T>];
};

// True when every pointer allows Pack accesses of T.
template <class T>
inline bool packAligned(std::initializer_list<const void*> pointers) {
  for (const void* p : pointers)
    if (reinterpret_cast<uintptr_t>(p) % (kPackWidth<T> * sizeof(T)) != 0) return false;
  return true;
}

template <class T>
constexpr bool kHalfLike = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <class T>
constexpr bool kFloatLike = kHalfLike<T> || std::is_floating_point_v<T>;
template <class T>
constexpr bool kIntegerLike = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <class T>
using Compute = typename ComputeType<T>::type;

template <class T>
__device__ __forceinline__ Compute<T> load(const T* p, int64_t i) {
  if constexpr (kHalfLike<T>)
    return toFloat(p[i]);
  else
    return p[i];
}

template <class T, class C>
__device__ __forceinline__ void store(T* p, int64_t i, C v) {
  if constexpr (kHalfLike<T>)
    p[i] = fromFloat<T>(static_cast<float>(v));
  else
    p[i] = static_cast<T>(v);
}

// Float math overloads: the float versions for float (and half/bfloat16 computed in
// float), the double versions for double.
#define KILN_MATH1(Name, floatFn, doubleFn)          \
  __device__ __forceinline__ float Name(float x) {   \
    return floatFn(x);                               \
  }                                                  \
  __device__ __forceinline__ double Name(double x) { \
    return doubleFn(x);                              \
  }
KILN_MATH1(mAbs, fabsf, fabs)
KILN_MATH1(mExp, expf, exp)
KILN_MATH1(mLog, logf, log)
KILN_MATH1(mLog1p, log1pf, log1p)
KILN_MATH1(mSqrt, sqrtf, sqrt)
KILN_MATH1(mFloor, floorf, floor)
KILN_MATH1(mCeil, ceilf, ceil)
KILN_MATH1(mRint, rintf, rint)
KILN_MATH1(mSin, sinf, sin)
KILN_MATH1(mCos, cosf, cos)
KILN_MATH1(mTan, tanf, tan)
KILN_MATH1(mAsin, asinf, asin)
KILN_MATH1(mAcos, acosf, acos)
KILN_MATH1(mAtan, atanf, atan)
KILN_MATH1(mSinh, sinhf, sinh)
KILN_MATH1(mCosh, coshf, cosh)
KILN_MATH1(mTanh, tanhf, tanh)
KILN_MATH1(mAsinh, asinhf, asinh)
KILN_MATH1(mAcosh, acoshf, acosh)
KILN_MATH1(mAtanh, atanhf, atanh)
KILN_MATH1(mErf, erff, erf)
#undef KILN_MATH1
__device__ __forceinline__ float mFmod(float x, float y) {
  return fmodf(x, y);
}
__device__ __forceinline__ double mFmod(double x, double y) {
  return fmod(x, y);
}
__device__ __forceinline__ float mPow(float x, float y) {
  return powf(x, y);
}
__device__ __forceinline__ double mPow(double x, double y) {
  return pow(x, y);
}

template <class C>
__device__ __forceinline__ bool isNan(C x) {
  if constexpr (std::is_floating_point_v<C>)
    return x != x;
  else
    return false;
}

// std::max / std::min exactly (NaN handling included): max(a, b) = a < b ? b : a.
template <class C>
__device__ __forceinline__ C stdMax(C a, C b) {
  return a < b ? b : a;
}
template <class C>
__device__ __forceinline__ C stdMin(C a, C b) {
  return b < a ? b : a;
}

// The unsigned type integer arithmetic wraps in (signed overflow is undefined).
template <class C>
using WrapType = std::make_unsigned_t<decltype(C{} + C{})>;

template <class C>
__device__ __forceinline__ C negate(C x) {
  return static_cast<C>(WrapType<C>(0) - WrapType<C>(x));
}

// float -> integer as the CPU's truncateToInteger: toward zero, NaN is 0, values outside
// int64 saturate there and then wrap to the target width like numpy's astype.
template <class To>
__device__ __forceinline__ To truncateToInteger(double value) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (value != value) return To{0};
  if constexpr (std::is_same_v<To, uint64_t>) {
    if (value >= 0) {
      return value >= 2 * kTwo63 ? std::numeric_limits<uint64_t>::max()
                                 : static_cast<uint64_t>(value);
    }
  }
  if (value >= kTwo63) return static_cast<To>(std::numeric_limits<int64_t>::max());
  if (value < -kTwo63) return static_cast<To>(std::numeric_limits<int64_t>::min());
  return static_cast<To>(static_cast<int64_t>(value));
}

// A float attribute, or `fallback` when the node has none.
inline float attr(const GpuKernelContext& ctx, const char* name, float fallback) {
  return ctx.node().attrFloat(name, fallback);
}

}  // namespace ew
}  // namespace kiln::cuda
