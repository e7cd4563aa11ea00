// Normalization kernels that standardize by statistics: BatchNormalization,
// InstanceNormalization, GroupNormalization and LayerNormalization. The
// ones that scale along axes (LpNormalization, MeanVarianceNormalization, LRN) live
// in axis_normalization.cpp and register through registerNormalizationKernels.
//
// Statistics are accumulated in double whatever the element type, which also
// satisfies stash_type = 1 (compute in at least float32).
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/op_utils.h"
#include "ops/normalization_params.h"

namespace kiln::cpu {

void registerAxisNormalizationKernels(KernelRegistry& registry);  // axis_normalization.cpp

namespace {

// A float tensor's elements as doubles (parameters such as scale and bias are small).
Status readDoubles(const KernelContext& ctx, const Tensor& t, const char* name,
                   std::vector<double>* out) {
  out->resize(t.numel());
  Status status = dispatchFloatTypes(t.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) (*out)[i] = static_cast<double>(p[i]);
    return Status::ok();
  });
  if (!status.isOk())
    return ctx.unsupported(std::string("input '") + name + "': " + status.message());
  return Status::ok();
}

Status requireNumel(const KernelContext& ctx, const Tensor& t, const char* name, int64_t n) {
  if (t.numel() == n) return Status::ok();
  return ctx.error(std::string("input '") + name + "' has shape " + shapeToString(t.shape()) +
                   ", expected " + std::to_string(n) + " elements");
}

// Mean and population variance of n values, two-pass for accuracy.
template <class T>
void moments(const T* x, int64_t n, double* mean, double* var) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  const double m = n > 0 ? sum / static_cast<double>(n) : 0.0;
  double sq = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - m;
    sq += d * d;
  }
  *mean = m;
  *var = n > 0 ? sq / static_cast<double>(n) : 0.0;
}

// y = x * a + b over n contiguous elements, in the precision of the element type.
template <class T>
void affine(const T* x, T* y, int64_t n, double a, double b) {
  using C = ComputeType<T>;
  const C ca = static_cast<C>(a), cb = static_cast<C>(b);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(static_cast<C>(x[i]) * ca + cb);
}

// (N, C, spatial...) split into N, C and the spatial element count S.
struct NcsShape {
  int64_t n = 1, c = 1, s = 1;
};
Status splitNcs(const KernelContext& ctx, const Tensor& x, NcsShape* out) {
  if (x.rank() < 2)
    return ctx.error("input 'X' must have rank >= 2, got " + shapeToString(x.shape()));
  out->n = x.dim(0);
  out->c = x.dim(1);
  out->s = 1;
  for (int d = 2; d < x.rank(); ++d) out->s *= x.dim(d);
  return Status::ok();
}

// ---- BatchNormalization --------------------------------------------------------

// Per-channel batch statistics over N and the spatial axes (training mode).
template <class T>
void batchMoments(const T* x, const NcsShape& sh, std::vector<double>* mean,
                  std::vector<double>* var) {
  mean->assign(sh.c, 0.0);
  var->assign(sh.c, 0.0);
  const double count = static_cast<double>(sh.n * sh.s);
  for (int64_t n = 0; n < sh.n; ++n)
    for (int64_t c = 0; c < sh.c; ++c) {
      const T* p = x + (n * sh.c + c) * sh.s;
      for (int64_t i = 0; i < sh.s; ++i) (*mean)[c] += static_cast<double>(p[i]);
    }
  for (double& m : *mean) m = count > 0 ? m / count : 0.0;
  for (int64_t n = 0; n < sh.n; ++n)
    for (int64_t c = 0; c < sh.c; ++c) {
      const T* p = x + (n * sh.c + c) * sh.s;
      for (int64_t i = 0; i < sh.s; ++i) {
        const double d = static_cast<double>(p[i]) - (*mean)[c];
        (*var)[c] += d * d;
      }
    }
  for (double& v : *var) v = count > 0 ? v / count : 0.0;
}

// Writes a double vector into output i with the type and shape of `like`.
Status writeDoubles(KernelContext& ctx, size_t i, const Tensor& like,
                    const std::vector<double>& v) {
  Tensor& out = ctx.allocateOutput(i, like.type(), like.shape());
  return dispatchFloatTypes(like.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t k = 0; k < v.size(); ++k) out.data<T>()[k] = static_cast<T>(v[k]);
    return Status::ok();
  });
}

Status batchNormKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(5));
  const Tensor& x = ctx.input(0);
  NcsShape sh;
  KILN_RETURN_IF_ERROR(splitNcs(ctx, x, &sh));
  const double epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  const double momentum = ctx.node().attrFloat("momentum", 0.9f);
  // Opset 14 made training an attribute; before, asking for the statistics outputs
  // (running mean/var, saved mean/var) meant training.
  const bool training = ctx.opset() >= 14 ? ctx.node().attrInt("training_mode", 0) != 0
                                          : ctx.wantsOutput(1) || ctx.wantsOutput(2) ||
                                                ctx.wantsOutput(3) || ctx.wantsOutput(4);
  // Opsets < 9 had spatial = 0: one parameter per (channel, spatial position).
  const bool perElement = ctx.opset() < 9 && ctx.node().attrInt("spatial", 1) == 0;
  if (perElement && training) return ctx.unsupported("training with spatial = 0");
  const int64_t params = perElement ? sh.c * sh.s : sh.c;
  static const char* const kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
  std::vector<double> p[5];
  for (int i = 1; i < 5; ++i) {
    KILN_RETURN_IF_ERROR(requireNumel(ctx, ctx.input(i), kNames[i], params));
    KILN_RETURN_IF_ERROR(readDoubles(ctx, ctx.input(i), kNames[i], &p[i]));
  }
  std::vector<double> batchMean, batchVar;
  Tensor& y = ctx.allocateOutput(0, x.type(), x.shape());
  Status status = dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::vector<double>* mean = &p[3];
    const std::vector<double>* var = &p[4];
    if (training) {
      batchMoments(x.data<T>(), sh, &batchMean, &batchVar);
      mean = &batchMean;
      var = &batchVar;
    }
    const int64_t run = perElement ? 1 : sh.s;  // elements sharing one parameter
    for (int64_t n = 0; n < sh.n; ++n)
      for (int64_t k = 0; k < params; ++k) {
        const double a = p[1][k] / std::sqrt((*var)[k] + epsilon);
        const int64_t offset = n * params * run + k * run;
        affine(x.data<T>() + offset, y.data<T>() + offset, run, a, p[2][k] - (*mean)[k] * a);
      }
    return Status::ok();
  });
  if (!status.isOk()) return ctx.unsupported(status.message());
  if (!training) return Status::ok();
  std::vector<double> runningMean(sh.c), runningVar(sh.c);
  for (int64_t c = 0; c < sh.c; ++c) {
    runningMean[c] = p[3][c] * momentum + batchMean[c] * (1.0 - momentum);
    runningVar[c] = p[4][c] * momentum + batchVar[c] * (1.0 - momentum);
  }
  const std::vector<double>* stats[] = {&runningMean, &runningVar, &batchMean, &batchVar};
  for (size_t i = 1; i < 5; ++i) {
    if (ctx.wantsOutput(i))
      KILN_RETURN_IF_ERROR(writeDoubles(ctx, i, ctx.input(i % 2 == 1 ? 3 : 4), *stats[i - 1]));
  }
  return Status::ok();
}

// ---- InstanceNormalization / GroupNormalization ---------------------------------

// Normalizes each (n, group) block of channelsPerGroup * s elements; channel c's
// affine parameters are scale[c] and bias[c].
template <class T>
void groupNorm(const T* x, T* y, const NcsShape& sh, int64_t groups, double epsilon,
               const std::vector<double>& scale, const std::vector<double>& bias) {
  // No channels, no groups (InstanceNormalization's one group per channel): nothing to
  // normalize, and c / groups would divide by zero (SIGFPE on an [N, 0, ...] input).
  if (groups == 0) return;
  const int64_t perGroup = sh.c / groups;
  const int64_t block = perGroup * sh.s;
  for (int64_t n = 0; n < sh.n; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t offset = (n * groups + g) * block;
      double mean, var;
      moments(x + offset, block, &mean, &var);
      const double invStd = 1.0 / std::sqrt(var + epsilon);
      for (int64_t k = 0; k < perGroup; ++k) {
        const int64_t c = g * perGroup + k;
        const double a = scale[c] * invStd;
        affine(x + offset + k * sh.s, y + offset + k * sh.s, sh.s, a, bias[c] - mean * a);
      }
    }
}

Status runGroupNorm(KernelContext& ctx, const NcsShape& sh, int64_t groups,
                    const std::vector<double>& scale, const std::vector<double>& bias) {
  const Tensor& x = ctx.input(0);
  const double epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  Tensor& y = ctx.allocateOutput(0, x.type(), x.shape());
  Status status = dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    groupNorm(x.data<T>(), y.data<T>(), sh, groups, epsilon, scale, bias);
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

Status instanceNormKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  NcsShape sh;
  KILN_RETURN_IF_ERROR(splitNcs(ctx, ctx.input(0), &sh));
  std::vector<double> scale, bias;
  KILN_RETURN_IF_ERROR(requireNumel(ctx, ctx.input(1), "scale", sh.c));
  KILN_RETURN_IF_ERROR(requireNumel(ctx, ctx.input(2), "B", sh.c));
  KILN_RETURN_IF_ERROR(readDoubles(ctx, ctx.input(1), "scale", &scale));
  KILN_RETURN_IF_ERROR(readDoubles(ctx, ctx.input(2), "B", &bias));
  return runGroupNorm(ctx, sh, sh.c, scale, bias);  // one group per channel
}

Status groupNormKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  NcsShape sh;
  KILN_RETURN_IF_ERROR(splitNcs(ctx, ctx.input(0), &sh));
  auto params = ops::groupNormParams(ctx.node(), ctx.opset(), sh.c, ctx.input(1).numel(),
                                     ctx.input(2).numel());
  if (!params.isOk()) return ctx.error(params.status().message());
  const int64_t groups = params->groups;
  std::vector<double> scale, bias;
  KILN_RETURN_IF_ERROR(readDoubles(ctx, ctx.input(1), "scale", &scale));
  KILN_RETURN_IF_ERROR(readDoubles(ctx, ctx.input(2), "bias", &bias));
  if (params->perGroupParams) {  // one value per channel, from its group's
    const int64_t perGroup = sh.c / groups;
    std::vector<double> s(sh.c), b(sh.c);
    for (int64_t c = 0; c < sh.c; ++c) {
      s[c] = scale[c / perGroup];
      b[c] = bias[c / perGroup];
    }
    scale.swap(s);
    bias.swap(b);
  }
  return runGroupNorm(ctx, sh, groups, scale, bias);
}

// ---- LayerNormalization --------------------------------------------------------

// Expands a parameter unidirectionally broadcast onto the normalized shape
// (X.shape[axis:]) into one value per normalized element.
Status expandParam(const KernelContext& ctx, const Tensor& t, const char* name,
                   const Shape& normShape, std::vector<double>* out) {
  auto broadcast = ops::paramBroadcastShape(name, t.shape(), normShape, "normalized shape");
  if (!broadcast.isOk()) return ctx.error(broadcast.status().message());
  const Shape& shape = *broadcast;
  std::vector<double> values;
  KILN_RETURN_IF_ERROR(readDoubles(ctx, t, name, &values));
  out->resize(shapeNumel(normShape));
  forEachBroadcast(normShape, {broadcastStrides(shape, normShape)},
                   [&](int64_t i, const std::vector<int64_t>& off) { (*out)[i] = values[off[0]]; });
  return Status::ok();
}

template <class T, class U>
void layerNorm(const T* x, T* y, int64_t rows, int64_t cols, double epsilon,
               const std::vector<double>& scale, const std::vector<double>* bias, U* meanOut,
               U* invStdOut) {
  using C = ComputeType<T>;
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    double mean, var;
    moments(xr, cols, &mean, &var);
    const double invStd = 1.0 / std::sqrt(var + epsilon);
    for (int64_t i = 0; i < cols; ++i) {
      const double v =
          (static_cast<double>(xr[i]) - mean) * invStd * scale[i] + (bias ? (*bias)[i] : 0.0);
      yr[i] = static_cast<T>(static_cast<C>(v));
    }
    if (meanOut) meanOut[r] = static_cast<U>(mean);
    if (invStdOut) invStdOut[r] = static_cast<U>(invStd);
  }
}

Status layerNormKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  auto geometry = ops::layerNormGeometry(ctx.node(), x.shape());
  if (!geometry.isOk()) return ctx.error(geometry.status().message());
  const Shape& normShape = geometry->normShape;
  const Shape& statShape = geometry->statShape;
  const int64_t cols = geometry->cols, rows = geometry->rows;
  std::vector<double> scale, bias;
  KILN_RETURN_IF_ERROR(expandParam(ctx, ctx.input(1), "Scale", normShape, &scale));
  if (ctx.hasInput(2)) KILN_RETURN_IF_ERROR(expandParam(ctx, ctx.input(2), "B", normShape, &bias));
  const double epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  // Mean and InvStdDev are in the stash type (float32) for 16-bit inputs.
  const DataType statType =
      x.type() == DataType::kFloat64 ? DataType::kFloat64 : DataType::kFloat32;
  Tensor& y = ctx.allocateOutput(0, x.type(), x.shape());
  Tensor* meanOut = ctx.wantsOutput(1) ? &ctx.allocateOutput(1, statType, statShape) : nullptr;
  Tensor* invStdOut = ctx.wantsOutput(2) ? &ctx.allocateOutput(2, statType, statShape) : nullptr;
  Status status = dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::vector<double>* b = ctx.hasInput(2) ? &bias : nullptr;
    if (statType == DataType::kFloat64) {
      layerNorm(x.data<T>(), y.data<T>(), rows, cols, epsilon, scale, b,
                meanOut ? meanOut->data<double>() : nullptr,
                invStdOut ? invStdOut->data<double>() : nullptr);
    } else {
      layerNorm(x.data<T>(), y.data<T>(), rows, cols, epsilon, scale, b,
                meanOut ? meanOut->data<float>() : nullptr,
                invStdOut ? invStdOut->data<float>() : nullptr);
    }
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

}  // namespace

void registerNormalizationKernels(KernelRegistry& registry) {
  registry.add("BatchNormalization", 6, 1000, &batchNormKernel);  // branches on opsets 9 and 14
  registry.add("InstanceNormalization", 6, 1000, &instanceNormKernel);
  registry.add("GroupNormalization", 18, 1000, &groupNormKernel);  // branches on opset 21
  registry.add("LayerNormalization", 17, 1000, &layerNormKernel);
  registerAxisNormalizationKernels(registry);
}

}  // namespace kiln::cpu
