// Shared by the elementwise kernels (elementwise_binary.cpp, elementwise_variadic.cpp,
// elementwise_unary.cpp, activations.cpp, cast.cpp): compile-time type sets for dispatch,
// a broadcast plan that coalesces dimensions so the hot loop runs over long contiguous
// rows, flat unary maps, and overflow- and branch-safe scalar helpers.
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/ops/op_utils.h"

namespace kiln::cpu {

// Activation kernels live in activations.cpp; registerElementwiseUnaryKernels calls this.
void registerActivationKernels(KernelRegistry& registry);
// Max, Min, Sum, Mean, PRelu and Where (elementwise_variadic.cpp); called by
// registerElementwiseBinaryKernels.
void registerVariadicKernels(KernelRegistry& registry);

template <class T>
constexpr bool kIsInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
constexpr bool kIsFloat =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// The element types an op accepts. Kernels name one so that dispatch instantiates only the
// types the op's arithmetic makes sense for.
enum class TypeSet {
  kAll,       // every numeric type and bool (not string)
  kNumeric,   // float32/64, float16, bfloat16, int8..uint64
  kFloat,     // float32/64, float16, bfloat16
  kInteger,   // int8..uint64
  kUnsigned,  // uint8..uint64
  kSigned,    // floats and signed integers
  kBool,
  kString,
};

template <class T>
constexpr bool typeInSet(TypeSet set) {
  switch (set) {
    case TypeSet::kAll:
      return true;
    case TypeSet::kNumeric:
      return !std::is_same_v<T, bool>;
    case TypeSet::kFloat:
      return kIsFloat<T>;
    case TypeSet::kInteger:
      return kIsInteger<T>;
    case TypeSet::kUnsigned:
      return kIsInteger<T> && std::is_unsigned_v<T>;
    case TypeSet::kSigned:
      return kIsFloat<T> || (kIsInteger<T> && std::is_signed_v<T>);
    case TypeSet::kBool:
      return std::is_same_v<T, bool>;
    case TypeSet::kString:
      return false;
  }
  return false;
}

bool inTypeSet(DataType type, TypeSet set);
// kUnsupported naming `what` ("input X") and its type when `type` is not in `set`.
Status checkType(const KernelContext& ctx, const char* what, DataType type, TypeSet set);
// Broadcasts a and b into *out, or an error naming both shapes.
Status broadcastOrError(const KernelContext& ctx, const Shape& a, const Shape& b, Shape* out);

// dispatchAllTypes restricted to kSet: f is instantiated only for the types in the set.
template <TypeSet kSet, class F>
Status dispatchTypeSet(const KernelContext& ctx, DataType type, F&& f) {
  KILN_RETURN_IF_ERROR(checkType(ctx, "input", type, kSet));
  return dispatchAllTypes(type, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (typeInSet<T>(kSet))
      return f(tag);
    else
      return ctx.unsupported(std::string("data type ") + dataTypeName(type));
  });
}

// Broadcast iteration in rows. Output dims of size 1 are dropped and adjacent dims are
// merged whenever every input is contiguous (or broadcast) across both, so that
// [N,C,H,W] + [1,C,1,1] becomes N*C rows of H*W elements. Innermost strides are 0 or 1.
template <size_t N>
struct BroadcastPlan {
  std::vector<int64_t> dims;                    // coalesced dims, innermost last
  std::array<std::vector<int64_t>, N> strides;  // per input, per coalesced dim
  int64_t numel = 0;
};

template <size_t N>
BroadcastPlan<N> makeBroadcastPlan(const Shape& out, const std::array<const Shape*, N>& inputs) {
  BroadcastPlan<N> plan;
  plan.numel = shapeNumel(out);
  std::array<std::vector<int64_t>, N> full;
  for (size_t k = 0; k < N; ++k) full[k] = broadcastStrides(*inputs[k], out);
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    bool merge = !plan.dims.empty();
    for (size_t k = 0; k < N && merge; ++k) {
      merge = full[k][d] * out[d] == plan.strides[k].back();
    }
    if (merge) {
      // The merged dim keeps the inner stride: stride[outer] == stride[inner] * size[inner].
      plan.dims.back() *= out[d];
      for (size_t k = 0; k < N; ++k) plan.strides[k].back() = full[k][d];
    } else {
      plan.dims.push_back(out[d]);
      for (size_t k = 0; k < N; ++k) plan.strides[k].push_back(full[k][d]);
    }
  }
  if (plan.dims.empty()) {
    plan.dims.push_back(1);
    for (size_t k = 0; k < N; ++k) plan.strides[k].push_back(0);
  }
  return plan;
}

// Calls row(outOffset, inOffsets, length, innerStrides) for each innermost row.
template <size_t N, class F>
void forEachBroadcastRow(const BroadcastPlan<N>& plan, F&& row) {
  if (plan.numel <= 0) return;
  const int rank = static_cast<int>(plan.dims.size());
  const int64_t length = plan.dims.back();
  std::array<int64_t, N> inner{};
  for (size_t k = 0; k < N; ++k) inner[k] = plan.strides[k].back();
  std::vector<int64_t> index(rank, 0);
  std::array<int64_t, N> offsets{};
  for (int64_t outOffset = 0; outOffset < plan.numel; outOffset += length) {
    row(outOffset, offsets, length, inner);
    for (int d = rank - 2; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) offsets[k] += plan.strides[k][d];
      if (++index[d] < plan.dims[d]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= plan.strides[k][d] * plan.dims[d];
      index[d] = 0;
    }
  }
}

// out[i] = op(a[i'], b[i'']) over the broadcast `outShape` of aShape and bShape. Equal
// shapes and scalar operands skip the broadcast machinery. `out` may alias `a` when
// aShape == outShape.
template <class TA, class TB, class TOut, class Op>
void broadcastBinary(const TA* a, const Shape& aShape, const TB* b, const Shape& bShape, TOut* out,
                     const Shape& outShape, Op op) {
  const int64_t n = shapeNumel(outShape);
  const int64_t na = shapeNumel(aShape);
  const int64_t nb = shapeNumel(bShape);
  // Operands with the output's element count can only differ from it by leading 1s.
  if (na == n && nb == n) {
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], b[i]);
    return;
  }
  if (na == n && nb == 1) {
    const TB y = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], y);
    return;
  }
  if (nb == n && na == 1) {
    const TA x = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = op(x, b[i]);
    return;
  }
  auto plan = makeBroadcastPlan<2>(outShape, {&aShape, &bShape});
  forEachBroadcastRow(plan, [&](int64_t o, const std::array<int64_t, 2>& off, int64_t len,
                                const std::array<int64_t, 2>& step) {
    const TA* pa = a + off[0];
    const TB* pb = b + off[1];
    TOut* po = out + o;
    if (step[0] && step[1]) {
      for (int64_t i = 0; i < len; ++i) po[i] = op(pa[i], pb[i]);
    } else if (step[0]) {
      const TB y = *pb;
      for (int64_t i = 0; i < len; ++i) po[i] = op(pa[i], y);
    } else if (step[1]) {
      const TA x = *pa;
      for (int64_t i = 0; i < len; ++i) po[i] = op(x, pb[i]);
    } else {
      const TOut v = op(*pa, *pb);
      for (int64_t i = 0; i < len; ++i) po[i] = v;
    }
  });
}

// out[i] = op(in[i]) over n elements.
template <class TIn, class TOut, class Op>
void mapUnary(const TIn* in, TOut* out, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i) out[i] = op(in[i]);
}

// Y = op(X) elementwise for X of any type in kSet; op takes and returns the compute type
// (float for Half/BFloat16). With kBoolOut the output is bool (IsNaN, IsInf).
template <TypeSet kSet, bool kBoolOut = false, class Op>
Status unaryKernel(KernelContext& ctx, Op op) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  return dispatchTypeSet<kSet>(ctx, x.type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    using TOut = std::conditional_t<kBoolOut, bool, T>;
    Tensor& out = ctx.allocateOutput(0, kBoolOut ? DataType::kBool : x.type(), x.shape());
    mapUnary(x.data<T>(), out.data<TOut>(), x.numel(),
             [&op](T v) { return static_cast<TOut>(op(static_cast<C>(v))); });
    return Status::ok();
  });
}

// The unsigned type integer arithmetic wraps in: C++ leaves signed overflow undefined,
// and small types promote to int, so uint16 * uint16 could overflow int.
template <class C>
using WrapType = std::make_unsigned_t<decltype(C{} + C{})>;

// float -> integer as ONNX Cast does (truncation toward zero). Values outside the target's
// range wrap like numpy's astype through int64; NaN becomes 0. Never undefined behaviour.
template <class To>
To truncateToInteger(double value) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (std::isnan(value)) return To{0};
  if constexpr (std::is_same_v<To, uint64_t>) {
    if (value >= 0) {
      return value >= 2 * kTwo63 ? std::numeric_limits<uint64_t>::max()
                                 : static_cast<uint64_t>(value);
    }
  }
  if (value >= kTwo63) return static_cast<To>(std::numeric_limits<int64_t>::max());
  if (value < -kTwo63) return static_cast<To>(std::numeric_limits<int64_t>::min());
  return static_cast<To>(static_cast<int64_t>(value));  // the conversion truncates
}

// cond ? a : b without a data-dependent branch for float and double. GCC at -O2 compiles
// float selects such as Relu's to a compare-and-jump, which mispredicts on activations of
// random sign (7x slower on 1e6 elements); a bit mask selects in straight-line code.
template <class C>
C selectValue(bool cond, C a, C b) {
  if constexpr (std::is_same_v<C, float> || std::is_same_v<C, double>) {
    using Bits = std::conditional_t<sizeof(C) == 4, uint32_t, uint64_t>;
    const Bits mask = Bits(0) - static_cast<Bits>(cond);
    return std::bit_cast<C>((std::bit_cast<Bits>(a) & mask) | (std::bit_cast<Bits>(b) & ~mask));
  } else {
    return cond ? a : b;
  }
}

}  // namespace kiln::cpu
