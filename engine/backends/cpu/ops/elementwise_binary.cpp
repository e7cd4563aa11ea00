// Binary elementwise kernels with numpy broadcasting: arithmetic (Add, Sub, Mul, Div,
// Mod, Pow), bit shifts and bitwise ops, logical ops and comparisons. The variadic ops
// (Max, Min, Sum, Mean), PRelu and Where are in elementwise_variadic.cpp.
#include <cmath>
#include <type_traits>
#include <string>

#include "backends/cpu/ops/elementwise.h"

namespace kiln::cpu {
namespace {

// ---- Operators. Each takes and returns the compute type C (float for Half/BFloat16).
// Integer arithmetic wraps (ONNX follows numpy), computed in unsigned types to stay defined.

struct AddOp {
  template <class C>
  C operator()(C x, C y) const {
    if constexpr (kIsInteger<C>)
      return static_cast<C>(WrapType<C>(x) + WrapType<C>(y));
    else
      return x + y;
  }
};
struct SubOp {
  template <class C>
  C operator()(C x, C y) const {
    if constexpr (kIsInteger<C>)
      return static_cast<C>(WrapType<C>(x) - WrapType<C>(y));
    else
      return x - y;
  }
};
struct MulOp {
  template <class C>
  C operator()(C x, C y) const {
    if constexpr (kIsInteger<C>)
      return static_cast<C>(WrapType<C>(x) * WrapType<C>(y));
    else
      return x * y;
  }
};
// Integer division truncates toward zero as in C; zero divisors are rejected beforehand and
// x / -1 is a wrapping negation (INT_MIN / -1 traps on x86).
struct DivOp {
  template <class C>
  C operator()(C x, C y) const {
    if constexpr (kIsInteger<C> && std::is_signed_v<C>) {
      if (y == -1) return static_cast<C>(WrapType<C>(0) - WrapType<C>(x));
    }
    return static_cast<C>(x / y);
  }
};

// Mod with fmod=0: the result takes the divisor's sign (Python's %); with fmod=1 it takes
// the dividend's (C's fmod and %).
template <bool kFmod>
struct ModOp {
  template <class C>
  C operator()(C x, C y) const {
    C r;
    if constexpr (kIsInteger<C>) {
      if constexpr (std::is_signed_v<C>) {
        if (y == -1) return 0;
      }
      r = static_cast<C>(x % y);
    } else {
      r = std::fmod(x, y);
    }
    if constexpr (!kFmod && std::is_signed_v<C>) {
      if (r != 0 && ((r < 0) != (y < 0))) r = static_cast<C>(r + y);
    }
    return r;
  }
};

struct BitAndOp {
  template <class C>
  C operator()(C x, C y) const {
    return static_cast<C>(x & y);
  }
};
struct BitOrOp {
  template <class C>
  C operator()(C x, C y) const {
    return static_cast<C>(x | y);
  }
};
struct BitXorOp {
  template <class C>
  C operator()(C x, C y) const {
    return static_cast<C>(x ^ y);
  }
};
// Shifts by the full width or more give 0 instead of undefined behaviour.
template <bool kLeft>
struct ShiftOp {
  template <class C>
  C operator()(C x, C y) const {
    // Shifts outside [0, width) are defined (opset 26 signed semantics): left gives 0,
    // right gives the sign fill. Signed left shifts go through the unsigned type.
    using U = std::make_unsigned_t<C>;
    if (y < 0 || y >= static_cast<C>(sizeof(C) * 8)) return kLeft ? C(0) : (x < 0 ? C(-1) : C(0));
    if (kLeft) return static_cast<C>(static_cast<U>(static_cast<U>(x) << y));
    return static_cast<C>(x >> y);
  }
};

struct EqualOp {
  template <class C>
  bool operator()(const C& x, const C& y) const {
    return x == y;
  }
};
struct LessOp {
  template <class C>
  bool operator()(C x, C y) const {
    return x < y;
  }
};
struct LessOrEqualOp {
  template <class C>
  bool operator()(C x, C y) const {
    return x <= y;
  }
};
struct GreaterOp {
  template <class C>
  bool operator()(C x, C y) const {
    return x > y;
  }
};
struct GreaterOrEqualOp {
  template <class C>
  bool operator()(C x, C y) const {
    return x >= y;
  }
};

// ---- Drivers.

// Checks two same-typed inputs from `allowed` and computes their broadcast shape.
Status prepareBinary(KernelContext& ctx, TypeSet allowed, Shape* shape) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  KILN_RETURN_IF_ERROR(checkType(ctx, "input A", a.type(), allowed));
  if (a.type() != b.type()) {
    return ctx.error(std::string("inputs A and B differ in type (") + dataTypeName(a.type()) +
                     " vs " + dataTypeName(b.type()) + ")");
  }
  return broadcastOrError(ctx, a.shape(), b.shape(), shape);
}

// out = op(a, b) in the compute type of T, for every T in `allowed`; TOut is T or bool.
template <bool kBoolOut, TypeSet kSet, class Op>
Status binaryKernel(KernelContext& ctx, Op op) {
  Shape shape;
  KILN_RETURN_IF_ERROR(prepareBinary(ctx, kSet, &shape));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  return dispatchTypeSet<kSet>(ctx, a.type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    using TOut = std::conditional_t<kBoolOut, bool, T>;
    Tensor& out = ctx.allocateOutput(0, kBoolOut ? DataType::kBool : a.type(), shape);
    broadcastBinary(a.data<T>(), a.shape(), b.data<T>(), b.shape(), out.data<TOut>(), shape,
                    [op](T x, T y) { return static_cast<TOut>(op(C(x), C(y))); });
    return Status::ok();
  });
}

// Integer Div and Mod reject zero divisors: a Status, not a SIGFPE.
Status checkNoZeroDivisor(KernelContext& ctx) {
  const Tensor& b = ctx.input(1);
  if (!isInteger(b.type())) return Status::ok();
  for (int64_t i = 0; i < b.numel(); ++i) {
    if (b.valueAsInt64(i) == 0)
      return ctx.error("integer division by zero (B[" + std::to_string(i) + "])");
  }
  return Status::ok();
}

Status addKernel(KernelContext& ctx) {
  return binaryKernel<false, TypeSet::kNumeric>(ctx, AddOp{});
}
Status subKernel(KernelContext& ctx) {
  return binaryKernel<false, TypeSet::kNumeric>(ctx, SubOp{});
}
Status mulKernel(KernelContext& ctx) {
  return binaryKernel<false, TypeSet::kNumeric>(ctx, MulOp{});
}

Status divKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  KILN_RETURN_IF_ERROR(checkNoZeroDivisor(ctx));
  return binaryKernel<false, TypeSet::kNumeric>(ctx, DivOp{});
}

Status modKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  KILN_RETURN_IF_ERROR(checkNoZeroDivisor(ctx));
  const int64_t fmod = ctx.node().attrInt("fmod", 0);
  if (fmod != 0 && fmod != 1) return ctx.error("attribute fmod must be 0 or 1");
  if (fmod) return binaryKernel<false, TypeSet::kNumeric>(ctx, ModOp<true>{});
  return binaryKernel<false, TypeSet::kNumeric>(ctx, ModOp<false>{});
}

Status bitShiftKernel(KernelContext& ctx) {
  const std::string direction = ctx.node().attrString("direction", "");
  if (direction == "LEFT") return binaryKernel<false, TypeSet::kInteger>(ctx, ShiftOp<true>{});
  if (direction == "RIGHT") return binaryKernel<false, TypeSet::kInteger>(ctx, ShiftOp<false>{});
  return ctx.error("attribute direction must be LEFT or RIGHT, got '" + direction + "'");
}

Status andKernel(KernelContext& ctx) {
  return binaryKernel<false, TypeSet::kBool>(ctx, BitAndOp{});
}
Status orKernel(KernelContext& ctx) {
  return binaryKernel<false, TypeSet::kBool>(ctx, BitOrOp{});
}
Status xorKernel(KernelContext& ctx) {
  return binaryKernel<false, TypeSet::kBool>(ctx, BitXorOp{});
}
Status bitwiseAndKernel(KernelContext& ctx) {
  return binaryKernel<false, TypeSet::kInteger>(ctx, BitAndOp{});
}
Status bitwiseOrKernel(KernelContext& ctx) {
  return binaryKernel<false, TypeSet::kInteger>(ctx, BitOrOp{});
}
Status bitwiseXorKernel(KernelContext& ctx) {
  return binaryKernel<false, TypeSet::kInteger>(ctx, BitXorOp{});
}

// Equal also compares strings (opset 19).
Status equalKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  if (ctx.input(0).type() != DataType::kString) {
    return binaryKernel<true, TypeSet::kAll>(ctx, EqualOp{});
  }
  Shape shape;
  KILN_RETURN_IF_ERROR(prepareBinary(ctx, TypeSet::kString, &shape));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& out = ctx.allocateOutput(0, DataType::kBool, shape);
  broadcastBinary(a.strings().data(), a.shape(), b.strings().data(), b.shape(), out.data<bool>(),
                  shape, EqualOp{});
  return Status::ok();
}
Status lessKernel(KernelContext& ctx) {
  return binaryKernel<true, TypeSet::kNumeric>(ctx, LessOp{});
}
Status lessOrEqualKernel(KernelContext& ctx) {
  return binaryKernel<true, TypeSet::kNumeric>(ctx, LessOrEqualOp{});
}
Status greaterKernel(KernelContext& ctx) {
  return binaryKernel<true, TypeSet::kNumeric>(ctx, GreaterOp{});
}
Status greaterOrEqualKernel(KernelContext& ctx) {
  return binaryKernel<true, TypeSet::kNumeric>(ctx, GreaterOrEqualOp{});
}

// ---- Pow: the exponent may have another numeric type than the base (opset 12+).

// Integer powers by squaring, wrapping like numpy; negative exponents truncate 1/x^n.
template <class T>
T integerPow(T base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (exponent & 1) ? -1 : 1;
    }
    return 0;
  }
  using W = WrapType<T>;
  W result = 1;
  W factor = static_cast<W>(base);
  for (uint64_t e = static_cast<uint64_t>(exponent); e != 0; e >>= 1) {
    if (e & 1) result = static_cast<W>(result * factor);
    factor = static_cast<W>(factor * factor);
  }
  return static_cast<T>(result);
}

// Same-typed floating base and exponent: the common x^2 / x^0.5 case in real models.
template <class T>
void powSameFloat(const Tensor& a, const Tensor& b, Tensor& out) {
  using C = ComputeType<T>;
  if (b.numel() == 1 && C(b.data<T>()[0]) == C(2)) {
    mapUnary(a.data<T>(), out.data<T>(), a.numel(),
             [](T x) { return static_cast<T>(C(x) * C(x)); });
    return;
  }
  broadcastBinary(a.data<T>(), a.shape(), b.data<T>(), b.shape(), out.data<T>(), out.shape(),
                  [](T x, T y) { return static_cast<T>(std::pow(C(x), C(y))); });
}

// Any base type with the exponent read as E (int64 for integer exponents, else double).
template <class T, class E>
void powMixed(const Tensor& a, const std::vector<E>& exponent, const Shape& expShape, Tensor& out) {
  broadcastBinary(a.data<T>(), a.shape(), exponent.data(), expShape, out.data<T>(), out.shape(),
                  [](T x, E e) -> T {
                    if constexpr (kIsInteger<T> && std::is_integral_v<E>) {
                      return integerPow(x, e);
                    } else if constexpr (kIsInteger<T>) {
                      return truncateToInteger<T>(std::pow(double(x), double(e)));
                    } else {
                      return static_cast<T>(std::pow(double(x), double(e)));
                    }
                  });
}

Status powKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  KILN_RETURN_IF_ERROR(checkType(ctx, "input X", a.type(), TypeSet::kNumeric));
  KILN_RETURN_IF_ERROR(checkType(ctx, "input Y", b.type(), TypeSet::kNumeric));
  Shape shape;
  KILN_RETURN_IF_ERROR(broadcastOrError(ctx, a.shape(), b.shape(), &shape));
  const bool sameFloat = a.type() == b.type() && inTypeSet(a.type(), TypeSet::kFloat);
  const bool intExponent = isInteger(b.type());
  return dispatchTypeSet<TypeSet::kNumeric>(ctx, a.type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    Tensor& out = ctx.allocateOutput(0, a.type(), shape);
    if constexpr (kIsFloat<T>) {
      if (sameFloat) {
        powSameFloat<T>(a, b, out);
        return Status::ok();
      }
    }
    if (intExponent) {
      std::vector<int64_t> e(b.numel());
      for (int64_t i = 0; i < b.numel(); ++i) e[i] = b.valueAsInt64(i);
      powMixed<T>(a, e, b.shape(), out);
    } else {
      std::vector<double> e(b.numel());
      for (int64_t i = 0; i < b.numel(); ++i) e[i] = b.valueAsDouble(i);
      powMixed<T>(a, e, b.shape(), out);
    }
    return Status::ok();
  });
}

}  // namespace

void registerElementwiseBinaryKernels(KernelRegistry& registry) {
  // Opsets 1-6 carried a `broadcast` attribute for limited broadcasting; 7 made it numpy.
  registry.add("Add", 7, 1000, &addKernel);
  registry.add("Sub", 7, 1000, &subKernel);
  registry.add("Mul", 7, 1000, &mulKernel);
  registry.add("Div", 7, 1000, &divKernel);
  registry.add("Pow", 7, 1000, &powKernel);
  registry.add("Mod", 10, 1000, &modKernel);
  registry.add("BitShift", 11, 1000, &bitShiftKernel);
  registry.add("And", 7, 1000, &andKernel);
  registry.add("Or", 7, 1000, &orKernel);
  registry.add("Xor", 7, 1000, &xorKernel);
  registry.add("BitwiseAnd", 18, 1000, &bitwiseAndKernel);
  registry.add("BitwiseOr", 18, 1000, &bitwiseOrKernel);
  registry.add("BitwiseXor", 18, 1000, &bitwiseXorKernel);
  registry.add("Equal", 7, 1000, &equalKernel);
  registry.add("Less", 7, 1000, &lessKernel);
  registry.add("LessOrEqual", 12, 1000, &lessOrEqualKernel);
  registry.add("Greater", 7, 1000, &greaterKernel);
  registry.add("GreaterOrEqual", 12, 1000, &greaterOrEqualKernel);
  registerVariadicKernels(registry);
}

bool inTypeSet(DataType type, TypeSet set) {
  switch (type) {
    case DataType::kString:
      return set == TypeSet::kString;
    case DataType::kBool:
      return set == TypeSet::kAll || set == TypeSet::kBool;
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return set == TypeSet::kAll || set == TypeSet::kNumeric || set == TypeSet::kFloat ||
             set == TypeSet::kSigned;
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
      return set == TypeSet::kAll || set == TypeSet::kNumeric || set == TypeSet::kInteger ||
             set == TypeSet::kSigned;
    case DataType::kUInt8:
    case DataType::kUInt16:
    case DataType::kUInt32:
    case DataType::kUInt64:
      return set == TypeSet::kAll || set == TypeSet::kNumeric || set == TypeSet::kInteger ||
             set == TypeSet::kUnsigned;
    default:
      return false;
  }
}

Status checkType(const KernelContext& ctx, const char* what, DataType type, TypeSet set) {
  if (inTypeSet(type, set)) return Status::ok();
  return ctx.unsupported(std::string(what) + " has data type " + dataTypeName(type) +
                         ", which this operator does not take");
}

Status broadcastOrError(const KernelContext& ctx, const Shape& a, const Shape& b, Shape* out) {
  if (broadcastShapes(a, b, out).isOk()) return Status::ok();
  return ctx.error("shapes " + shapeToString(a) + " and " + shapeToString(b) + " do not broadcast");
}

}  // namespace kiln::cpu
