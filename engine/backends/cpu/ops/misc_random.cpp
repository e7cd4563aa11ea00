// Random generators: RandomUniform, RandomNormal, their *Like forms, Bernoulli and
// Multinomial. A `seed` attribute makes a node repeatable; seeded values follow the
// ONNX reference implementation (numpy's legacy stream, see RandomStream), which
// other runtimes need not match: only shapes, types and distributions are portable.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/misc.h"

namespace kiln::cpu {
namespace {

// Refuses generated outputs too large to allocate (a corrupt shape attribute).
constexpr int64_t kMaxRandomElements = int64_t{1} << 32;

// The output type of the generators: the `dtype` attribute, else `fallback`.
Status randomOutputType(const KernelContext& ctx, DataType fallback, DataType* type) {
  *type = ctx.node().hasAttr("dtype") ? static_cast<DataType>(ctx.node().attrInt("dtype", 1))
                                      : fallback;
  if (!isFloatingPoint(*type) || !isSupportedDataType(*type)) {
    return ctx.error(std::string("dtype must be a floating-point type, got ") +
                     dataTypeName(*type));
  }
  return Status::ok();
}

// Fills output 0 with `scale * draw(stream) + shift` of `type` and `shape`, rounding
// the draw to the output type first as the reference does.
template <class Draw>
Status fillRandom(KernelContext& ctx, DataType type, const Shape& shape, double scale, double shift,
                  Draw draw) {
  for (int64_t d : shape) {
    if (d < 0) return ctx.error("shape has a negative dim " + std::to_string(d));
  }
  if (shapeNumel(shape) > kMaxRandomElements)
    return ctx.error("shape " + shapeToString(shape) + " is too large");
  RandomStream random = randomStream(ctx.node());
  Tensor& out = ctx.allocateOutput(0, type, shape);
  return dispatchFloatTypes(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    T* dst = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      const C v = static_cast<C>(draw(random));
      dst[i] = static_cast<T>(v * static_cast<C>(scale) + static_cast<C>(shift));
    }
    return Status::ok();
  });
}

// The shape of a generator: the `shape` attribute, or input 0's shape for *Like.
Status generatorShape(const KernelContext& ctx, bool like, Shape* shape, DataType* fallbackType) {
  *fallbackType = DataType::kFloat32;
  if (like) {
    KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
    *shape = ctx.input(0).shape();
    *fallbackType = ctx.input(0).type();
    return Status::ok();
  }
  if (!ctx.node().hasAttr("shape")) return ctx.error("attribute 'shape' is required");
  *shape = ctx.node().attrInts("shape");
  return Status::ok();
}

template <bool kLike>
Status randomUniformKernel(KernelContext& ctx) {
  Shape shape;
  DataType type = DataType::kFloat32;
  KILN_RETURN_IF_ERROR(generatorShape(ctx, kLike, &shape, &type));
  KILN_RETURN_IF_ERROR(randomOutputType(ctx, type, &type));
  const double low = ctx.node().attrFloat("low", 0.f), high = ctx.node().attrFloat("high", 1.f);
  if (!(low <= high)) return ctx.error("low must not exceed high");
  return fillRandom(ctx, type, shape, high - low, low, [](RandomStream& r) { return r.uniform(); });
}

template <bool kLike>
Status randomNormalKernel(KernelContext& ctx) {
  Shape shape;
  DataType type = DataType::kFloat32;
  KILN_RETURN_IF_ERROR(generatorShape(ctx, kLike, &shape, &type));
  KILN_RETURN_IF_ERROR(randomOutputType(ctx, type, &type));
  const double mean = ctx.node().attrFloat("mean", 0.f), scale = ctx.node().attrFloat("scale", 1.f);
  if (!(scale >= 0) || !std::isfinite(mean)) return ctx.error("scale must be >= 0 and mean finite");
  return fillRandom(ctx, type, shape, scale, mean, [](RandomStream& r) { return r.normal(); });
}

// Bernoulli: each output element is 1 with the probability given by its input.
Status bernoulliKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& probabilities = ctx.input(0);
  if (!isFloatingPoint(probabilities.type())) return ctx.error("input must be floating-point");
  const DataType type = ctx.node().hasAttr("dtype")
                            ? static_cast<DataType>(ctx.node().attrInt("dtype", 1))
                            : probabilities.type();
  if (type == DataType::kString || !isSupportedDataType(type)) {
    return ctx.error(std::string("dtype ") + dataTypeName(type) + " is not supported");
  }
  const Tensor p = castTensor(probabilities, DataType::kFloat64);
  for (int64_t i = 0; i < p.numel(); ++i) {
    const double v = p.data<double>()[i];
    if (!(v >= 0.0 && v <= 1.0))
      return ctx.error("probability " + std::to_string(v) + " is outside [0, 1]");
  }
  RandomStream random = randomStream(ctx.node());
  Tensor& out = ctx.allocateOutput(0, type, probabilities.shape());
  Status status = dispatchAllTypes(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = out.data<T>();
    for (int64_t i = 0; i < p.numel(); ++i) {
      dst[i] = static_cast<T>(random.bernoulli(p.data<double>()[i]) ? 1.0f : 0.0f);
    }
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

// Multinomial: `sample_size` class indices per batch row, drawn with probabilities
// proportional to exp(input) (the input holds unnormalized log-probabilities).
Status multinomialKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& logits = ctx.input(0);
  if (logits.rank() != 2 || logits.dim(1) == 0 || !isFloatingPoint(logits.type())) {
    return ctx.error("input must be a float [batch_size, class_size] tensor, got " +
                     shapeToString(logits.shape()));
  }
  const DataType type = static_cast<DataType>(ctx.node().attrInt("dtype", 6));
  if (type != DataType::kInt32 && type != DataType::kInt64)
    return ctx.error("dtype must be int32 or int64");
  const int64_t samples = ctx.node().attrInt("sample_size", 1);
  if (samples < 0 || samples > kMaxRandomElements) return ctx.error("sample_size is out of range");
  const int64_t batch = logits.dim(0), classes = logits.dim(1);
  const Tensor x = castTensor(logits, DataType::kFloat64);
  RandomStream random = randomStream(ctx.node());
  Tensor& out = ctx.allocateOutput(0, type, {batch, samples});
  std::vector<double> cumulative(classes);
  for (int64_t b = 0; b < batch; ++b) {
    const double* row = x.data<double>() + b * classes;
    const double peak = *std::max_element(row, row + classes);
    double total = 0.0;
    for (int64_t c = 0; c < classes; ++c) cumulative[c] = total += std::exp(row[c] - peak);
    if (!(total > 0.0) || !std::isfinite(total))
      return ctx.error("input row holds no finite log-probability");
    for (int64_t s = 0; s < samples; ++s) {
      const double u = random.uniform() * total;
      auto it = std::upper_bound(cumulative.begin(), cumulative.end(), u);
      const int64_t cls = std::min<int64_t>(it - cumulative.begin(), classes - 1);
      if (type == DataType::kInt32)
        out.data<int32_t>()[b * samples + s] = static_cast<int32_t>(cls);
      else
        out.data<int64_t>()[b * samples + s] = cls;
    }
  }
  return Status::ok();
}

}  // namespace

void registerRandomKernels(KernelRegistry& registry) {
  registry.add("RandomUniform", 1, 1000, &randomUniformKernel<false>);
  registry.add("RandomUniformLike", 1, 1000, &randomUniformKernel<true>);
  registry.add("RandomNormal", 1, 1000, &randomNormalKernel<false>);
  registry.add("RandomNormalLike", 1, 1000, &randomNormalKernel<true>);
  registry.add("Bernoulli", 15, 1000, &bernoulliKernel);
  registry.add("Multinomial", 7, 1000, &multinomialKernel);
}

}  // namespace kiln::cpu
