// Reference kernels of the ai.kiln normalizations the passes create:
//   ScaledMaskedSoftmax(X, [M]; scale, axis = -1, mask_replaces = 0)
//     Y = softmax(X * scale + M) over the last axis; X and M broadcast (numpy) to Y. With
//     mask_replaces = 1 a nonzero M replaces the score instead: v = M != 0 ? M : X * scale
//     (a masked_fill: X at a masked position is never read, an inf or NaN there included).
//   AddLayerNorm(A, B, gamma, [beta]; epsilon, axis = -1, rms = 0) -> Y, [S]
//     S = A + B (A and B broadcast to S), Y = (S - mean) / sqrt(var + epsilon) * gamma + beta
//     over the last axis; gamma and beta are [N] (N = S's last dim). With rms = 1 the
//     root-mean-square form (RMSNormalization's: T5, LLaMA): Y = S / sqrt(mean(S^2) +
//     epsilon) * gamma [+ beta]. The optional output S is the sum itself, for graphs that
//     read it elsewhere (a residual). With residual_after = 1 the post-norm residual
//     instead: Y = LayerNorm(A) * gamma + beta + B (or the rms form of A), no S.
// The pre-softmax values and the sum are kept in the compute type (float for the
// 16-bit types) without rounding to storage; statistics are accumulated in double,
// as LayerNormalization's reference does. For float32 the results are those of
// the unfused Mul, Add, Softmax / Add, LayerNormalization nodes (a Div by the scale
// becomes a Mul by its reciprocal: within one rounding).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/op_utils.h"
#include "kiln/passes.h"

namespace kiln::cpu {
namespace {

// The fused ops normalize the last axis only; `axis` is there to say so.
Status requireLastAxis(const KernelContext& ctx, int64_t rank) {
  const int64_t axis = ctx.node().attrInt("axis", -1);
  if (axis == -1 || (rank > 0 && axis == rank - 1)) return Status::ok();
  return ctx.error("attribute 'axis' " + std::to_string(axis) + " is not the last axis of rank " +
                   std::to_string(rank) + " (only the last axis is supported)");
}

// x * scale + y of `x` and `y` broadcast to `shape`, in the compute type C; with `replaces`, a
// nonzero y instead of the whole sum. Row by row: each row's offsets into x and y are stepped
// from the previous row's, the last axis read at its broadcast stride.
template <class C, class T>
std::vector<C> broadcastCombine(const Tensor& x, const Tensor* y, const Shape& shape, C scale,
                                bool replaces = false) {
  std::vector<C> out(static_cast<size_t>(shapeNumel(shape)));
  const int rank = static_cast<int>(shape.size());
  const int64_t n = rank == 0 ? 1 : shape.back();
  if (out.empty() || n == 0) return out;
  const std::vector<int64_t> xs = broadcastStrides(x.shape(), shape);
  const std::vector<int64_t> ys =
      y ? broadcastStrides(y->shape(), shape) : std::vector<int64_t>(shape.size(), 0);
  const int64_t xLast = rank == 0 ? 0 : xs.back(), yLast = rank == 0 ? 0 : ys.back();
  const T* xp = x.data<T>();
  const T* yp = y ? y->data<T>() : nullptr;
  std::vector<int64_t> index(shape.size(), 0);
  int64_t xRow = 0, yRow = 0;
  for (size_t base = 0; base < out.size(); base += static_cast<size_t>(n)) {
    for (int64_t i = 0; i < n; ++i) {
      const C m = yp ? static_cast<C>(yp[yRow + i * yLast]) : C(0);
      out[base + i] = replaces && m != C(0) ? m : static_cast<C>(xp[xRow + i * xLast]) * scale + m;
    }
    for (int d = rank - 2; d >= 0; --d) {  // the next row's coordinates and offsets
      xRow += xs[d];
      yRow += ys[d];
      if (++index[d] < shape[d]) break;
      xRow -= xs[d] * shape[d];
      yRow -= ys[d] * shape[d];
      index[d] = 0;
    }
  }
  return out;
}

// The broadcast shape of the first input with the optional second, or an error.
Status outputShape(const KernelContext& ctx, const Tensor& x, const Tensor* y, const char* names,
                   Shape* out) {
  if (!y) {
    *out = x.shape();
    return Status::ok();
  }
  if (y->type() != x.type()) return ctx.error(std::string(names) + " must have one type");
  Status s = broadcastShapes(x.shape(), y->shape(), out);
  return s.isOk() ? s : ctx.error(std::string(names) + ": " + s.message());
}

// ---- ScaledMaskedSoftmax -------------------------------------------------------

template <class T>
void scaledMaskedSoftmax(const Tensor& x, const Tensor* mask, float scale, bool replaces,
                         Tensor& y) {
  using C = ComputeType<T>;
  std::vector<C> v = broadcastCombine<C, T>(x, mask, y.shape(), static_cast<C>(scale), replaces);
  const int64_t n = y.shape().back();
  T* out = y.data<T>();
  for (int64_t base = 0; base < y.numel(); base += n) {
    const C* row = v.data() + base;
    const C maxValue = *std::max_element(row, row + n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(row[i] - maxValue);
    const C inv = static_cast<C>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i)
      out[base + i] = static_cast<T>(static_cast<C>(std::exp(row[i] - maxValue)) * inv);
  }
}

Status scaledMaskedSoftmaxKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  const Tensor* mask = ctx.inputOrNull(1);
  Shape shape;
  KILN_RETURN_IF_ERROR(outputShape(ctx, x, mask, "X and M", &shape));
  if (shape.empty()) return ctx.error("input 'X' must have rank >= 1");
  KILN_RETURN_IF_ERROR(requireLastAxis(ctx, static_cast<int64_t>(shape.size())));
  const float scale = ctx.node().attrFloat("scale", 1.0f);
  Tensor& y = ctx.allocateOutput(0, x.type(), shape);
  if (y.numel() == 0) return Status::ok();
  Status status = dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    scaledMaskedSoftmax<T>(x, mask, scale, ctx.node().attrInt("mask_replaces", 0) != 0, y);
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

// ---- AddLayerNorm --------------------------------------------------------------

// A 1-D parameter of n elements as doubles, or an error naming it.
Status readParam(const KernelContext& ctx, const Tensor& t, const char* name, DataType type,
                 int64_t n, std::vector<double>* out) {
  if (t.type() != type) return ctx.error(std::string("input '") + name + "' must have A's type");
  if (t.rank() != 1 || t.dim(0) != n)
    return ctx.error(std::string("input '") + name + "' of shape " + shapeToString(t.shape()) +
                     " must be [" + std::to_string(n) + "] (the normalized last dim)");
  out->resize(n);
  Status status = dispatchFloatTypes(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < n; ++i) (*out)[i] = static_cast<double>(t.data<T>()[i]);
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

template <class T>
void addLayerNorm(const Tensor& a, const Tensor& b, const std::vector<double>& gamma,
                  const std::vector<double>* beta, double epsilon, bool rms, bool residualAfter,
                  Tensor& y, Tensor* sumOut) {
  using C = ComputeType<T>;
  // residual_after: the rows normalized are A's and B is added to Y after.
  const std::vector<C> s = broadcastCombine<C, T>(a, residualAfter ? nullptr : &b, y.shape(), C(1));
  const std::vector<C> r =
      residualAfter ? broadcastCombine<C, T>(b, nullptr, y.shape(), C(1)) : std::vector<C>{};
  const int64_t n = y.shape().back();
  for (int64_t base = 0; base < y.numel(); base += n) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(s[base + i]);
    const double mean = rms ? 0.0 : sum / static_cast<double>(n);
    double sq = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(s[base + i]) - mean;
      sq += d * d;
    }
    const double invStd = 1.0 / std::sqrt(sq / static_cast<double>(n) + epsilon);
    for (int64_t i = 0; i < n; ++i) {
      const double v = (static_cast<double>(s[base + i]) - mean) * invStd * gamma[i] +
                       (beta ? (*beta)[i] : 0.0) +
                       (residualAfter ? static_cast<double>(r[base + i]) : 0.0);
      y.data<T>()[base + i] = static_cast<T>(static_cast<C>(v));
      if (sumOut) sumOut->data<T>()[base + i] = static_cast<T>(s[base + i]);
    }
  }
}

Status addLayerNormKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Shape shape;
  KILN_RETURN_IF_ERROR(outputShape(ctx, a, &b, "A and B", &shape));
  if (shape.empty()) return ctx.error("inputs 'A' and 'B' must have rank >= 1");
  KILN_RETURN_IF_ERROR(requireLastAxis(ctx, static_cast<int64_t>(shape.size())));
  const int64_t n = shape.back();
  std::vector<double> gamma, beta;
  KILN_RETURN_IF_ERROR(readParam(ctx, ctx.input(2), "gamma", a.type(), n, &gamma));
  if (ctx.hasInput(3))
    KILN_RETURN_IF_ERROR(readParam(ctx, ctx.input(3), "beta", a.type(), n, &beta));
  const double epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  const bool rms = ctx.node().attrInt("rms", 0) != 0;
  const bool residualAfter = ctx.node().attrInt("residual_after", 0) != 0;
  if (residualAfter && ctx.wantsOutput(1))
    return ctx.error("output 'S' with residual_after = 1 (there is no sum to write)");
  Tensor& y = ctx.allocateOutput(0, a.type(), shape);
  Tensor* sum = ctx.wantsOutput(1) ? &ctx.allocateOutput(1, a.type(), shape) : nullptr;
  if (y.numel() == 0) return Status::ok();
  Status status = dispatchFloatTypes(a.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    addLayerNorm<T>(a, b, gamma, ctx.hasInput(3) ? &beta : nullptr, epsilon, rms, residualAfter, y,
                    sum);
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

}  // namespace

void registerFusedNormalizationKernels(KernelRegistry& registry) {
  registry.add("ScaledMaskedSoftmax", 1, 1000, &scaledMaskedSoftmaxKernel, kKilnDomain);
  registry.add("AddLayerNorm", 1, 1000, &addLayerNormKernel, kKilnDomain);
}

}  // namespace kiln::cpu
