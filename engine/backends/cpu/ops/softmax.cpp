// Softmax, LogSoftmax and Hardmax.
//
// Before opset 13 these ops coerce the input to 2-D [prod(d[:axis]), prod(d[axis:])]
// and normalize each row (default axis 1); from opset 13 they normalize along the
// single axis (default -1). Both reduce to "rows of n elements, `inner` apart":
// the 2-D form is the case inner = 1.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/op_utils.h"
#include "ops/axis_params.h"

namespace kiln::cpu {
namespace {

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

// Normalizes one row in place. Subtracting the row maximum keeps exp() in range
// for large inputs (test_softmax_large_number).
template <class C>
void normalizeRow(C* row, int64_t n, SoftmaxKind kind) {
  if (kind == SoftmaxKind::kHardmax) {
    int64_t best = 0;  // the first maximum wins ties
    for (int64_t i = 1; i < n; ++i) {
      if (row[i] > row[best]) best = i;
    }
    for (int64_t i = 0; i < n; ++i) row[i] = C(i == best ? 1 : 0);
    return;
  }
  C maxValue = row[0];
  for (int64_t i = 1; i < n; ++i) maxValue = std::max(maxValue, row[i]);
  double sum = 0.0;
  if (kind == SoftmaxKind::kSoftmax) {
    for (int64_t i = 0; i < n; ++i) {
      row[i] = std::exp(row[i] - maxValue);
      sum += row[i];
    }
    const C scale = static_cast<C>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) row[i] *= scale;
  } else {
    for (int64_t i = 0; i < n; ++i) sum += std::exp(row[i] - maxValue);
    // (x - max) - log(sum), not x - (max + log(sum)): the latter rounds away the
    // small log term when max is large.
    const C logSum = static_cast<C>(std::log(sum));
    for (int64_t i = 0; i < n; ++i) row[i] = (row[i] - maxValue) - logSum;
  }
}

// Rows of `n` elements spaced `inner` apart: contiguous rows are processed in the
// output buffer directly, strided ones through a gathered copy.
template <class T>
void softmaxTyped(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, SoftmaxKind kind) {
  using C = ComputeType<T>;
  constexpr bool kInPlace = std::is_same_v<C, T>;
  std::vector<C> buffer(kInPlace && inner == 1 ? 0 : n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      if constexpr (kInPlace) {
        if (inner == 1) {
          std::copy(x + base, x + base + n, y + base);
          normalizeRow(y + base, n, kind);
          continue;
        }
      }
      for (int64_t k = 0; k < n; ++k) buffer[k] = static_cast<C>(x[base + k * inner]);
      normalizeRow(buffer.data(), n, kind);
      for (int64_t k = 0; k < n; ++k) y[base + k * inner] = static_cast<T>(buffer[k]);
    }
  }
}

template <SoftmaxKind kKind>
Status softmaxKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& input = ctx.input(0);
  const int64_t rank = input.rank();
  const bool coerce2d = ctx.opset() < 13;
  // Opset < 13 allows axis == rank (the 2-D form's column count is then 1).
  auto axisOr = ops::axisAttribute(ctx.node(), coerce2d ? 1 : -1, rank,
                                   std::max<int64_t>(coerce2d ? rank : rank - 1, 0));
  if (!axisOr.isOk()) return ctx.error(axisOr.status().message());
  const Shape& shape = input.shape();
  const ops::AxisSplit split = ops::splitAround(shape, *axisOr, coerce2d);
  const int64_t outer = split.outer, n = split.n, inner = split.inner;
  Tensor& out = ctx.allocateOutput(0, input.type(), shape);
  if (input.numel() == 0) return Status::ok();
  Status status = dispatchFloatTypes(input.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmaxTyped<T>(input.data<T>(), out.data<T>(), outer, n, inner, kKind);
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

}  // namespace

void registerSoftmaxKernels(KernelRegistry& registry) {
  // Each kernel branches on opset 13 (2-D coercion before, single axis after).
  registry.add("Softmax", 1, 1000, &softmaxKernel<SoftmaxKind::kSoftmax>);
  registry.add("LogSoftmax", 1, 1000, &softmaxKernel<SoftmaxKind::kLogSoftmax>);
  registry.add("Hardmax", 1, 1000, &softmaxKernel<SoftmaxKind::kHardmax>);
}

}  // namespace kiln::cpu
