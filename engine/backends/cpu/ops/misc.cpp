// The misc op family's registration list, its shared helpers, and the small kernels
// that fit nowhere else: Dropout (inference and seeded training mode) and Det.
#include "backends/cpu/ops/misc.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "backends/cpu/ops/signal.h"
#include "ops/scalar_inputs.h"

namespace kiln::cpu {

Status readScalarInt(const KernelContext& ctx, size_t index, const char* name, int64_t* out) {
  if (!ctx.hasInput(index)) return ctx.error(std::string("input '") + name + "' is missing");
  const Tensor& t = ctx.input(index);
  if (!isInteger(t.type())) {
    return ctx.error(std::string("input '") + name + "' must be an integer tensor, got " +
                     dataTypeName(t.type()));
  }
  if (t.numel() != 1) {
    return ctx.error(std::string("input '") + name + "' must hold one value, got shape " +
                     shapeToString(t.shape()));
  }
  *out = t.valueAsInt64(0);
  return Status::ok();
}

Status readScalarDouble(const KernelContext& ctx, size_t index, const char* name, double* out) {
  if (!ctx.hasInput(index)) return ctx.error(std::string("input '") + name + "' is missing");
  auto value = ops::scalarNumber(ctx.input(index), name);
  if (!value.isOk()) return ctx.error(value.status().message());
  *out = *value;
  return Status::ok();
}

double RandomStream::normal() {
  if (m_hasGauss) {
    m_hasGauss = false;
    return m_gauss;
  }
  double x1 = 0, x2 = 0, r2 = 0;
  do {
    x1 = 2.0 * uniform() - 1.0;
    x2 = 2.0 * uniform() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * std::log(r2) / r2);
  m_gauss = f * x1;
  m_hasGauss = true;
  return f * x2;
}

bool RandomStream::bernoulli(double p) {
  // numpy inverts the CDF of the less likely side: success iff U > P(0) for
  // p <= 0.5, failure iff U > P(1) otherwise; exp(log(q)) mirrors its q^n.
  const double u = uniform();
  if (p <= 0.5) return u > std::exp(std::log(1.0 - p));
  const double q = 1.0 - p;
  return !(u > std::exp(std::log(1.0 - q)));
}

RandomStream randomStream(const Node& node) {
  auto it = node.attributes.find("seed");
  if (it == node.attributes.end()) return RandomStream(std::random_device{}());
  const Attribute& seed = it->second;
  if (seed.kind == Attribute::Kind::kInt) return RandomStream(static_cast<uint32_t>(seed.i));
  const double value = std::isfinite(seed.f) ? std::trunc(static_cast<double>(seed.f)) : 0.0;
  return RandomStream(static_cast<uint32_t>(static_cast<int64_t>(std::clamp(value, -4e18, 4e18))));
}

Status writeDoublesOutput(KernelContext& ctx, size_t index, DataType type, const Shape& shape,
                          const std::vector<double>& values) {
  if (type == DataType::kBool || type == DataType::kString || !isSupportedDataType(type)) {
    return ctx.unsupported(std::string("output data type ") + dataTypeName(type));
  }
  Tensor& out = ctx.allocateOutput(index, type, shape);
  if (static_cast<size_t>(out.numel()) != values.size()) {
    return internalError("writeDoublesOutput: value count does not match the shape");
  }
  Status status = dispatchAllTypes(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = out.data<T>();
    for (size_t i = 0; i < values.size(); ++i) dst[i] = static_cast<T>(values[i]);
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

namespace {

// Dropout's ratio and training flag: an attribute before opset 12, inputs since.
Status readDropoutOptions(const KernelContext& ctx, double* ratio, bool* training) {
  *ratio = 0.5;
  *training = false;
  if (ctx.opset() < 12) {
    *ratio = ctx.node().attrFloat("ratio", 0.5f);
    return Status::ok();
  }
  if (ctx.hasInput(1)) KILN_RETURN_IF_ERROR(readScalarDouble(ctx, 1, "ratio", ratio));
  if (ctx.hasInput(2)) {
    double flag = 0;
    KILN_RETURN_IF_ERROR(readScalarDouble(ctx, 2, "training_mode", &flag));
    *training = flag != 0;
  }
  return Status::ok();
}

// Inference Dropout is the identity; training mode keeps each element with
// probability 1 - ratio and scales the kept ones by 1 / (1 - ratio).
Status dropoutKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  double ratio = 0.5;
  bool training = false;
  KILN_RETURN_IF_ERROR(readDropoutOptions(ctx, &ratio, &training));
  if (!(ratio >= 0.0 && ratio <= 1.0)) {
    return ctx.error("ratio must be in [0, 1], got " + std::to_string(ratio));
  }
  const bool drop = training && ratio > 0.0;
  // Opsets 7..9 typed the mask like the input; 10 made it bool.
  const DataType maskType = ctx.opset() < 10 ? x.type() : DataType::kBool;
  const bool wantMask = ctx.wantsOutput(1);
  return dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    T* dst = ctx.allocateOutput(0, x.type(), x.shape()).template data<T>();
    std::vector<uint8_t> keep;  // empty: every element is kept
    if (drop) {
      keep.resize(x.numel());
      RandomStream random = randomStream(ctx.node());
      for (auto& k : keep) k = random.uniform() >= ratio ? 1 : 0;
      const double scale = ratio < 1.0 ? 1.0 / (1.0 - ratio) : 0.0;
      for (int64_t i = 0; i < x.numel(); ++i) {
        dst[i] = static_cast<T>(keep[i] ? static_cast<double>(src[i]) * scale : 0.0);
      }
    } else {
      std::copy(src, src + x.numel(), dst);
    }
    if (!wantMask) return Status::ok();
    Tensor& mask = ctx.allocateOutput(1, maskType, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      const bool kept = keep.empty() || keep[i];
      if (maskType == DataType::kBool)
        mask.data<bool>()[i] = kept;
      else
        mask.data<T>()[i] = static_cast<T>(kept ? 1.0f : 0.0f);
    }
    return Status::ok();
  });
}

// Determinant of one n x n matrix by LU decomposition with partial pivoting.
double determinant(std::vector<double>& a, int64_t n) {
  double det = 1.0;
  for (int64_t col = 0; col < n; ++col) {
    int64_t pivot = col;
    for (int64_t r = col + 1; r < n; ++r) {
      if (std::fabs(a[r * n + col]) > std::fabs(a[pivot * n + col])) pivot = r;
    }
    if (a[pivot * n + col] == 0.0) return 0.0;
    if (pivot != col) {
      for (int64_t c = 0; c < n; ++c) std::swap(a[pivot * n + c], a[col * n + c]);
      det = -det;
    }
    const double diag = a[col * n + col];
    det *= diag;
    for (int64_t r = col + 1; r < n; ++r) {
      const double f = a[r * n + col] / diag;
      if (f == 0.0) continue;
      for (int64_t c = col + 1; c < n; ++c) a[r * n + c] -= f * a[col * n + c];
    }
  }
  return det;
}

Status detKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2 || x.dim(-1) != x.dim(-2)) {
    return ctx.error("input must be [*, M, M], got " + shapeToString(x.shape()));
  }
  const int64_t n = x.dim(-1);
  const Shape outShape(x.shape().begin(), x.shape().end() - 2);
  const int64_t count = shapeNumel(outShape);
  return dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    T* dst = ctx.allocateOutput(0, x.type(), outShape).template data<T>();
    std::vector<double> matrix(n * n);
    for (int64_t b = 0; b < count; ++b) {
      for (int64_t i = 0; i < n * n; ++i) matrix[i] = static_cast<double>(src[b * n * n + i]);
      dst[b] = static_cast<T>(determinant(matrix, n));
    }
    return Status::ok();
  });
}

}  // namespace

void registerMiscKernels(KernelRegistry& registry) {
  registry.add("Dropout", 1, 1000, &dropoutKernel);
  registry.add("Det", 11, 1000, &detKernel);
  registerStringNormalizerKernels(registry);
  registerDetectionKernels(registry);
  registerSamplingKernels(registry);
  registerRandomKernels(registry);
  registerTrainingKernels(registry);
  registerSignalKernels(registry);
}

}  // namespace kiln::cpu
