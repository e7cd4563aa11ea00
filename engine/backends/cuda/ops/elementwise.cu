// GPU kernels of the elementwise family: unary math and activations, binary arithmetic,
// comparisons and logic with numpy broadcasting, Pow with mixed types, the variadic
// Sum/Mean/Max/Min, PRelu, Where, Clip, Cast and CastLike. Semantics (types, opsets,
// attributes, NaN handling, integer wrapping and truncation) follow the CPU kernels in
// backends/cpu/ops/elementwise_*.cpp, activations.cpp, gated_activations.cpp and cast.cpp.
//
// Contract: one kernel template per storage type with a runtime op enum inside (uniform
// branches), so compile time stays bounded: unary, binary, pow, variadic and cast kernels
// per numeric type; Where per element byte size. Half and bfloat16 compute in float,
// float64 in double. Broadcast operands are read contiguously, as a scalar, or through
// coalesced strides (at most kMaxRank merged dims). Nothing here reads device data on
// the host: Clip bounds and Pow exponents are read by the kernels.
//
// Deliberate difference from the CPU: integer Div/Mod by zero is not an error here (that
// needs the divisor on the host); x / 0 and x % 0 give 0.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/device_common.cuh"

namespace kiln::cuda {
namespace {

// ---- Type sets (mirroring the CPU's TypeSet) and support predicates.

enum class TypeSet {
  kAll,      // every numeric type and bool
  kNumeric,  // float32/16/bf16/64 and the integers
  kFloat,    // float32/16/bf16/64
  kInteger,  // int8..uint64
  kSigned,   // floats and signed integers
  kBool,
};

bool isGpuFloat(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 ||
         t == DataType::kFloat64;
}
bool isGpuSignedInt(DataType t) {
  return t == DataType::kInt8 || t == DataType::kInt16 || t == DataType::kInt32 ||
         t == DataType::kInt64;
}
bool isGpuUnsignedInt(DataType t) {
  return t == DataType::kUInt8 || t == DataType::kUInt16 || t == DataType::kUInt32 ||
         t == DataType::kUInt64;
}

bool inTypeSet(DataType t, TypeSet set) {
  if (t == DataType::kBool) return set == TypeSet::kAll || set == TypeSet::kBool;
  if (isGpuFloat(t)) return set != TypeSet::kInteger && set != TypeSet::kBool;
  if (isGpuSignedInt(t)) return set != TypeSet::kFloat && set != TypeSet::kBool;
  if (isGpuUnsignedInt(t)) {
    return set == TypeSet::kAll || set == TypeSet::kNumeric || set == TypeSet::kInteger;
  }
  return false;
}

std::string typeReason(DataType t) {
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

// Where: a bool condition and X, Y of any GPU type.
std::string supportsWhere(const Node&, const std::vector<DataType>& types) {
  for (size_t i = 0; i < types.size(); ++i) {
    DataType t = types[i];
    if (t == DataType::kUndefined) continue;
    if (i == 0 ? t != DataType::kBool : !inTypeSet(t, TypeSet::kAll)) return typeReason(t);
  }
  return "";
}

// Cast: numeric or bool on both sides; float8, int4/2, float4 and strings stay on the host.
std::string supportsCast(const Node& node, const std::vector<DataType>& types) {
  if (!types.empty() && types[0] != DataType::kUndefined && !inTypeSet(types[0], TypeSet::kAll))
    return typeReason(types[0]);
  const int64_t to = node.attrInt("to", 0);
  if (to <= 0 || to > kLastDataTypeCode || !inTypeSet(static_cast<DataType>(to), TypeSet::kAll))
    return "no GPU kernel for casts to data type code " + std::to_string(to);
  return "";
}

// CastLike: the target type is input 1's.
std::string supportsCastLike(const Node& node, const std::vector<DataType>& types) {
  return supportsSet<TypeSet::kAll>(node, types);
}

Status checkType(const GpuKernelContext& ctx, const char* what, DataType type, TypeSet set) {
  if (inTypeSet(type, set)) return Status::ok();
  return ctx.unsupported(std::string(what) + " has data type " + dataTypeName(type) +
                         ", which this operator does not take");
}

Status requireInputs(const GpuKernelContext& ctx, size_t count) {
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

Status broadcastPair(const GpuKernelContext& ctx, const Shape& a, const Shape& b, Shape* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      (*out)[i] = da;
    } else if (da == 1) {
      (*out)[i] = db;
    } else {
      return ctx.error("shapes " + shapeToString(a) + " and " + shapeToString(b) +
                       " do not broadcast");
    }
  }
  return Status::ok();
}

// Element strides of `in` read as if broadcast to `out` (0 on broadcast dims).
std::vector<int64_t> fullStrides(const Shape& in, const Shape& out) {
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
Status planOperands(const GpuKernelContext& ctx, const Shape& out,
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

// ---- Unary ops.

enum class UnaryOp : int {
  kAbs,
  kNeg,
  kSign,
  kExp,
  kLog,
  kSqrt,
  kReciprocal,
  kFloor,
  kCeil,
  kRound,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kErf,
  kNot,
  kBitwiseNot,
  kIsNaN,
  kIsInf,
  kRelu,
  kLeakyRelu,
  kElu,
  kSelu,
  kCelu,
  kSigmoid,
  kHardSigmoid,
  kHardSwish,
  kSoftplus,
  kSoftsign,
  kTanh,
  kGelu,
  kGeluTanh,
  kMish,
  kThresholdedRelu,
  kSwish,
  kShrink,
  kClip,
};

struct UnaryParams {
  UnaryOp op = UnaryOp::kAbs;
  float alpha = 0.f;
  float beta = 0.f;
  float gamma = 0.f;
  double lambd = 0.0;          // Shrink
  double bias = 0.0;           // Shrink
  bool detectPositive = true;  // IsInf
  bool detectNegative = true;  // IsInf
  // Clip: device scalars of X's type (nullptr: none); without them alpha/beta when
  // clipAttributes (Clip-6), else the type's full range.
  const void* clipMin = nullptr;
  const void* clipMax = nullptr;
  bool clipAttributes = false;
};

template <class C>
__device__ __forceinline__ C softplus(C x) {
  if (x > C(0)) return x + mLog1p(mExp(-x));
  return mLog1p(mExp(x));
}

// Shrink computes in double and converts back like a Cast.
template <class C>
__device__ __forceinline__ C shrink(C x, const UnaryParams& p) {
  const double v = static_cast<double>(x);
  const double r = v < -p.lambd ? v + p.bias : (v > p.lambd ? v - p.bias : 0.0);
  if constexpr (kIntegerLike<C>)
    return truncateToInteger<C>(r);
  else
    return static_cast<C>(r);
}

// C is float or double.
template <class C>
__device__ __forceinline__ C floatUnary(const UnaryParams& p, C x, C lo, C hi) {
  switch (p.op) {
    case UnaryOp::kAbs:
      return mAbs(x);
    case UnaryOp::kNeg:
      return -x;
    case UnaryOp::kSign:
      if (x > C(0)) return C(1);
      if (x < C(0)) return C(-1);
      return x == C(0) ? C(0) : x;  // NaN stays NaN
    case UnaryOp::kExp:
      return mExp(x);
    case UnaryOp::kLog:
      return mLog(x);
    case UnaryOp::kSqrt:
      return mSqrt(x);
    case UnaryOp::kReciprocal:
      return C(1) / x;
    case UnaryOp::kFloor:
      return mFloor(x);
    case UnaryOp::kCeil:
      return mCeil(x);
    case UnaryOp::kRound:
      return mRint(x);  // halves to even
    case UnaryOp::kSin:
      return mSin(x);
    case UnaryOp::kCos:
      return mCos(x);
    case UnaryOp::kTan:
      return mTan(x);
    case UnaryOp::kAsin:
      return mAsin(x);
    case UnaryOp::kAcos:
      return mAcos(x);
    case UnaryOp::kAtan:
      return mAtan(x);
    case UnaryOp::kSinh:
      return mSinh(x);
    case UnaryOp::kCosh:
      return mCosh(x);
    case UnaryOp::kAsinh:
      return mAsinh(x);
    case UnaryOp::kAcosh:
      return mAcosh(x);
    case UnaryOp::kAtanh:
      return mAtanh(x);
    case UnaryOp::kErf:
      return mErf(x);
    case UnaryOp::kRelu:
      return x < C(0) ? C(0) : x;
    case UnaryOp::kLeakyRelu:
      return x < C(0) ? C(p.alpha) * x : x;
    case UnaryOp::kElu:
      return x < C(0) ? C(p.alpha) * (mExp(x) - C(1)) : x;
    case UnaryOp::kSelu:
      return x > C(0) ? C(p.gamma) * x : C(p.gamma) * (C(p.alpha) * mExp(x) - C(p.alpha));
    case UnaryOp::kCelu:
      return stdMax(C(0), x) + stdMin(C(0), C(p.alpha) * (mExp(x / C(p.alpha)) - C(1)));
    case UnaryOp::kSigmoid:
      return C(1) / (C(1) + mExp(-x));
    case UnaryOp::kHardSigmoid:
      return stdMax(C(0), stdMin(C(1), C(p.alpha) * x + C(p.beta)));
    case UnaryOp::kHardSwish:
      return x * stdMax(C(0), stdMin(C(1), x / C(6) + C(0.5)));
    case UnaryOp::kSoftplus:
      return softplus(x);
    case UnaryOp::kSoftsign:
      return x / (C(1) + mAbs(x));
    case UnaryOp::kTanh:
      return mTanh(x);
    case UnaryOp::kGelu:
      return C(0.5) * x * (C(1) + mErf(x * C(0.7071067811865476)));
    case UnaryOp::kGeluTanh: {
      const C kScale = C(0.7978845608028654);  // sqrt(2 / pi)
      return C(0.5) * x * (C(1) + mTanh(kScale * (x + C(0.044715) * x * x * x)));
    }
    case UnaryOp::kMish:
      return x * mTanh(softplus(x));
    case UnaryOp::kThresholdedRelu:
      return x > C(p.alpha) ? x : C(0);
    case UnaryOp::kSwish:
      return x / (C(1) + mExp(-C(p.alpha) * x));
    case UnaryOp::kShrink:
      return shrink(x, p);
    case UnaryOp::kClip:
      return stdMin(stdMax(x, lo), hi);  // lo > hi gives hi; NaN stays
    default:
      return x;
  }
}

template <class C>
__device__ __forceinline__ bool floatPredicate(const UnaryParams& p, C x) {
  if (p.op == UnaryOp::kIsNaN) return x != x;
  const C inf = C(INFINITY);
  if (x == inf) return p.detectPositive;
  if (x == -inf) return p.detectNegative;
  return false;
}

// C is an integer type.
template <class C>
__device__ __forceinline__ C integerUnary(const UnaryParams& p, C x, C lo, C hi) {
  switch (p.op) {
    case UnaryOp::kAbs:
      if constexpr (std::is_signed_v<C>) return x < C(0) ? negate(x) : x;
      return x;
    case UnaryOp::kNeg:
      return negate(x);
    case UnaryOp::kSign:
      if (x > C(0)) return C(1);
      if constexpr (std::is_signed_v<C>) {
        if (x < C(0)) return C(-1);
      }
      return C(0);
    case UnaryOp::kRelu:
      if constexpr (std::is_signed_v<C>) return x < C(0) ? C(0) : x;
      return x;
    case UnaryOp::kErf:
      return truncateToInteger<C>(erf(static_cast<double>(x)));
    case UnaryOp::kBitwiseNot:
      return static_cast<C>(~x);
    case UnaryOp::kShrink:
      return shrink(x, p);
    case UnaryOp::kClip:
      return stdMin(stdMax(x, lo), hi);
    default:
      return x;
  }
}

// Clip's bounds in the compute type of T.
template <class T>
__device__ __forceinline__ void clipBounds(const UnaryParams& p, Compute<T>* lo, Compute<T>* hi) {
  using C = Compute<T>;
  if constexpr (std::is_floating_point_v<C>) {
    *lo = p.clipAttributes ? C(p.alpha) : -C(INFINITY);
    *hi = p.clipAttributes ? C(p.beta) : C(INFINITY);
  } else {
    *lo = std::numeric_limits<C>::lowest();
    *hi = std::numeric_limits<C>::max();
  }
  if (p.clipMin) *lo = load(static_cast<const T*>(p.clipMin), 0);
  if (p.clipMax) *hi = load(static_cast<const T*>(p.clipMax), 0);
}

template <class T>
__global__ void unaryKernel(const T* x, void* y, int64_t n, UnaryParams p, bool packed) {
  using C = Compute<T>;
  C lo{}, hi{};
  if (p.op == UnaryOp::kClip) clipBounds<T>(p, &lo, &hi);
  if constexpr (kFloatLike<T>) {
    if (packed && p.op != UnaryOp::kIsNaN && p.op != UnaryOp::kIsInf) {
      // Four elements per thread per step, then the scalar tail.
      T* out = static_cast<T*>(y);
      constexpr int W = kPackWidth<T>;
      const int64_t packs = n / W;
      KILN_FOR_EACH_INDEX(v, packs) {
        const Pack<T> in = reinterpret_cast<const Pack<T>*>(x)[v];
        Pack<T> r;
#pragma unroll
        for (int j = 0; j < W; ++j) store(r.v, j, floatUnary<C>(p, load(in.v, j), lo, hi));
        reinterpret_cast<Pack<T>*>(out)[v] = r;
      }
      for (int64_t i = packs * W + blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
           i += int64_t(gridDim.x) * blockDim.x)
        store(out, i, floatUnary<C>(p, load(x, i), lo, hi));
      return;
    }
  }
  if constexpr (std::is_same_v<T, bool>) {
    bool* out = static_cast<bool*>(y);
    KILN_FOR_EACH_INDEX(i, n) out[i] = !x[i];  // Not
  } else if constexpr (kFloatLike<T>) {
    if (p.op == UnaryOp::kIsNaN || p.op == UnaryOp::kIsInf) {
      bool* out = static_cast<bool*>(y);
      KILN_FOR_EACH_INDEX(i, n) out[i] = floatPredicate(p, load(x, i));
    } else {
      T* out = static_cast<T*>(y);
      KILN_FOR_EACH_INDEX(i, n) store(out, i, floatUnary<C>(p, load(x, i), lo, hi));
    }
  } else {
    T* out = static_cast<T*>(y);
    KILN_FOR_EACH_INDEX(i, n) out[i] = integerUnary<C>(p, x[i], lo, hi);
  }
}

// Y = op(X) for X in `set`; IsNaN/IsInf write bool.
Status runUnary(GpuKernelContext& ctx, TypeSet set, const UnaryParams& params) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& x = ctx.input(0);
  KILN_RETURN_IF_ERROR(checkType(ctx, "input", x.type, set));
  const bool boolOut = params.op == UnaryOp::kIsNaN || params.op == UnaryOp::kIsInf;
  KILN_ASSIGN_OR_RETURN(DeviceTensor out,
                        ctx.allocateOutput(0, boolOut ? DataType::kBool : x.type, x.shape));
  const int64_t n = x.numel();
  if (n == 0) return Status::ok();
  KILN_DISPATCH_NUMERIC(x.type, ctx, {
    const bool packed = packAligned<T>({x.data, out.data});
    const int64_t work = packed ? (n + kPackWidth<T> - 1) / kPackWidth<T> : n;
    unaryKernel<T>
        <<<gridFor(work), kBlockSize, 0, ctx.stream()>>>(x.as<T>(), out.data, n, params, packed);
  });
  KILN_CUDA_CHECK_LAUNCH("unaryKernel");
  return Status::ok();
}

Status unary(GpuKernelContext& ctx, UnaryOp op, TypeSet set) {
  UnaryParams params;
  params.op = op;
  return runUnary(ctx, set, params);
}

float attr(const GpuKernelContext& ctx, const char* name, float fallback) {
  return ctx.node().attrFloat(name, fallback);
}

// One kernel function per registered op.
#define KILN_UNARY_KERNEL(fnName, op, set)        \
  Status fnName(GpuKernelContext& ctx) {          \
    return unary(ctx, UnaryOp::op, TypeSet::set); \
  }
KILN_UNARY_KERNEL(absKernel, kAbs, kNumeric)
KILN_UNARY_KERNEL(negKernel, kNeg, kSigned)
KILN_UNARY_KERNEL(signKernel, kSign, kNumeric)
KILN_UNARY_KERNEL(expKernel, kExp, kFloat)
KILN_UNARY_KERNEL(logKernel, kLog, kFloat)
KILN_UNARY_KERNEL(sqrtKernel, kSqrt, kFloat)
KILN_UNARY_KERNEL(reciprocalKernel, kReciprocal, kFloat)
KILN_UNARY_KERNEL(floorKernel, kFloor, kFloat)
KILN_UNARY_KERNEL(ceilKernel, kCeil, kFloat)
KILN_UNARY_KERNEL(roundKernel, kRound, kFloat)
KILN_UNARY_KERNEL(sinKernel, kSin, kFloat)
KILN_UNARY_KERNEL(cosKernel, kCos, kFloat)
KILN_UNARY_KERNEL(tanKernel, kTan, kFloat)
KILN_UNARY_KERNEL(asinKernel, kAsin, kFloat)
KILN_UNARY_KERNEL(acosKernel, kAcos, kFloat)
KILN_UNARY_KERNEL(atanKernel, kAtan, kFloat)
KILN_UNARY_KERNEL(sinhKernel, kSinh, kFloat)
KILN_UNARY_KERNEL(coshKernel, kCosh, kFloat)
KILN_UNARY_KERNEL(asinhKernel, kAsinh, kFloat)
KILN_UNARY_KERNEL(acoshKernel, kAcosh, kFloat)
KILN_UNARY_KERNEL(atanhKernel, kAtanh, kFloat)
KILN_UNARY_KERNEL(erfKernel, kErf, kNumeric)
KILN_UNARY_KERNEL(notKernel, kNot, kBool)
KILN_UNARY_KERNEL(bitwiseNotKernel, kBitwiseNot, kInteger)
KILN_UNARY_KERNEL(isNanKernel, kIsNaN, kFloat)
KILN_UNARY_KERNEL(reluKernel, kRelu, kSigned)
KILN_UNARY_KERNEL(sigmoidKernel, kSigmoid, kFloat)
KILN_UNARY_KERNEL(hardSwishKernel, kHardSwish, kFloat)
KILN_UNARY_KERNEL(softplusKernel, kSoftplus, kFloat)
KILN_UNARY_KERNEL(softsignKernel, kSoftsign, kFloat)
KILN_UNARY_KERNEL(tanhKernel, kTanh, kFloat)
KILN_UNARY_KERNEL(mishKernel, kMish, kFloat)
#undef KILN_UNARY_KERNEL

Status isInfKernel(GpuKernelContext& ctx) {
  UnaryParams params;
  params.op = UnaryOp::kIsInf;
  params.detectPositive = ctx.node().attrInt("detect_positive", 1) != 0;
  params.detectNegative = ctx.node().attrInt("detect_negative", 1) != 0;
  return runUnary(ctx, TypeSet::kFloat, params);
}

// Activations with an alpha attribute (and its CPU default).
Status alphaUnary(GpuKernelContext& ctx, UnaryOp op, float defaultAlpha) {
  UnaryParams params;
  params.op = op;
  params.alpha = attr(ctx, "alpha", defaultAlpha);
  return runUnary(ctx, TypeSet::kFloat, params);
}
Status leakyReluKernel(GpuKernelContext& ctx) {
  return alphaUnary(ctx, UnaryOp::kLeakyRelu, 0.01f);
}
Status eluKernel(GpuKernelContext& ctx) {
  return alphaUnary(ctx, UnaryOp::kElu, 1.0f);
}
Status thresholdedReluKernel(GpuKernelContext& ctx) {
  return alphaUnary(ctx, UnaryOp::kThresholdedRelu, 1.0f);
}
Status swishKernel(GpuKernelContext& ctx) {
  return alphaUnary(ctx, UnaryOp::kSwish, 1.0f);
}

Status celuKernel(GpuKernelContext& ctx) {
  if (attr(ctx, "alpha", 1.0f) == 0.0f) return ctx.error("attribute alpha must not be 0");
  return alphaUnary(ctx, UnaryOp::kCelu, 1.0f);
}

Status seluKernel(GpuKernelContext& ctx) {
  UnaryParams params;
  params.op = UnaryOp::kSelu;
  params.alpha = attr(ctx, "alpha", 1.67326319217681884765625f);
  params.gamma = attr(ctx, "gamma", 1.05070102214813232421875f);
  return runUnary(ctx, TypeSet::kFloat, params);
}

Status hardSigmoidKernel(GpuKernelContext& ctx) {
  UnaryParams params;
  params.op = UnaryOp::kHardSigmoid;
  params.alpha = attr(ctx, "alpha", 0.2f);
  params.beta = attr(ctx, "beta", 0.5f);
  return runUnary(ctx, TypeSet::kFloat, params);
}

Status geluKernel(GpuKernelContext& ctx) {
  const std::string approximate = ctx.node().attrString("approximate", "none");
  if (approximate == "none") return unary(ctx, UnaryOp::kGelu, TypeSet::kFloat);
  if (approximate == "tanh") return unary(ctx, UnaryOp::kGeluTanh, TypeSet::kFloat);
  return ctx.error("attribute approximate must be 'none' or 'tanh', got '" + approximate + "'");
}

Status shrinkKernel(GpuKernelContext& ctx) {
  UnaryParams params;
  params.op = UnaryOp::kShrink;
  params.lambd = attr(ctx, "lambd", 0.5f);
  params.bias = attr(ctx, "bias", 0.0f);
  return runUnary(ctx, TypeSet::kNumeric, params);
}

// Clip-6: float bounds from attributes.
Status clipAttributeKernel(GpuKernelContext& ctx) {
  UnaryParams params;
  params.op = UnaryOp::kClip;
  params.clipAttributes = true;
  params.alpha = attr(ctx, "min", std::numeric_limits<float>::lowest());
  params.beta = attr(ctx, "max", std::numeric_limits<float>::max());
  return runUnary(ctx, TypeSet::kFloat, params);
}

// Checks optional bound input `index` (one element of X's type); *data is its device
// pointer, or stays nullptr when the input is omitted.
Status clipBound(GpuKernelContext& ctx, size_t index, const char* name, const void** data) {
  if (index >= ctx.inputCount() || !ctx.hasInput(index)) return Status::ok();
  const DeviceTensor& bound = ctx.input(index);
  if (bound.type != ctx.input(0).type) {
    return ctx.error(std::string("input ") + name + " must have the type of input");
  }
  if (bound.numel() != 1) {
    return ctx.error(std::string("input ") + name + " must be a scalar, got shape " +
                     shapeToString(bound.shape));
  }
  *data = bound.data;
  return Status::ok();
}

// Clip-11+: optional scalar min/max inputs, read by the kernel on the device.
Status clipInputKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  KILN_RETURN_IF_ERROR(checkType(ctx, "input", ctx.input(0).type, TypeSet::kNumeric));
  UnaryParams params;
  params.op = UnaryOp::kClip;
  KILN_RETURN_IF_ERROR(clipBound(ctx, 1, "min", &params.clipMin));
  KILN_RETURN_IF_ERROR(clipBound(ctx, 2, "max", &params.clipMax));
  return runUnary(ctx, TypeSet::kNumeric, params);
}

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

// ---- Variadic Sum, Mean, Max, Min: up to kMaxVariadic inputs per launch, folded left to
// right in the compute type.

constexpr int kMaxVariadic = 8;

enum class VariadicOp : int { kSum, kMax, kMin };

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

// One launch over inputs[first, first + count), after `withOutput` the accumulated output.
template <class T>
Status launchVariadic(GpuKernelContext& ctx, const DeviceTensor& out, bool withOutput, size_t first,
                      size_t count, VariadicOp op, int meanDivisor) {
  VariadicArgs<T> args;
  args.op = op;
  args.meanDivisor = meanDivisor;
  std::vector<const Shape*> shapes;
  if (withOutput) {
    args.data[args.count++] = out.as<T>();
    shapes.push_back(&out.shape);
  }
  for (size_t k = first; k < first + count; ++k) {
    args.data[args.count++] = ctx.input(k).as<T>();
    shapes.push_back(&ctx.input(k).shape);
  }
  KILN_RETURN_IF_ERROR(planOperands(ctx, out.shape, shapes, args.operands));
  const int64_t n = out.numel();
  variadicKernel<T><<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(args, out.as<T>(), n);
  KILN_CUDA_CHECK_LAUNCH("variadicKernel");
  return Status::ok();
}

// Folds all inputs into `out`, kMaxVariadic per launch; later launches read the partial
// result from `out` first. Mean divides in the last launch.
template <class T>
Status foldInputs(GpuKernelContext& ctx, const DeviceTensor& out, VariadicOp op, bool mean) {
  if constexpr (std::is_same_v<T, bool>) {
    return ctx.unsupported("bool inputs");
  } else {
    const size_t count = ctx.inputCount();
    size_t done = 0;
    while (done < count) {
      const bool withOutput = done > 0;
      const size_t take =
          std::min(count - done, static_cast<size_t>(kMaxVariadic - (withOutput ? 1 : 0)));
      const bool last = done + take == count;
      KILN_RETURN_IF_ERROR(launchVariadic<T>(ctx, out, withOutput, done, take, op,
                                             mean && last ? static_cast<int>(count) : 0));
      done += take;
    }
    return Status::ok();
  }
}

Status variadic(GpuKernelContext& ctx, VariadicOp op, TypeSet set, bool mean) {
  const size_t count = ctx.inputCount();
  if (count == 0) return ctx.error("needs at least one input");
  KILN_RETURN_IF_ERROR(requireInputs(ctx, count));
  const DataType type = ctx.input(0).type;
  KILN_RETURN_IF_ERROR(checkType(ctx, "input", type, set));
  Shape shape = ctx.input(0).shape;
  for (size_t i = 1; i < count; ++i) {
    const DeviceTensor& in = ctx.input(i);
    if (in.type != type) {
      return ctx.error("input " + std::to_string(i) + " has type " + dataTypeName(in.type) +
                       " but input 0 has " + dataTypeName(type));
    }
    Shape next;
    KILN_RETURN_IF_ERROR(broadcastPair(ctx, shape, in.shape, &next));
    shape = next;
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, type, shape));
  if (out.numel() == 0) return Status::ok();
  KILN_DISPATCH_NUMERIC(type, ctx, { return foldInputs<T>(ctx, out, op, mean); });
  return Status::ok();
}

Status sumKernel(GpuKernelContext& ctx) {
  return variadic(ctx, VariadicOp::kSum, TypeSet::kFloat, false);
}
Status meanKernel(GpuKernelContext& ctx) {
  return variadic(ctx, VariadicOp::kSum, TypeSet::kFloat, true);
}
Status maxKernel(GpuKernelContext& ctx) {
  return variadic(ctx, VariadicOp::kMax, TypeSet::kNumeric, false);
}
Status minKernel(GpuKernelContext& ctx) {
  return variadic(ctx, VariadicOp::kMin, TypeSet::kNumeric, false);
}

// ---- Where: cond ? x : y over the broadcast of all three; moves elements by byte size.

template <class T>
__global__ void whereKernel(const bool* cond, const T* x, const T* y, T* out, int64_t n, Operand oc,
                            Operand ox, Operand oy) {
  KILN_FOR_EACH_INDEX(i, n) {
    out[i] = cond[operandIndex(oc, i)] ? x[operandIndex(ox, i)] : y[operandIndex(oy, i)];
  }
}

Status whereKernelFn(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DeviceTensor& cond = ctx.input(0);
  const DeviceTensor& x = ctx.input(1);
  const DeviceTensor& y = ctx.input(2);
  if (cond.type != DataType::kBool) return ctx.error("input condition must be bool");
  if (x.type != y.type) return ctx.error("inputs X and Y must have the same type");
  KILN_RETURN_IF_ERROR(checkType(ctx, "input X", x.type, TypeSet::kAll));
  Shape partial;
  Shape shape;
  KILN_RETURN_IF_ERROR(broadcastPair(ctx, cond.shape, x.shape, &partial));
  KILN_RETURN_IF_ERROR(broadcastPair(ctx, partial, y.shape, &shape));
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, x.type, shape));
  const int64_t n = shapeNumel(shape);
  if (n == 0) return Status::ok();
  Operand operands[3];
  KILN_RETURN_IF_ERROR(planOperands(ctx, shape, {&cond.shape, &x.shape, &y.shape}, operands));
  KILN_DISPATCH_BYTES(x.type, ctx, {
    whereKernel<T><<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(
        cond.as<bool>(), x.as<T>(), y.as<T>(), out.as<T>(), n, operands[0], operands[1],
        operands[2]);
  });
  KILN_CUDA_CHECK_LAUNCH("whereKernel");
  return Status::ok();
}

// ---- Cast and CastLike among the numeric types and bool.

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

// Casts input 0 into storage type `to`.
Status castInto(GpuKernelContext& ctx, DataType to) {
  const DeviceTensor& in = ctx.input(0);
  if (!inTypeSet(in.type, TypeSet::kAll)) {
    return ctx.unsupported(std::string("input has data type ") + dataTypeName(in.type));
  }
  if (!inTypeSet(to, TypeSet::kAll)) {
    return ctx.unsupported(std::string("cannot cast to data type ") + dataTypeName(to));
  }
  const std::string roundMode = ctx.node().attrString("round_mode", "up");
  if (roundMode != "up" && roundMode != "down" && roundMode != "nearest")
    return ctx.error("attribute 'round_mode' = '" + roundMode + "' is not up, down or nearest");
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, to, in.shape));
  const int64_t n = in.numel();
  if (n == 0) return Status::ok();
  if (in.type == to) {
    KILN_CUDA_CHECK(
        cudaMemcpyAsync(out.data, in.data, in.byteSize(), cudaMemcpyDeviceToDevice, ctx.stream()));
    return Status::ok();
  }
  KILN_DISPATCH_NUMERIC(in.type, ctx, {
    castKernel<T><<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(in.as<T>(), out.data, to, n);
  });
  KILN_CUDA_CHECK_LAUNCH("castKernel");
  return Status::ok();
}

Status castKernelFn(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  if (!ctx.node().hasAttr("to")) return ctx.error("attribute 'to' is required");
  const int64_t to = ctx.node().attrInt("to", 0);
  if (to <= 0 || to > kLastDataTypeCode) {
    return ctx.unsupported("attribute 'to' = " + std::to_string(to) + " is not a known data type");
  }
  return castInto(ctx, ctx.storageType(static_cast<DataType>(to)));
}

// CastLike: Cast to the (storage) type of input 1, whose values are ignored.
Status castLikeKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  return castInto(ctx, ctx.input(1).type);
}

}  // namespace

void registerElementwiseGpuKernels(GpuKernelRegistry& registry) {
  constexpr auto kFloat = &supportsSet<TypeSet::kFloat>;
  constexpr auto kNumeric = &supportsSet<TypeSet::kNumeric>;
  constexpr auto kSigned = &supportsSet<TypeSet::kSigned>;
  constexpr auto kInteger = &supportsSet<TypeSet::kInteger>;
  constexpr auto kBool = &supportsSet<TypeSet::kBool>;
  constexpr auto kAll = &supportsSet<TypeSet::kAll>;

  // Unary math.
  registry.add("Abs", 1, 1000, absKernel, kNumeric);
  registry.add("Neg", 1, 1000, negKernel, kSigned);
  registry.add("Sign", 9, 1000, signKernel, kNumeric);
  registry.add("Exp", 1, 1000, expKernel, kFloat);
  registry.add("Log", 1, 1000, logKernel, kFloat);
  registry.add("Sqrt", 1, 1000, sqrtKernel, kFloat);
  registry.add("Reciprocal", 1, 1000, reciprocalKernel, kFloat);
  registry.add("Floor", 1, 1000, floorKernel, kFloat);
  registry.add("Ceil", 1, 1000, ceilKernel, kFloat);
  registry.add("Round", 11, 1000, roundKernel, kFloat);
  registry.add("Sin", 7, 1000, sinKernel, kFloat);
  registry.add("Cos", 7, 1000, cosKernel, kFloat);
  registry.add("Tan", 7, 1000, tanKernel, kFloat);
  registry.add("Asin", 7, 1000, asinKernel, kFloat);
  registry.add("Acos", 7, 1000, acosKernel, kFloat);
  registry.add("Atan", 7, 1000, atanKernel, kFloat);
  registry.add("Sinh", 9, 1000, sinhKernel, kFloat);
  registry.add("Cosh", 9, 1000, coshKernel, kFloat);
  registry.add("Asinh", 9, 1000, asinhKernel, kFloat);
  registry.add("Acosh", 9, 1000, acoshKernel, kFloat);
  registry.add("Atanh", 9, 1000, atanhKernel, kFloat);
  registry.add("Erf", 9, 1000, erfKernel, kNumeric);
  registry.add("Not", 1, 1000, notKernel, kBool);
  registry.add("BitwiseNot", 18, 1000, bitwiseNotKernel, kInteger);
  registry.add("IsNaN", 9, 1000, isNanKernel, kFloat);
  registry.add("IsInf", 10, 1000, isInfKernel, kFloat);

  // Activations.
  registry.add("Relu", 1, 1000, reluKernel, kSigned);
  registry.add("LeakyRelu", 1, 1000, leakyReluKernel, kFloat);
  registry.add("Elu", 1, 1000, eluKernel, kFloat);
  registry.add("Selu", 1, 1000, seluKernel, kFloat);
  registry.add("Celu", 12, 1000, celuKernel, kFloat);
  registry.add("Sigmoid", 1, 1000, sigmoidKernel, kFloat);
  registry.add("HardSigmoid", 1, 1000, hardSigmoidKernel, kFloat);
  registry.add("HardSwish", 14, 1000, hardSwishKernel, kFloat);
  registry.add("Tanh", 1, 1000, tanhKernel, kFloat);
  registry.add("Softplus", 1, 1000, softplusKernel, kFloat);
  registry.add("Softsign", 1, 1000, softsignKernel, kFloat);
  registry.add("ThresholdedRelu", 10, 1000, thresholdedReluKernel, kFloat);
  registry.add("Gelu", 20, 1000, geluKernel, kFloat);
  registry.add("Mish", 18, 1000, mishKernel, kFloat);
  registry.add("Shrink", 9, 1000, shrinkKernel, kNumeric);
  registry.add("Swish", 24, 1000, swishKernel, kFloat);
  registry.add("SwiGLU", 28, 1000, swiGluKernel, kFloat);
  registry.add("Clip", 1, 10, clipAttributeKernel, kFloat);
  registry.add("Clip", 11, 1000, clipInputKernel, kNumeric);
  registry.add("PRelu", 7, 1000, preluKernel, kNumeric);

  // Binary, with numpy broadcasting.
  registry.add("Add", 7, 1000, addKernel, kNumeric);
  registry.add("Sub", 7, 1000, subKernel, kNumeric);
  registry.add("Mul", 7, 1000, mulKernel, kNumeric);
  registry.add("Div", 7, 1000, divKernel, kNumeric);
  registry.add("Pow", 7, 1000, powKernelFn, kNumeric);
  registry.add("Mod", 10, 1000, modKernel, kNumeric);
  registry.add("BitShift", 11, 1000, bitShiftKernel, kInteger);
  registry.add("And", 7, 1000, andKernel, kBool);
  registry.add("Or", 7, 1000, orKernel, kBool);
  registry.add("Xor", 7, 1000, xorKernel, kBool);
  registry.add("BitwiseAnd", 18, 1000, bitwiseAndKernel, kInteger);
  registry.add("BitwiseOr", 18, 1000, bitwiseOrKernel, kInteger);
  registry.add("BitwiseXor", 18, 1000, bitwiseXorKernel, kInteger);
  registry.add("Equal", 7, 1000, equalKernel, kAll);
  registry.add("Less", 7, 1000, lessKernel, kNumeric);
  registry.add("LessOrEqual", 12, 1000, lessOrEqualKernel, kNumeric);
  registry.add("Greater", 7, 1000, greaterKernel, kNumeric);
  registry.add("GreaterOrEqual", 12, 1000, greaterOrEqualKernel, kNumeric);

  // Variadic and ternary.
  registry.add("Max", 1, 1000, maxKernel, kNumeric);
  registry.add("Min", 1, 1000, minKernel, kNumeric);
  registry.add("Sum", 1, 1000, sumKernel, kFloat);
  registry.add("Mean", 1, 1000, meanKernel, kFloat);
  registry.add("Where", 9, 1000, whereKernelFn, supportsWhere);

  // Conversions.
  registry.add("Cast", 6, 1000, castKernelFn, supportsCast);
  registry.add("CastLike", 15, 1000, castLikeKernel, supportsCastLike);
}

}  // namespace kiln::cuda
