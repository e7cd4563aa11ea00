// Kernels that scan or order values along one axis: CumSum and TopK.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "backends/cpu/ops/op_utils.h"

namespace kiln::cpu {
namespace {

// A tensor's shape split around `axis` into outer * n * inner elements.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit splitAt(const Shape& shape, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis)
      s.outer *= shape[d];
    else if (d == axis)
      s.n = shape[d];
    else
      s.inner *= shape[d];
  }
  return s;
}

// Reads a one-element integer input (CumSum's axis, TopK's K).
Status readScalarInput(const KernelContext& ctx, size_t i, const char* name, int64_t* out) {
  const Tensor& t = ctx.input(i);
  if (t.type() != DataType::kInt64 && t.type() != DataType::kInt32) {
    return ctx.error(std::string("input '") + name + "' must be int32 or int64, got " +
                     dataTypeName(t.type()));
  }
  if (t.numel() != 1 || t.rank() > 1) {
    return ctx.error(std::string("input '") + name + "' must hold one value, got shape " +
                     shapeToString(t.shape()));
  }
  *out = t.valueAsInt64(0);
  return Status::ok();
}

// ---- CumSum --------------------------------------------------------------------

// Running sums in double for floating types, wrapping 64-bit for integers.
template <class T>
using SumType = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

template <class T>
void cumSum(const T* x, T* y, const AxisSplit& s, bool exclusive, bool reverse) {
  using Acc = SumType<T>;
  std::vector<Acc> acc(s.inner);
  for (int64_t o = 0; o < s.outer; ++o) {
    std::fill(acc.begin(), acc.end(), Acc(0));
    for (int64_t step = 0; step < s.n; ++step) {
      const int64_t k = reverse ? s.n - 1 - step : step;
      const int64_t base = (o * s.n + k) * s.inner;
      for (int64_t i = 0; i < s.inner; ++i) {
        const Acc v = static_cast<Acc>(x[base + i]);
        if (!exclusive) acc[i] += v;
        y[base + i] = static_cast<T>(acc[i]);
        if (exclusive) acc[i] += v;
      }
    }
  }
}

Status cumSumKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  int64_t axisValue = 0, axis = 0;
  KILN_RETURN_IF_ERROR(readScalarInput(ctx, 1, "axis", &axisValue));
  KILN_RETURN_IF_ERROR(resolveAxis(ctx, axisValue, x.rank(), "input 'axis'", &axis));
  const bool exclusive = ctx.node().attrInt("exclusive", 0) != 0;
  const bool reverse = ctx.node().attrInt("reverse", 0) != 0;
  if (x.type() == DataType::kBool) return ctx.unsupported("CumSum on bool input");
  Tensor& y = ctx.allocateOutput(0, x.type(), x.shape());
  Status status = dispatchAllTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cumSum(x.data<T>(), y.data<T>(), splitAt(x.shape(), axis), exclusive, reverse);
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

// ---- TopK ----------------------------------------------------------------------

// a ranks above b when larger (or smaller with !largest). NaN counts as larger than
// every number, which keeps the order strict-weak. Equal values keep the lower index first.
template <class C>
struct TopKOrder {
  const C* values;
  bool largest;
  bool operator()(int64_t a, int64_t b) const {
    const C va = values[a], vb = values[b];
    const bool nanA = va != va, nanB = vb != vb;
    if (nanA != nanB) return nanA == largest;
    if (nanA) return a < b;
    if (va != vb) return largest ? va > vb : va < vb;
    return a < b;
  }
};

template <class T>
void topK(const T* x, T* values, int64_t* indices, const AxisSplit& s, int64_t k, bool largest) {
  using C = ComputeType<T>;
  std::vector<C> row(s.n);
  std::vector<int64_t> order(s.n);
  const TopKOrder<C> less{row.data(), largest};
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      const int64_t in = o * s.n * s.inner + i;
      for (int64_t j = 0; j < s.n; ++j) row[j] = static_cast<C>(x[in + j * s.inner]);
      std::iota(order.begin(), order.end(), int64_t{0});
      std::partial_sort(order.begin(), order.begin() + k, order.end(), less);
      const int64_t out = o * k * s.inner + i;
      for (int64_t j = 0; j < k; ++j) {
        values[out + j * s.inner] = x[in + order[j] * s.inner];
        indices[out + j * s.inner] = order[j];
      }
    }
}

Status topKKernel(KernelContext& ctx) {
  const bool kFromInput = ctx.opset() >= 10;  // opset 1 had a 'k' attribute
  KILN_RETURN_IF_ERROR(ctx.requireInputs(kFromInput ? 2 : 1));
  const Tensor& x = ctx.input(0);
  int64_t axis = 0, k = ctx.node().attrInt("k", -1);
  KILN_RETURN_IF_ERROR(
      resolveAxis(ctx, ctx.node().attrInt("axis", -1), x.rank(), "attribute 'axis'", &axis));
  if (kFromInput) KILN_RETURN_IF_ERROR(readScalarInput(ctx, 1, "K", &k));
  const AxisSplit s = splitAt(x.shape(), axis);
  if (k < 0 || k > s.n) {
    return ctx.error("k = " + std::to_string(k) + " is outside [0, " + std::to_string(s.n) +
                     "] for axis " + std::to_string(axis) + " of " + shapeToString(x.shape()));
  }
  // 'sorted' = 0 allows any order; sorted output satisfies that too.
  const bool largest = ctx.node().attrInt("largest", 1) != 0;
  Shape outShape = x.shape();
  outShape[axis] = k;
  Tensor& values = ctx.allocateOutput(0, x.type(), outShape);
  Tensor& indices = ctx.allocateOutput(1, DataType::kInt64, outShape);
  Status status = dispatchAllTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported("TopK on bool input");
    } else {
      topK(x.data<T>(), values.data<T>(), indices.data<int64_t>(), s, k, largest);
      return Status::ok();
    }
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

}  // namespace

void registerScanKernels(KernelRegistry& registry) {
  registry.add("CumSum", 11, 1000, &cumSumKernel);
  registry.add("TopK", 1, 1000, &topKKernel);  // branches on opset 10 (K input)
}

}  // namespace kiln::cpu
