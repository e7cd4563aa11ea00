// Reduction kernels: the Reduce* family and ArgMax/ArgMin.
//
// A reduction folds every input element into the output element it maps to. The
// input shape is first collapsed into alternating runs of kept and reduced axes
// (size-1 axes dropped), so the innermost loop always walks a contiguous run:
// either folding it into one accumulator (reduced run) or into a row of
// accumulators (kept run). Accumulators are double for floating types and 64-bit
// integers for integer types, so float32 sums do not drift on long rows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/ops/op_utils.h"
#include "ops/axis_params.h"
#include "ops/reduce_params.h"

namespace kiln::cpu {
namespace {

// A double result stored as the output type. For integer outputs (ReduceLogSum of
// zeros is -inf) an out-of-range or NaN value would be undefined behaviour as a
// plain cast: NaN becomes 0 and the rest is clamped to the type's range.
template <class T>
T fromDouble(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
  }
  return static_cast<T>(v);
}

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// Accumulator type: double for floating types, 64-bit for integers (bool as int64).
template <class T>
using AccType = std::conditional_t<
    !std::is_integral_v<T>, double,
    std::conditional_t<std::is_unsigned_v<T> && !std::is_same_v<T, bool>, uint64_t, int64_t>>;

// The input shape as runs of kept/reduced axes, plus where each run lands in the output.
struct ReducePlan {
  Shape outShape;                   // keepdims applied
  std::vector<int64_t> dims;        // collapsed input dims, innermost last
  std::vector<int64_t> outStrides;  // per collapsed dim; 0 on reduced runs
  int64_t outNumel = 1;
  int64_t count = 1;  // input elements folded into each output element
};

// The axes to reduce (ops/reduce_params.h).
Status resolveReducedAxes(const KernelContext& ctx, bool axesFromInput, int rank,
                          std::vector<bool>* reduced) {
  auto axes = ops::reducedAxes(ctx.node(), axesFromInput, rank,
                               axesFromInput && ctx.hasInput(1) ? &ctx.input(1) : nullptr);
  if (!axes.isOk()) return ctx.error(axes.status().message());
  *reduced = std::move(axes.value());
  return Status::ok();
}

// a * b for dims: 0 when either is 0, else the product saturated at INT64_MAX. An empty
// input may pair a 0 with dims up to the cap (2^40 each), whose plain product overflows
// (UBSan, found by fuzz_onnx_import); the saturated counts then fail the output's size
// check instead of wrapping.
int64_t dimProduct(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a > std::numeric_limits<int64_t>::max() / b) return std::numeric_limits<int64_t>::max();
  return a * b;
}

ReducePlan makePlan(const Shape& in, const std::vector<bool>& reduced, bool keepDims) {
  ReducePlan plan;
  std::vector<bool> runReduced;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) {
      plan.count = dimProduct(plan.count, in[d]);
      if (keepDims) plan.outShape.push_back(1);
    } else {
      plan.outShape.push_back(in[d]);
      plan.outNumel = dimProduct(plan.outNumel, in[d]);
    }
    if (in[d] == 1) continue;  // contributes nothing to the walk
    if (!runReduced.empty() && runReduced.back() == reduced[d]) {
      plan.dims.back() = dimProduct(plan.dims.back(), in[d]);
    } else {
      plan.dims.push_back(in[d]);
      runReduced.push_back(reduced[d]);
    }
  }
  if (plan.dims.empty()) {
    plan.dims.push_back(1);
    runReduced.push_back(false);
  }
  plan.outStrides.assign(plan.dims.size(), 0);
  int64_t stride = 1;
  for (int i = static_cast<int>(plan.dims.size()) - 1; i >= 0; --i) {
    if (runReduced[i]) continue;
    plan.outStrides[i] = stride;
    stride = dimProduct(stride, plan.dims[i]);
  }
  return plan;
}

// Calls fold(acc[o], value, o) for every input element, o being its output offset.
template <class T, class Acc, class Fold>
void foldInput(const T* x, const ReducePlan& plan, Acc* acc, Fold fold) {
  const int outerRank = static_cast<int>(plan.dims.size()) - 1;
  const int64_t inner = plan.dims.back();
  const bool innerKept = plan.outStrides.back() != 0;
  int64_t total = 1;
  for (int64_t d : plan.dims) total = dimProduct(total, d);
  if (total == 0) return;
  std::vector<int64_t> index(outerRank, 0);
  int64_t o = 0;
  for (int64_t base = 0; base < total; base += inner) {
    const T* row = x + base;
    if (innerKept) {
      for (int64_t i = 0; i < inner; ++i) fold(acc[o + i], static_cast<Acc>(row[i]), o + i);
    } else {
      Acc a = acc[o];
      for (int64_t i = 0; i < inner; ++i) fold(a, static_cast<Acc>(row[i]), o);
      acc[o] = a;
    }
    for (int d = outerRank - 1; d >= 0; --d) {  // odometer over the outer runs
      o += plan.outStrides[d];
      if (++index[d] < plan.dims[d]) break;
      o -= plan.outStrides[d] * plan.dims[d];
      index[d] = 0;
    }
  }
}

// Integer sums and products wrap like the element type instead of overflowing (UB).
template <class Acc>
Acc wrapAdd(Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc>)
    return static_cast<Acc>(uint64_t(a) + uint64_t(b));
  else
    return a + b;
}
template <class Acc>
Acc wrapMul(Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc>)
    return static_cast<Acc>(uint64_t(a) * uint64_t(b));
  else
    return a * b;
}

// The value an empty reduction yields for Max (lowest) and Min (highest).
template <class T, class Acc>
Acc lowestValue() {
  if constexpr (!std::is_integral_v<T>)
    return -std::numeric_limits<double>::infinity();
  else
    return static_cast<Acc>(std::numeric_limits<T>::lowest());
}
template <class T, class Acc>
Acc highestValue() {
  if constexpr (!std::is_integral_v<T>)
    return std::numeric_limits<double>::infinity();
  else
    return static_cast<Acc>(std::numeric_limits<T>::max());
}

// log(sum(exp(x))) shifted by the largest finite value of each output, so large
// inputs do not overflow; infinities pass through exp/log unchanged.
void logSumExp(const double* x, const ReducePlan& plan, double* out) {
  std::vector<double> shift(plan.outNumel, -std::numeric_limits<double>::infinity());
  foldInput(x, plan, shift.data(), [](double& a, double v, int64_t) {
    if (std::isfinite(v) && v > a) a = v;
  });
  for (double& s : shift) s = std::isfinite(s) ? s : 0.0;
  std::fill(out, out + plan.outNumel, 0.0);
  const double* sh = shift.data();
  foldInput(x, plan, out, [sh](double& a, double v, int64_t o) { a += std::exp(v - sh[o]); });
  for (int64_t o = 0; o < plan.outNumel; ++o) out[o] = std::log(out[o]) + shift[o];
}

template <class T>
Status reduceTyped(ReduceKind kind, const Tensor& input, const ReducePlan& plan, Tensor* output) {
  using Acc = AccType<T>;
  const T* x = input.data<T>();
  std::vector<Acc> acc(plan.outNumel);
  auto run = [&](Acc init, auto fold) {
    std::fill(acc.begin(), acc.end(), init);
    foldInput(x, plan, acc.data(), fold);
  };
  auto sum = [](Acc& a, Acc v, int64_t) { a = wrapAdd(a, v); };
  auto sumSquares = [](Acc& a, Acc v, int64_t) { a = wrapAdd(a, wrapMul(v, v)); };
  switch (kind) {
    case ReduceKind::kSum:
    case ReduceKind::kMean:
    case ReduceKind::kLogSum:
      run(Acc(0), sum);
      break;
    case ReduceKind::kSumSquare:
    case ReduceKind::kL2:
      run(Acc(0), sumSquares);
      break;
    case ReduceKind::kProd:
      run(Acc(1), [](Acc& a, Acc v, int64_t) { a = wrapMul(a, v); });
      break;
    case ReduceKind::kL1:
      run(Acc(0), [](Acc& a, Acc v, int64_t) {
        if constexpr (std::is_unsigned_v<Acc>)
          a += v;
        else
          a = wrapAdd(a, v < 0 ? Acc(0) - v : v);
      });
      break;
    case ReduceKind::kMax:  // `v != v` keeps a NaN once seen, as numpy's maximum does
      run(lowestValue<T, Acc>(), [](Acc& a, Acc v, int64_t) {
        if (v > a || v != v) a = v;
      });
      break;
    case ReduceKind::kMin:
      run(highestValue<T, Acc>(), [](Acc& a, Acc v, int64_t) {
        if (v < a || v != v) a = v;
      });
      break;
    case ReduceKind::kLogSumExp:
      // The kernel widens every input type to double before getting here.
      if constexpr (!std::is_same_v<T, double>)
        return unsupported("ReduceLogSumExp on a narrow type");
      else
        logSumExp(x, plan, acc.data());
      break;
  }
  T* y = output->data<T>();
  const int64_t n = plan.count;
  for (int64_t o = 0; o < plan.outNumel; ++o) {
    const Acc a = acc[o];
    switch (kind) {
      case ReduceKind::kMean:
        if constexpr (std::is_integral_v<Acc>)
          y[o] = static_cast<T>(n == 0 ? Acc(0) : a / Acc(n));
        else
          y[o] = static_cast<T>(a / static_cast<double>(n));  // empty: 0/0 = NaN
        break;
      case ReduceKind::kL2:
        y[o] = fromDouble<T>(std::sqrt(static_cast<double>(a)));
        break;
      case ReduceKind::kLogSum:
        y[o] = fromDouble<T>(std::log(static_cast<double>(a)));
        break;
      default:
        y[o] = static_cast<T>(a);
        break;
    }
  }
  return Status::ok();
}

const char* reduceName(ReduceKind kind) {
  static const char* const kNames[] = {
      "ReduceSum", "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",
      "ReduceL1",  "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  return kNames[static_cast<int>(kind)];
}

template <ReduceKind kKind>
Status reduceKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& input = ctx.input(0);
  // ReduceSum took axes as an input from opset 13, the others from opset 18.
  const bool axesFromInput = ctx.opset() >= (kKind == ReduceKind::kSum ? 13 : 18);
  std::vector<bool> reduced;
  KILN_RETURN_IF_ERROR(resolveReducedAxes(ctx, axesFromInput, input.rank(), &reduced));
  const bool keepDims = ctx.node().attrInt("keepdims", 1) != 0;
  const ReducePlan plan = makePlan(input.shape(), reduced, keepDims);

  const DataType type = input.type();
  if (type == DataType::kBool && kKind != ReduceKind::kMax && kKind != ReduceKind::kMin) {
    return ctx.unsupported(std::string(reduceName(kKind)) + " on bool input");
  }
  if (kKind == ReduceKind::kLogSumExp && type != DataType::kFloat64) {
    // Computed in double throughout; the result rounds once to the input type.
    if (!isFloatingPoint(type) && !isInteger(type)) {
      return ctx.unsupported("ReduceLogSumExp on " + std::string(dataTypeName(type)));
    }
    const Tensor wide = castTensor(input, DataType::kFloat64);
    Tensor result(DataType::kFloat64, plan.outShape);
    KILN_RETURN_IF_ERROR(reduceTyped<double>(kKind, wide, plan, &result));
    ctx.setOutput(0, castTensor(result, type));
    return Status::ok();
  }
  Tensor& out = ctx.allocateOutput(0, type, plan.outShape);
  Status status = dispatchAllTypes(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return reduceTyped<T>(kKind, input, plan, &out);
  });
  return status.isOk() ? status
                       : ctx.unsupported(reduceName(kKind) + std::string(": ") + status.message());
}

// ---- ArgMax / ArgMin ----------------------------------------------------------

// Index of the best element along the axis for each (outer, inner) position. Rows
// are scanned in memory order with one running best per inner position.
template <class T, bool kMax>
void argReduce(const T* x, int64_t outer, int64_t n, int64_t inner, bool lastIndex, int64_t* y) {
  using C = ComputeType<T>;
  std::vector<C> best(inner);
  for (int64_t o = 0; o < outer; ++o) {
    const T* block = x + o * n * inner;
    int64_t* idx = y + o * inner;
    for (int64_t i = 0; i < inner; ++i) {
      best[i] = static_cast<C>(block[i]);
      idx[i] = 0;
    }
    for (int64_t k = 1; k < n; ++k) {
      const T* row = block + k * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const C v = static_cast<C>(row[i]);
        const bool better = kMax ? (lastIndex ? v >= best[i] : v > best[i])
                                 : (lastIndex ? v <= best[i] : v < best[i]);
        if (better) {
          best[i] = v;
          idx[i] = k;
        }
      }
    }
  }
}

template <bool kMax>
Status argKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& input = ctx.input(0);
  const int64_t rank = input.rank();
  auto axisOr = ops::axisAttribute(ctx.node(), 0, rank, std::max<int64_t>(rank - 1, 0));
  if (!axisOr.isOk()) return ctx.error(axisOr.status().message());
  const int64_t axis = *axisOr;
  const bool keepDims = ctx.node().attrInt("keepdims", 1) != 0;
  const bool lastIndex = ctx.node().attrInt("select_last_index", 0) != 0;
  const Shape& shape = input.shape();
  const ops::AxisSplit split = ops::splitAround(shape, axis);
  const int64_t outer = split.outer, n = split.n, inner = split.inner;
  const Shape outShape = ops::shapeWithoutAxis(shape, axis, keepDims);
  if (n == 0 && outer * inner > 0) return ctx.error("cannot take the arg of an empty axis");
  Tensor& out = ctx.allocateOutput(0, DataType::kInt64, outShape);
  if (outer * inner == 0) return Status::ok();
  Status status = dispatchAllTypes(input.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    argReduce<T, kMax>(input.data<T>(), outer, n, inner, lastIndex, out.data<int64_t>());
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

}  // namespace

void registerReduceKernels(KernelRegistry& registry) {
  // One kernel per op; each picks the axes attribute or input by opset itself.
  registry.add("ReduceSum", 1, 1000, &reduceKernel<ReduceKind::kSum>);
  registry.add("ReduceMean", 1, 1000, &reduceKernel<ReduceKind::kMean>);
  registry.add("ReduceMax", 1, 1000, &reduceKernel<ReduceKind::kMax>);
  registry.add("ReduceMin", 1, 1000, &reduceKernel<ReduceKind::kMin>);
  registry.add("ReduceProd", 1, 1000, &reduceKernel<ReduceKind::kProd>);
  registry.add("ReduceL1", 1, 1000, &reduceKernel<ReduceKind::kL1>);
  registry.add("ReduceL2", 1, 1000, &reduceKernel<ReduceKind::kL2>);
  registry.add("ReduceLogSum", 1, 1000, &reduceKernel<ReduceKind::kLogSum>);
  registry.add("ReduceLogSumExp", 1, 1000, &reduceKernel<ReduceKind::kLogSumExp>);
  registry.add("ReduceSumSquare", 1, 1000, &reduceKernel<ReduceKind::kSumSquare>);
  registry.add("ArgMax", 1, 1000, &argKernel<true>);
  registry.add("ArgMin", 1, 1000, &argKernel<false>);
}

}  // namespace kiln::cpu
