// RMSNormalization (opset 23):
//   Y = X / sqrt(mean(X^2 over axes [axis, rank)) + epsilon) * scale
// with `scale` unidirectionally broadcast to X. The mean square accumulates in
// double, at least the precision any stash_type asks for; the normalized value is
// rounded to X's type before scaling (the spec casts it back), and Y takes scale's type.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/attention_common.h"

namespace kiln::cpu {
namespace {

// Offsets into `scale` of the elements of X's axes [from, to), row-major order.
std::vector<int64_t> scaleOffsets(const Shape& xShape, const std::vector<int64_t>& strides,
                                  int from, int to) {
  const Shape sub(xShape.begin() + from, xShape.begin() + to);
  const std::vector<int64_t> subStrides(strides.begin() + from, strides.begin() + to);
  std::vector<int64_t> offsets(static_cast<size_t>(shapeNumel(sub)));
  forEachBroadcast(sub, {subStrides},
                   [&](int64_t i, const std::vector<int64_t>& off) { offsets[i] = off[0]; });
  return offsets;
}

struct RmsPlan {
  int64_t outer = 1, inner = 1;
  std::vector<int64_t> outerScale, innerScale;  // scale offset = outerScale[o] + innerScale[i]
  double epsilon = 1e-5;
};

template <class T, class V>
void rmsNormTyped(const T* x, const V* scale, V* y, const RmsPlan& p) {
  using C =
      std::conditional_t<std::is_same_v<T, double> || std::is_same_v<V, double>, double, float>;
  for (int64_t o = 0; o < p.outer; ++o) {
    const T* row = x + o * p.inner;
    double sum = 0.0;
    for (int64_t i = 0; i < p.inner; ++i) {
      const double v = static_cast<double>(static_cast<ComputeType<T>>(row[i]));
      sum += v * v;
    }
    const double meanSquare = p.inner > 0 ? sum / static_cast<double>(p.inner) : 0.0;
    const C inv = static_cast<C>(1.0 / std::sqrt(meanSquare + p.epsilon));
    const V* s = scale + p.outerScale[o];
    V* out = y + o * p.inner;
    for (int64_t i = 0; i < p.inner; ++i) {
      const C normalized =
          attention::roundThrough<T>(static_cast<C>(static_cast<ComputeType<T>>(row[i])) * inv);
      const C factor = static_cast<C>(static_cast<ComputeType<V>>(s[p.innerScale[i]]));
      out[i] = static_cast<V>(normalized * factor);
    }
  }
}

Status rmsNormKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  if (x.rank() < 1) return ctx.error("input 'X' must have rank >= 1");
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR_CTX(normalizeAxis(ctx.node().attrInt("axis", -1), x.rank(), &axis),
                           ctx.node().describe() + ": attribute 'axis'");
  Shape broadcast;
  if (!broadcastShapes(x.shape(), scale.shape(), &broadcast).isOk() || broadcast != x.shape())
    return ctx.error("input 'scale' " + shapeToString(scale.shape()) + " does not broadcast to X " +
                     shapeToString(x.shape()));
  RmsPlan plan;
  plan.epsilon = static_cast<double>(ctx.node().attrFloat("epsilon", 1e-5f));
  for (int d = 0; d < x.rank(); ++d) (d < axis ? plan.outer : plan.inner) *= x.dim(d);
  const std::vector<int64_t> strides = broadcastStrides(scale.shape(), x.shape());
  plan.outerScale = scaleOffsets(x.shape(), strides, 0, static_cast<int>(axis));
  plan.innerScale = scaleOffsets(x.shape(), strides, static_cast<int>(axis), x.rank());
  Tensor& y = ctx.allocateOutput(0, scale.type(), x.shape());
  Status status = dispatchFloatTypes(x.type(), [&](auto xTag) {
    using T = typename decltype(xTag)::type;
    return dispatchFloatTypes(scale.type(), [&](auto sTag) {
      using V = typename decltype(sTag)::type;
      rmsNormTyped(x.data<T>(), scale.data<V>(), y.data<V>(), plan);
      return Status::ok();
    });
  });
  if (!status.isOk()) return ctx.unsupported("X / scale " + status.message());
  return Status::ok();
}

}  // namespace

void registerRmsNormKernels(KernelRegistry& registry) {
  registry.add("RMSNormalization", 23, 1000, &rmsNormKernel);
}

}  // namespace kiln::cpu
