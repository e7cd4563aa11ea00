// Elementwise kernels beyond two same-shaped operands: the variadic Max, Min, Sum and Mean
// (all inputs broadcast together), PRelu (slope broadcast to X only) and Where (three-way
// broadcast, strings included).
#include <algorithm>
#include <cmath>
#include <string>

#include "backends/cpu/ops/elementwise.h"

namespace kiln::cpu {
namespace {

template <class C>
bool isNan(C x) {
  if constexpr (std::is_floating_point_v<C>)
    return std::isnan(x);
  else
    return false;
}

// Max and Min propagate NaN from either side, as numpy's maximum/minimum do.
struct MaxOp {
  template <class C>
  C operator()(C x, C y) const {
    return selectValue((x >= y) | isNan(x), x, y);
  }
};
struct MinOp {
  template <class C>
  C operator()(C x, C y) const {
    return selectValue((x <= y) | isNan(x), x, y);
  }
};
struct SumOp {
  template <class C>
  C operator()(C x, C y) const {
    return x + y;
  }
};

// Checks that all inputs are present and of one type; *shape is their joint broadcast.
Status prepareVariadic(KernelContext& ctx, Shape* shape) {
  const size_t count = ctx.inputCount();
  if (count == 0) return ctx.error("needs at least one input");
  KILN_RETURN_IF_ERROR(ctx.requireInputs(count));
  const DataType type = ctx.input(0).type();
  *shape = ctx.input(0).shape();
  for (size_t i = 1; i < count; ++i) {
    const Tensor& in = ctx.input(i);
    if (in.type() != type) {
      return ctx.error("input " + std::to_string(i) + " has type " + dataTypeName(in.type()) +
                       " but input 0 has " + dataTypeName(type));
    }
    Shape next;
    KILN_RETURN_IF_ERROR(broadcastOrError(ctx, *shape, in.shape(), &next));
    *shape = next;
  }
  return Status::ok();
}

// Folds op over all inputs left to right, accumulating in the output; Mean divides at the end.
template <TypeSet kSet, class Op>
Status variadicKernel(KernelContext& ctx, Op op, bool mean) {
  Shape shape;
  KILN_RETURN_IF_ERROR(prepareVariadic(ctx, &shape));
  const size_t count = ctx.inputCount();
  const Tensor& first = ctx.input(0);
  return dispatchTypeSet<kSet>(ctx, first.type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    auto apply = [op](T x, T y) { return static_cast<T>(op(C(x), C(y))); };
    Tensor& out = ctx.allocateOutput(0, first.type(), shape);
    T* acc = out.data<T>();
    if (count == 1) {
      std::copy(first.data<T>(), first.data<T>() + first.numel(), acc);
    } else {
      const Tensor& second = ctx.input(1);
      broadcastBinary(first.data<T>(), first.shape(), second.data<T>(), second.shape(), acc, shape,
                      apply);
    }
    for (size_t i = 2; i < count; ++i) {
      const Tensor& in = ctx.input(i);
      broadcastBinary(acc, shape, in.data<T>(), in.shape(), acc, shape, apply);
    }
    if (mean) {
      const C n = static_cast<C>(count);
      mapUnary(acc, acc, out.numel(), [n](T x) { return static_cast<T>(C(x) / n); });
    }
    return Status::ok();
  });
}

Status maxKernel(KernelContext& ctx) {
  return variadicKernel<TypeSet::kNumeric>(ctx, MaxOp{}, false);
}
Status minKernel(KernelContext& ctx) {
  return variadicKernel<TypeSet::kNumeric>(ctx, MinOp{}, false);
}
Status sumKernel(KernelContext& ctx) {
  return variadicKernel<TypeSet::kFloat>(ctx, SumOp{}, false);
}
Status meanKernel(KernelContext& ctx) {
  return variadicKernel<TypeSet::kFloat>(ctx, SumOp{}, true);
}

// PRelu: y = x < 0 ? slope * x : x, with slope broadcast to X's shape (never the reverse).
Status preluKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const Tensor& slope = ctx.input(1);
  KILN_RETURN_IF_ERROR(checkType(ctx, "input X", x.type(), TypeSet::kNumeric));
  if (slope.type() != x.type()) return ctx.error("input slope must have the type of X");
  Shape shape;
  KILN_RETURN_IF_ERROR(broadcastOrError(ctx, x.shape(), slope.shape(), &shape));
  if (shape != x.shape()) {
    return ctx.error("slope shape " + shapeToString(slope.shape()) +
                     " does not broadcast to X shape " + shapeToString(x.shape()));
  }
  return dispatchTypeSet<TypeSet::kNumeric>(ctx, x.type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    Tensor& out = ctx.allocateOutput(0, x.type(), shape);
    broadcastBinary(x.data<T>(), x.shape(), slope.data<T>(), slope.shape(), out.data<T>(), shape,
                    [](T v, T s) -> T {
                      if constexpr (kIsInteger<C>) {
                        if (!(v < 0)) return v;
                        return static_cast<T>(WrapType<C>(v) * WrapType<C>(s));
                      } else {
                        return static_cast<T>(selectValue(C(v) < C(0), C(v) * C(s), C(v)));
                      }
                    });
    return Status::ok();
  });
}

// cond ? x : y, branch-free for float and double (masks are data-dependent).
template <class T>
T pick(bool cond, const T& x, const T& y) {
  if constexpr (std::is_floating_point_v<T>)
    return selectValue(cond, x, y);
  else
    return cond ? x : y;
}

// out = cond ? x : y over the broadcast of all three; T may be std::string.
template <class T>
void whereLoop(const Tensor& cond, const T* x, const Shape& xShape, const T* y, const Shape& yShape,
               T* out, const Shape& shape) {
  const bool* c = cond.data<bool>();
  const int64_t n = shapeNumel(shape);
  if (cond.numel() == n && shapeNumel(xShape) == n && shapeNumel(yShape) == n) {
    for (int64_t i = 0; i < n; ++i) out[i] = pick(c[i], x[i], y[i]);
    return;
  }
  auto plan = makeBroadcastPlan<3>(shape, {&cond.shape(), &xShape, &yShape});
  forEachBroadcastRow(plan, [&](int64_t o, const std::array<int64_t, 3>& off, int64_t len,
                                const std::array<int64_t, 3>& step) {
    const bool* pc = c + off[0];
    const T* px = x + off[1];
    const T* py = y + off[2];
    for (int64_t i = 0; i < len; ++i) {
      out[o + i] = pick(pc[i * step[0]], px[i * step[1]], py[i * step[2]]);
    }
  });
}

Status whereKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  const Tensor& cond = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (cond.type() != DataType::kBool) return ctx.error("input condition must be bool");
  if (x.type() != y.type()) return ctx.error("inputs X and Y must have the same type");
  Shape partial;
  Shape shape;
  KILN_RETURN_IF_ERROR(broadcastOrError(ctx, cond.shape(), x.shape(), &partial));
  KILN_RETURN_IF_ERROR(broadcastOrError(ctx, partial, y.shape(), &shape));
  if (x.type() == DataType::kString) {
    Tensor& out = ctx.allocateOutput(0, x.type(), shape);
    whereLoop(cond, x.strings().data(), x.shape(), y.strings().data(), y.shape(),
              out.strings().data(), shape);
    return Status::ok();
  }
  return dispatchTypeSet<TypeSet::kAll>(ctx, x.type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    Tensor& out = ctx.allocateOutput(0, x.type(), shape);
    whereLoop(cond, x.data<T>(), x.shape(), y.data<T>(), y.shape(), out.data<T>(), shape);
    return Status::ok();
  });
}

}  // namespace

void registerVariadicKernels(KernelRegistry& registry) {
  // Opsets 1-7 of these required equal shapes; broadcasting them too is a superset.
  registry.add("Max", 1, 1000, &maxKernel);
  registry.add("Min", 1, 1000, &minKernel);
  registry.add("Sum", 1, 1000, &sumKernel);
  registry.add("Mean", 1, 1000, &meanKernel);
  registry.add("PRelu", 7, 1000, &preluKernel);
  registry.add("Where", 9, 1000, &whereKernel);
}

}  // namespace kiln::cpu
