// NegativeLogLikelihoodLoss (opset 12) and SoftmaxCrossEntropyLoss (opset 12), the
// training losses ONNX exports from torch.nn.NLLLoss / CrossEntropyLoss.
//
// Input x is [N, C, d1..dk] (C = classes), target [N, d1..dk] holds class indices and the
// optional weight is [C]. Per element the loss is -x[n, target, d] * weight[target]; an
// element whose target equals ignore_index contributes neither loss nor weight. Reduction
// "none" keeps target's shape, "sum" adds, "mean" divides the sum by the summed weights.
// SoftmaxCrossEntropyLoss first takes log_softmax over C (optionally its second output).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/ops/op_utils.h"

namespace kiln::cpu {
namespace {

enum class Reduction { kNone, kSum, kMean };

struct LossProblem {
  int64_t batch = 0, classes = 0, inner = 0;  // x viewed as [N, C, inner]
  Reduction reduction = Reduction::kMean;
  bool hasIgnoreIndex = false;
  int64_t ignoreIndex = 0;
};

Status readLossProblem(const KernelContext& ctx, LossProblem* p) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const Tensor& target = ctx.input(1);
  if (x.rank() < 2) return ctx.error("input must be [N, C, ...], got " + shapeToString(x.shape()));
  Shape expected = x.shape();
  expected.erase(expected.begin() + 1);
  if (target.shape() != expected) {
    return ctx.error("target shape " + shapeToString(target.shape()) + " must be " +
                     shapeToString(expected) + " (input shape without dim 1)");
  }
  if (target.type() != DataType::kInt32 && target.type() != DataType::kInt64) {
    return ctx.error("target must be int32 or int64");
  }
  p->batch = x.dim(0);
  p->classes = x.dim(1);
  p->inner = x.numel() / std::max<int64_t>(1, p->batch * p->classes);
  if (p->batch * p->classes == 0) p->inner = target.numel() / std::max<int64_t>(1, p->batch);
  if (const Tensor* w = ctx.inputOrNull(2); w && (w->rank() != 1 || w->dim(0) != p->classes)) {
    return ctx.error("weight must be 1-D of size C = " + std::to_string(p->classes));
  }
  const std::string reduction = ctx.node().attrString("reduction", "mean");
  if (reduction == "none")
    p->reduction = Reduction::kNone;
  else if (reduction == "sum")
    p->reduction = Reduction::kSum;
  else if (reduction == "mean")
    p->reduction = Reduction::kMean;
  else
    return ctx.error("attribute 'reduction' = '" + reduction + "' is not none, sum or mean");
  p->hasIgnoreIndex = ctx.node().hasAttr("ignore_index");
  p->ignoreIndex = ctx.node().attrInt("ignore_index", 0);
  return Status::ok();
}

// Gathers -logp[n, target, d] * w into `losses` (target's layout) and the weights of the
// counted elements into `weights`. `logp` is x (NLL) or log_softmax(x) (SCE) as double.
Status gatherLosses(const KernelContext& ctx, const LossProblem& p, const std::vector<double>& logp,
                    std::vector<double>* losses, std::vector<double>* weights) {
  const std::vector<int64_t> target = ctx.input(1).toInt64Vector();
  const Tensor* weightIn = ctx.inputOrNull(2);
  losses->assign(target.size(), 0.0);
  weights->assign(target.size(), 0.0);
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t d = 0; d < p.inner; ++d) {
      const int64_t i = n * p.inner + d;
      const int64_t t = target[i];
      if (p.hasIgnoreIndex && t == p.ignoreIndex) continue;
      if (t < 0 || t >= p.classes) {
        return ctx.error("target value " + std::to_string(t) + " at element " + std::to_string(i) +
                         " is outside [0, " + std::to_string(p.classes) + ")");
      }
      const double w = weightIn ? weightIn->valueAsDouble(t) : 1.0;
      (*losses)[i] = -logp[(n * p.classes + t) * p.inner + d] * w;
      (*weights)[i] = w;
    }
  }
  return Status::ok();
}

// Writes the reduced loss as output 0 in x's type.
Status writeLoss(KernelContext& ctx, const LossProblem& p, const std::vector<double>& losses,
                 const std::vector<double>& weights) {
  const DataType type = ctx.input(0).type();
  const bool reduce = p.reduction != Reduction::kNone;
  Tensor& out = ctx.allocateOutput(0, type, reduce ? Shape{} : ctx.input(1).shape());
  double total = 0, weightTotal = 0;
  if (reduce) {
    for (size_t i = 0; i < losses.size(); ++i) {
      total += losses[i];
      weightTotal += weights[i];
    }
    // An all-ignored batch divides 0 by 0: NaN, as the reference and PyTorch give.
    if (p.reduction == Reduction::kMean) total /= weightTotal;
  }
  return dispatchFloatTypes(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = out.data<T>();
    if (reduce) {
      dst[0] = static_cast<T>(static_cast<ComputeType<T>>(total));
    } else {
      for (size_t i = 0; i < losses.size(); ++i)
        dst[i] = static_cast<T>(static_cast<ComputeType<T>>(losses[i]));
    }
    return Status::ok();
  });
}

std::vector<double> readDoubles(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  if (t.type() == DataType::kFloat32) {
    const float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = p[i];
  } else {
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = t.valueAsDouble(i);
  }
  return out;
}

Status checkFloatInput(const KernelContext& ctx) {
  const DataType type = ctx.input(0).type();
  if (type != DataType::kFloat32 && type != DataType::kFloat64 && type != DataType::kFloat16 &&
      type != DataType::kBFloat16) {
    return ctx.unsupported(std::string("input of type ") + dataTypeName(type));
  }
  return Status::ok();
}

Status negativeLogLikelihoodLossKernel(KernelContext& ctx) {
  LossProblem p;
  KILN_RETURN_IF_ERROR(readLossProblem(ctx, &p));
  KILN_RETURN_IF_ERROR(checkFloatInput(ctx));
  std::vector<double> losses, weights;
  KILN_RETURN_IF_ERROR(gatherLosses(ctx, p, readDoubles(ctx.input(0)), &losses, &weights));
  return writeLoss(ctx, p, losses, weights);
}

// log_softmax over the class axis, in place on the [N, C, inner] view.
void logSoftmaxClasses(const LossProblem& p, std::vector<double>* x) {
  // No elements (a class or batch axis of 0): nothing to normalize, and no offsets into a
  // null buffer (found by fuzz_onnx_import).
  if (x->empty()) return;
  double* v = x->data();
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t d = 0; d < p.inner; ++d) {
      double* base = v + n * p.classes * p.inner + d;
      double maxValue = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < p.classes; ++c) maxValue = std::max(maxValue, base[c * p.inner]);
      double sum = 0;
      for (int64_t c = 0; c < p.classes; ++c) sum += std::exp(base[c * p.inner] - maxValue);
      const double logSum = maxValue + std::log(sum);
      for (int64_t c = 0; c < p.classes; ++c) base[c * p.inner] -= logSum;
    }
  }
}

Status softmaxCrossEntropyLossKernel(KernelContext& ctx) {
  LossProblem p;
  KILN_RETURN_IF_ERROR(readLossProblem(ctx, &p));
  KILN_RETURN_IF_ERROR(checkFloatInput(ctx));
  std::vector<double> logp = readDoubles(ctx.input(0));
  logSoftmaxClasses(p, &logp);
  std::vector<double> losses, weights;
  KILN_RETURN_IF_ERROR(gatherLosses(ctx, p, logp, &losses, &weights));
  KILN_RETURN_IF_ERROR(writeLoss(ctx, p, losses, weights));
  if (!ctx.wantsOutput(1)) return Status::ok();
  const Tensor& x = ctx.input(0);
  Tensor& logProb = ctx.allocateOutput(1, x.type(), x.shape());
  return dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = logProb.data<T>();
    for (size_t i = 0; i < logp.size(); ++i)
      dst[i] = static_cast<T>(static_cast<ComputeType<T>>(logp[i]));
    return Status::ok();
  });
}

}  // namespace

void registerLossKernels(KernelRegistry& registry) {
  // Opset 13 and 22 only added float16/bfloat16 and double.
  registry.add("NegativeLogLikelihoodLoss", 12, 1000, &negativeLogLikelihoodLossKernel);
  registry.add("SoftmaxCrossEntropyLoss", 12, 1000, &softmaxCrossEntropyLossKernel);
}

}  // namespace kiln::cpu
