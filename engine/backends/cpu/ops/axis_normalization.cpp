// Normalization kernels that rescale along axes without learned parameters:
// LpNormalization (along one axis), MeanVarianceNormalization (over a set of axes)
// and LRN (over a window of neighbouring channels). Registered from
// registerNormalizationKernels (normalization.cpp).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/op_utils.h"
#include "ops/axis_params.h"
#include "ops/normalization_params.h"

namespace kiln::cpu {
namespace {

// ---- LpNormalization -----------------------------------------------------------

template <class T>
void lpNormalize(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, int64_t p) {
  using C = ComputeType<T>;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      double norm = 0.0;
      for (int64_t k = 0; k < n; ++k) {
        const double v = static_cast<double>(x[base + k * inner]);
        norm += p == 1 ? std::abs(v) : v * v;
      }
      if (p == 2) norm = std::sqrt(norm);
      // A zero vector stays zero rather than becoming 0/0 = NaN.
      const C scale = static_cast<C>(norm == 0.0 ? 0.0 : 1.0 / norm);
      for (int64_t k = 0; k < n; ++k) {
        y[base + k * inner] = static_cast<T>(static_cast<C>(x[base + k * inner]) * scale);
      }
    }
}

Status lpNormKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  auto axisOr = ops::axisAttribute(ctx.node(), -1, rank, rank - 1);
  if (!axisOr.isOk()) return ctx.error(axisOr.status().message());
  const int64_t axis = *axisOr;
  const int64_t p = ctx.node().attrInt("p", 2);
  if (p != 1 && p != 2)
    return ctx.unsupported("attribute 'p' must be 1 or 2, got " + std::to_string(p));
  const ops::AxisSplit split = ops::splitAround(x.shape(), axis);
  const int64_t outer = split.outer, inner = split.inner;
  Tensor& y = ctx.allocateOutput(0, x.type(), x.shape());
  Status status = dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    lpNormalize(x.data<T>(), y.data<T>(), outer, x.dim(axis), inner, p);
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

// ---- MeanVarianceNormalization -------------------------------------------------

// Y = (X - mean) / (sqrt(variance) + 1e-9), statistics over `reduced` axes; the
// epsilon is the one in the ONNX function body. Without normalizeVariance, Y = X - mean.
template <class T>
void meanVarianceNormalize(const T* x, T* y, const Shape& shape, const std::vector<bool>& reduced,
                           bool normalizeVariance) {
  Shape statShape = shape;
  int64_t count = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) {
      statShape[d] = 1;
      count *= shape[d];
    }
  }
  const std::vector<std::vector<int64_t>> strides = {broadcastStrides(statShape, shape)};
  std::vector<double> mean(shapeNumel(statShape), 0.0), var(mean.size(), 0.0);
  forEachBroadcast(shape, strides, [&](int64_t i, const std::vector<int64_t>& off) {
    mean[off[0]] += static_cast<double>(x[i]);
  });
  for (double& m : mean) m /= static_cast<double>(count);
  forEachBroadcast(shape, strides, [&](int64_t i, const std::vector<int64_t>& off) {
    const double d = static_cast<double>(x[i]) - mean[off[0]];
    var[off[0]] += d * d;
  });
  for (double& v : var) {
    v = normalizeVariance ? 1.0 / (std::sqrt(v / static_cast<double>(count)) + 1e-9) : 1.0;
  }
  forEachBroadcast(shape, strides, [&](int64_t i, const std::vector<int64_t>& off) {
    y[i] = static_cast<T>((static_cast<double>(x[i]) - mean[off[0]]) * var[off[0]]);
  });
}

Status mvnKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  const int rank = x.rank();
  auto params = ops::mvnParams(ctx.node(), ctx.opset(), rank);
  if (!params.isOk()) return ctx.error(params.status().message());
  const std::vector<bool>& reduced = params->reduced;
  const bool normalizeVariance = params->normalizeVariance;
  Tensor& y = ctx.allocateOutput(0, x.type(), x.shape());
  if (x.numel() == 0) return Status::ok();
  Status status = dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    meanVarianceNormalize(x.data<T>(), y.data<T>(), x.shape(), reduced, normalizeVariance);
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

// ---- LRN -----------------------------------------------------------------------

// y = x / (bias + alpha / size * sum of x^2 over channels [c - lo, c + hi])^beta
// with lo = floor((size - 1) / 2), hi = ceil((size - 1) / 2), clipped to [0, C).
template <class T>
void lrn(const T* x, T* y, int64_t batch, int64_t channels, int64_t spatial, int64_t size,
         double alpha, double beta, double bias) {
  const int64_t lo = (size - 1) / 2;
  const int64_t hi = size - 1 - lo;
  std::vector<double> squares(channels * spatial), prefix(channels + 1, 0.0);
  for (int64_t n = 0; n < batch; ++n) {
    const T* xn = x + n * channels * spatial;
    T* yn = y + n * channels * spatial;
    for (int64_t i = 0; i < channels * spatial; ++i) {
      const double v = static_cast<double>(xn[i]);
      squares[i] = v * v;
    }
    // Window sums from prefix sums over the channels: O(C) per position whatever `size`
    // (the direct sum was O(C * min(size, C)): quadratic for a wide window, which
    // fuzz_onnx_import turned into a timeout).
    for (int64_t s = 0; s < spatial; ++s) {
      for (int64_t c = 0; c < channels; ++c) prefix[c + 1] = prefix[c] + squares[c * spatial + s];
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t first = std::max<int64_t>(0, c - lo);
        const int64_t last = std::min(channels - 1, c + hi);
        const double sum = prefix[last + 1] - prefix[first];
        const double v = static_cast<double>(xn[c * spatial + s]);
        yn[c * spatial + s] = static_cast<T>(v / std::pow(bias + alpha / size * sum, beta));
      }
    }
  }
}

Status lrnKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2)
    return ctx.error("input 'X' must have rank >= 2, got " + shapeToString(x.shape()));
  const int64_t size = ctx.node().attrInt("size", 0);
  if (size <= 0) return ctx.error("attribute 'size' must be positive, got " + std::to_string(size));
  const double alpha = ctx.node().attrFloat("alpha", 1e-4f);
  const double beta = ctx.node().attrFloat("beta", 0.75f);
  const double bias = ctx.node().attrFloat("bias", 1.0f);
  int64_t spatial = 1;
  for (int d = 2; d < x.rank(); ++d) spatial *= x.dim(d);
  Tensor& y = ctx.allocateOutput(0, x.type(), x.shape());
  Status status = dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    lrn(x.data<T>(), y.data<T>(), x.dim(0), x.dim(1), spatial, size, alpha, beta, bias);
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

}  // namespace

void registerAxisNormalizationKernels(KernelRegistry& registry) {
  registry.add("LpNormalization", 1, 1000, &lpNormKernel);
  registry.add("MeanVarianceNormalization", 1, 1000, &mvnKernel);  // branches on opset 9
  registry.add("LRN", 1, 1000, &lrnKernel);
}

}  // namespace kiln::cpu
