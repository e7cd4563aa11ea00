// Kernels whose output size depends on the data: NonZero, Compress, Unique; and
// OneHot, which expands indices into a new axis.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "backends/cpu/ops/data_movement.h"
#include "backends/cpu/ops/selection_ops.h"
#include "kiln/tensor_size.h"

namespace kiln::cpu {
namespace {

// Off everywhere, on where the (normalized) index equals the position along `axis`.
// Indices outside [-depth, depth) give an all-off row, as the spec says.
Status oneHotKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  const Tensor& indices = ctx.input(0);
  const Tensor& values = ctx.input(2);
  if (ctx.input(1).numel() != 1 || ctx.input(1).type() == DataType::kString) {
    return ctx.error("depth must be a numeric scalar");
  }
  if (values.numel() != 2) return ctx.error("values must hold [off_value, on_value]");
  if (indices.type() == DataType::kString) return ctx.error("indices must be numeric");
  // valueAsInt64 truncates a float depth as the cast did, and saturates where the cast of
  // 1e30 or NaN was UB.
  const int64_t depth = ctx.input(1).valueAsInt64(0);
  if (depth < 1) return ctx.error("depth must be positive, got " + std::to_string(depth));
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR_CTX(normalizeAxis(ctx.node().attrInt("axis", -1), indices.rank() + 1, &axis),
                           ctx.node().describe());
  Shape outShape = indices.shape();
  outShape.insert(outShape.begin() + axis, depth);
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, outShape, "output"));
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= indices.shape()[d];
  const int64_t inner = outer == 0 ? 0 : indices.numel() / outer;
  const std::vector<int64_t> idx = indices.toInt64Vector();
  Tensor& out = ctx.allocateOutput(0, values.type(), outShape);
  return dispatchByElementSize(values.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = elementData<T>(out);
    std::fill_n(dst, out.numel(), elementData<T>(values)[0]);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t v = idx[o * inner + i];
        if (v < 0) v += depth;
        if (v >= 0 && v < depth) dst[(o * depth + v) * inner + i] = elementData<T>(values)[1];
      }
    }
    return Status::ok();
  });
}

// Output [rank, count] of the coordinates of non-zero elements, in row-major order.
// A scalar reads as a 1-element vector (numpy's behaviour, and ONNX Runtime's).
Status nonZeroKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& in = ctx.input(0);
  const Shape shape = in.rank() == 0 ? Shape{1} : in.shape();
  std::vector<int64_t> hits;
  KILN_RETURN_IF_ERROR_CTX(
      dispatchAllTypes(in.type(),
                       [&](auto tag) {
                         using T = typename decltype(tag)::type;
                         const T* src = in.data<T>();
                         for (int64_t i = 0; i < in.numel(); ++i) {
                           if (static_cast<ComputeType<T>>(src[i]) != ComputeType<T>(0))
                             hits.push_back(i);
                         }
                         return Status::ok();
                       }),
      ctx.node().describe());
  const int rank = static_cast<int>(shape.size());
  const int64_t count = static_cast<int64_t>(hits.size());
  const std::vector<int64_t> strides = contiguousStrides(shape);
  int64_t* dst = ctx.allocateOutput(0, DataType::kInt64, {rank, count}).data<int64_t>();
  for (int64_t h = 0; h < count; ++h) {
    int64_t rest = hits[h];
    for (int d = 0; d < rank; ++d) {
      dst[d * count + h] = rest / strides[d];
      rest %= strides[d];
    }
  }
  return Status::ok();
}

Status compressKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& in = ctx.input(0);
  const Tensor& condition = ctx.input(1);
  if (condition.rank() != 1 || condition.type() == DataType::kString) {
    return ctx.error("condition must be a 1-D bool tensor");
  }
  const bool hasAxis = ctx.node().hasAttr("axis");
  int64_t axis = 0;
  if (hasAxis) {
    KILN_RETURN_IF_ERROR_CTX(normalizeAxis(ctx.node().attrInt("axis", 0), in.rank(), &axis),
                             ctx.node().describe());
  }
  const int64_t dim = hasAxis ? in.shape()[axis] : in.numel();
  const std::vector<int64_t> flags = condition.toInt64Vector();
  std::vector<int64_t> picked;
  for (int64_t i = 0; i < static_cast<int64_t>(flags.size()); ++i) {
    if (!flags[i]) continue;
    if (i >= dim)
      return ctx.error("condition selects index " + std::to_string(i) + " past the dim " +
                       std::to_string(dim));
    picked.push_back(i);
  }
  Shape outShape = {static_cast<int64_t>(picked.size())};
  int64_t outer = 1, inner = 1;
  if (hasAxis) {
    outShape = in.shape();
    outShape[axis] = static_cast<int64_t>(picked.size());
    for (int64_t d = 0; d < axis; ++d) outer *= in.shape()[d];
    for (int d = static_cast<int>(axis) + 1; d < in.rank(); ++d) inner *= in.shape()[d];
  }
  Tensor& out = ctx.allocateOutput(0, in.type(), outShape);
  return dispatchByElementSize(in.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    gatherBlocks(elementData<T>(in), elementData<T>(out), outer, dim, picked, inner);
    return Status::ok();
  });
}

// Three-way comparison for Unique; NaNs compare equal to each other and above numbers.
template <class T>
int compareValues(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, std::string>) {
    return a < b ? -1 : (b < a ? 1 : 0);
  } else {
    using C = ComputeType<T>;
    const C x = static_cast<C>(a), y = static_cast<C>(b);
    if constexpr (std::is_floating_point_v<C>) {
      const bool nx = std::isnan(x), ny = std::isnan(y);
      if (nx || ny) return nx == ny ? 0 : (nx ? 1 : -1);
    }
    return x < y ? -1 : (y < x ? 1 : 0);
  }
}

// Groups the `n` slices of src ([outer, n, inner]) into distinct values. Fills, per
// unique value in output order, the first index and count, and per slice its unique's
// position. Sorted order is lexicographic over the slice, as numpy.unique does.
template <class T>
void uniqueGroups(const T* src, int64_t outer, int64_t n, int64_t inner, bool sorted,
                  std::vector<int64_t>* firsts, std::vector<int64_t>* counts,
                  std::vector<int64_t>* inverse) {
  auto compareSlices = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int c = compareValues(src[(o * n + a) * inner + i], src[(o * n + b) * inner + i]);
        if (c != 0) return c;
      }
    }
    return 0;
  };
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  // Stable, so each group starts with its first occurrence.
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return compareSlices(a, b) < 0; });
  std::vector<int64_t> groupOf(n);
  for (int64_t k = 0; k < n; ++k) {
    if (k == 0 || compareSlices(order[k - 1], order[k]) != 0) {
      firsts->push_back(order[k]);
      counts->push_back(0);
    }
    groupOf[order[k]] = static_cast<int64_t>(firsts->size()) - 1;
    ++counts->back();
  }
  std::vector<int64_t> position(firsts->size());
  std::iota(position.begin(), position.end(), 0);
  if (!sorted) {  // first-occurrence order instead of value order
    std::vector<int64_t> byFirst(position);
    std::sort(byFirst.begin(), byFirst.end(),
              [&](int64_t a, int64_t b) { return (*firsts)[a] < (*firsts)[b]; });
    std::vector<int64_t> newFirsts, newCounts;
    for (size_t p = 0; p < byFirst.size(); ++p) {
      position[byFirst[p]] = static_cast<int64_t>(p);
      newFirsts.push_back((*firsts)[byFirst[p]]);
      newCounts.push_back((*counts)[byFirst[p]]);
    }
    *firsts = std::move(newFirsts);
    *counts = std::move(newCounts);
  }
  inverse->resize(n);
  for (int64_t j = 0; j < n; ++j) (*inverse)[j] = position[groupOf[j]];
}

template <class F>
Status dispatchComparableTypes(DataType type, F&& f) {
  if (type == DataType::kString) return f(TypeTag<std::string>{});
  return dispatchAllTypes(type, f);
}

void setInt64Output(KernelContext& ctx, size_t i, const std::vector<int64_t>& values) {
  if (!ctx.wantsOutput(i)) return;
  Tensor& out = ctx.allocateOutput(i, DataType::kInt64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), out.data<int64_t>());
}

Status uniqueKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& in = ctx.input(0);
  const bool hasAxis = ctx.node().hasAttr("axis");
  const bool sorted = ctx.node().attrInt("sorted", 1) != 0;
  int64_t axis = 0, outer = 1, inner = 1, n = in.numel();
  if (hasAxis) {
    KILN_RETURN_IF_ERROR_CTX(normalizeAxis(ctx.node().attrInt("axis", 0), in.rank(), &axis),
                             ctx.node().describe());
    n = in.shape()[axis];
    for (int64_t d = 0; d < axis; ++d) outer *= in.shape()[d];
    for (int d = static_cast<int>(axis) + 1; d < in.rank(); ++d) inner *= in.shape()[d];
  }
  // Four int64 index buffers of n entries (order, groups, inverse, ...): held to the tensor
  // cap before any exists. An empty input may still claim 2^40 slices along the axis
  // (found by fuzz_onnx_import: an 8 TiB request).
  KILN_RETURN_IF_ERROR(
      checkTensorSize(DataType::kInt64, {4, n}, ctx.node().describe() + " index buffers"));
  std::vector<int64_t> firsts, counts, inverse;
  return dispatchComparableTypes(in.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = elementData<T>(in);
    uniqueGroups(src, outer, n, inner, sorted, &firsts, &counts, &inverse);
    Shape outShape = {static_cast<int64_t>(firsts.size())};
    if (hasAxis) {
      outShape = in.shape();
      outShape[axis] = static_cast<int64_t>(firsts.size());
    }
    Tensor& out = ctx.allocateOutput(0, in.type(), outShape);
    gatherBlocks(src, elementData<T>(out), outer, n, firsts, inner);
    setInt64Output(ctx, 1, firsts);
    setInt64Output(ctx, 2, inverse);
    setInt64Output(ctx, 3, counts);
    return Status::ok();
  });
}

}  // namespace

void registerSelectionKernels(KernelRegistry& registry) {
  registry.add("OneHot", 9, 1000, &oneHotKernel);
  registry.add("NonZero", 9, 1000, &nonZeroKernel);
  registry.add("Compress", 9, 1000, &compressKernel);
  registry.add("Unique", 11, 1000, &uniqueKernel);
}

}  // namespace kiln::cpu
