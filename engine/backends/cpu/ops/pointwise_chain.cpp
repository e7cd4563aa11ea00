// Reference kernel of ai.kiln PointwiseChain(X0, X1, ...) -> Y (program and
// attributes: ir/pointwise_program.h). Y has the numpy broadcast shape of every
// input; each element is the program run on one broadcast element of each input.
// Arithmetic is float32 with the formulas of the unfused CPU kernels (activations.cpp,
// elementwise_*.cpp), so a float32 chain gives the unfused graph's values; 16-bit
// values are rounded where a Cast step says so and at the output, as the other
// ai.kiln ops keep their intermediates in the compute type.
// The program runs over tiles of kTile elements, one op at a time over a whole tile:
// each op's loop is tight and free of the interpreter's dispatch.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/elementwise.h"
#include "ir/pointwise_program.h"
#include "kiln/passes.h"

namespace kiln::cpu {
namespace {

constexpr int64_t kTile = 1024;

float roundTo(DataType type, float v) {
  if (type == DataType::kFloat16) return halfToFloat(floatToHalf(v));
  if (type == DataType::kBFloat16) return bfloat16ToFloat(floatToBFloat16(v));
  return v;
}

float clamp01(float v) {
  return std::max(0.f, std::min(1.f, v));
}

float softplus(float x) {
  return x > 0.f ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

template <class F>
void map1(const float* a, float* out, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i]);
}

template <class F>
void map2(const float* a, const float* b, float* out, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}

// One step over n elements: out = op(a[, b]).
void runStep(const PointwiseStep& s, const float* a, const float* b, float* out, int64_t n) {
  const float alpha = s.alpha, beta = s.beta;
  switch (s.op) {
    case PointwiseOp::kRelu:
      return map1(a, out, n, [](float x) { return selectValue(x < 0.f, 0.f, x); });
    case PointwiseOp::kSigmoid:
      return map1(a, out, n, [](float x) { return 1.f / (1.f + std::exp(-x)); });
    case PointwiseOp::kTanh:
      return map1(a, out, n, [](float x) { return std::tanh(x); });
    case PointwiseOp::kExp:
      return map1(a, out, n, [](float x) { return std::exp(x); });
    case PointwiseOp::kLog:
      return map1(a, out, n, [](float x) { return std::log(x); });
    case PointwiseOp::kSqrt:
      return map1(a, out, n, [](float x) { return std::sqrt(x); });
    case PointwiseOp::kNeg:
      return map1(a, out, n, [](float x) { return -x; });
    case PointwiseOp::kAbs:
      return map1(a, out, n, [](float x) { return std::fabs(x); });
    case PointwiseOp::kErf:
      return map1(a, out, n, [](float x) { return std::erf(x); });
    case PointwiseOp::kReciprocal:
      return map1(a, out, n, [](float x) { return 1.f / x; });
    case PointwiseOp::kGelu:
      if (alpha != 0.f)
        return map1(a, out, n, [](float x) {
          return 0.5f * x * (1.f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
        });
      return map1(a, out, n,
                  [](float x) { return 0.5f * x * (1.f + std::erf(x * 0.7071067811865476f)); });
    case PointwiseOp::kClip:
      return map1(a, out, n, [=](float x) { return std::min(std::max(x, alpha), beta); });
    case PointwiseOp::kLeakyRelu:
      return map1(a, out, n, [=](float x) { return selectValue(x < 0.f, alpha * x, x); });
    case PointwiseOp::kHardSigmoid:
      return map1(a, out, n, [=](float x) { return clamp01(alpha * x + beta); });
    case PointwiseOp::kHardSwish:
      return map1(a, out, n, [](float x) { return x * clamp01(x / 6.f + 0.5f); });
    case PointwiseOp::kSoftplus:
      return map1(a, out, n, [](float x) { return softplus(x); });
    case PointwiseOp::kCast:
      return map1(a, out, n, [&](float x) { return roundTo(s.type, x); });
    case PointwiseOp::kAdd:
      return map2(a, b, out, n, [](float x, float y) { return x + y; });
    case PointwiseOp::kSub:
      return map2(a, b, out, n, [](float x, float y) { return x - y; });
    case PointwiseOp::kMul:
      return map2(a, b, out, n, [](float x, float y) { return x * y; });
    case PointwiseOp::kDiv:
      return map2(a, b, out, n, [](float x, float y) { return x / y; });
    case PointwiseOp::kPow:
      return map2(a, b, out, n, [](float x, float y) { return std::pow(x, y); });
    case PointwiseOp::kMax:
      return map2(a, b, out, n,
                  [](float x, float y) { return selectValue((x >= y) | std::isnan(x), x, y); });
    case PointwiseOp::kMin:
      return map2(a, b, out, n,
                  [](float x, float y) { return selectValue((x <= y) | std::isnan(x), x, y); });
  }
}

// Reads input k's elements [base, base + n) of the broadcast output into `row`:
// straight for a full-shape input, one value for a single-element one, through the
// broadcast strides otherwise.
template <class T>
void loadTile(const Tensor& in, const Shape& out, const std::vector<int64_t>& strides, int64_t base,
              int64_t n, float* row) {
  const T* data = in.data<T>();
  if (in.numel() == shapeNumel(out)) {
    for (int64_t i = 0; i < n; ++i) row[i] = static_cast<float>(data[base + i]);
    return;
  }
  if (in.numel() == 1) {
    std::fill(row, row + n, static_cast<float>(data[0]));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = base + i, offset = 0;
    for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
      offset += (rest % out[d]) * strides[d];
      rest /= out[d];
    }
    row[i] = static_cast<float>(data[offset]);
  }
}

Status checkInputs(const KernelContext& ctx, const PointwiseProgram& p, Shape* shape) {
  if (ctx.inputCount() != static_cast<size_t>(p.inputCount))
    return ctx.error("has " + std::to_string(ctx.inputCount()) + " inputs, its program reads " +
                     std::to_string(p.inputCount));
  KILN_RETURN_IF_ERROR(ctx.requireInputs(ctx.inputCount()));
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    const Tensor& t = ctx.input(i);
    if (!isPointwiseType(t.type()))
      return ctx.unsupported("input " + std::to_string(i) + " is " + dataTypeName(t.type()) +
                             " (float32, float16 or bfloat16 only)");
    Shape next;
    Status s = broadcastShapes(i == 0 ? t.shape() : *shape, t.shape(), &next);
    if (!s.isOk())
      return ctx.error("input " + std::to_string(i) + " does not broadcast: " + s.message());
    *shape = std::move(next);
  }
  return Status::ok();
}

Status pointwiseChainKernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(PointwiseProgram p, readPointwiseProgram(ctx.node()));
  Shape shape;
  KILN_RETURN_IF_ERROR(checkInputs(ctx, p, &shape));
  Tensor& y = ctx.allocateOutput(0, p.outputType(), shape);
  const int64_t total = y.numel();
  const size_t values = static_cast<size_t>(p.stepValue(p.steps.size()));
  std::vector<float> rows(values * kTile);
  auto row = [&](int id) { return rows.data() + static_cast<size_t>(id) * kTile; };
  for (size_t c = 0; c < p.constants.size(); ++c)
    std::fill(row(p.inputCount + static_cast<int>(c)),
              row(p.inputCount + static_cast<int>(c)) + kTile, p.constants[c]);
  std::vector<std::vector<int64_t>> strides;
  for (int k = 0; k < p.inputCount; ++k)
    strides.push_back(broadcastStrides(ctx.input(k).shape(), shape));
  for (int64_t base = 0; base < total; base += kTile) {
    const int64_t n = std::min(kTile, total - base);
    for (int k = 0; k < p.inputCount; ++k) {
      const Tensor& in = ctx.input(k);
      KILN_RETURN_IF_ERROR(dispatchFloatTypes(in.type(), [&](auto tag) {
        loadTile<typename decltype(tag)::type>(in, shape, strides[k], base, n, row(k));
        return Status::ok();
      }));
    }
    for (size_t s = 0; s < p.steps.size(); ++s) {
      const PointwiseStep& step = p.steps[s];
      const float* b = step.operands.size() > 1 ? row(step.operands[1]) : nullptr;
      runStep(step, row(step.operands[0]), b, row(p.stepValue(s)), n);
    }
    const float* result = row(p.stepValue(p.steps.size() - 1));
    KILN_RETURN_IF_ERROR(dispatchFloatTypes(y.type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = y.data<T>() + base;
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(result[i]);
      return Status::ok();
    }));
  }
  return Status::ok();
}

}  // namespace

void registerPointwiseChainKernel(KernelRegistry& registry) {
  registry.add(kPointwiseChainOp, 1, 1000, &pointwiseChainKernel, kKilnDomain);
}

}  // namespace kiln::cpu
