// Optimizer update rules of the ai.onnx.preview.training domain: Adagrad, Adam and
// Momentum (standard and Nesterov). Each takes a learning rate R, a step count T and
// then, for n tensors at once, all X's, all G's and the optimizer states; it returns
// all new X's followed by each new state, in input order.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/misc.h"

namespace kiln::cpu {
namespace {

const char kTrainingDomain[] = "ai.onnx.preview.training";

// The inputs and outputs of one optimizer call, with `groups` tensors (X, G and one
// or two states) per optimized tensor.
struct OptimizerCall {
  double rate = 0;
  int64_t step = 0;
  int64_t count = 0;  // n: how many tensors are optimized
};

Status readOptimizerCall(const KernelContext& ctx, int groups, OptimizerCall* call) {
  const int64_t slots = static_cast<int64_t>(ctx.inputCount()) - 2;
  if (slots < groups || slots % groups != 0) {
    return ctx.error("expected R, T and " + std::to_string(groups) +
                     " inputs per optimized tensor, got " + std::to_string(ctx.inputCount()) +
                     " inputs");
  }
  KILN_RETURN_IF_ERROR(ctx.requireInputs(ctx.inputCount()));
  KILN_RETURN_IF_ERROR(readScalarDouble(ctx, 0, "R", &call->rate));
  KILN_RETURN_IF_ERROR(readScalarInt(ctx, 1, "T", &call->step));
  call->count = slots / groups;
  if (ctx.outputCount() != static_cast<size_t>(call->count * (groups - 1))) {
    return ctx.error("expected " + std::to_string(call->count * (groups - 1)) + " outputs");
  }
  for (int64_t i = 0; i < call->count; ++i) {
    const Tensor& x = ctx.input(2 + i);
    if (x.type() != DataType::kFloat32 && x.type() != DataType::kFloat64) {
      return ctx.error("optimized tensors must be float or double");
    }
    for (int g = 1; g < groups; ++g) {
      const Tensor& other = ctx.input(2 + g * call->count + i);
      if (other.type() != x.type() || other.shape() != x.shape()) {
        return ctx.error("input " + std::to_string(2 + g * call->count + i) + " must match X " +
                         shapeToString(x.shape()) + " in shape and type");
      }
    }
  }
  return Status::ok();
}

// Runs `update(x, g, states..., outputs...)` elementwise for each optimized tensor.
// `Update` reads doubles and writes doubles through its pointer arguments.
template <int kStates, class Update>
Status applyOptimizer(KernelContext& ctx, const OptimizerCall& call, Update update) {
  constexpr int groups = 2 + kStates;
  for (int64_t i = 0; i < call.count; ++i) {
    const Tensor& x = ctx.input(2 + i);
    Status status = dispatchFloatTypes(x.type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in[groups];
      T* out[1 + kStates];
      for (int g = 0; g < groups; ++g) in[g] = ctx.input(2 + g * call.count + i).template data<T>();
      for (int s = 0; s <= kStates; ++s) {
        out[s] = ctx.allocateOutput(s * call.count + i, x.type(), x.shape()).template data<T>();
      }
      double values[groups], results[1 + kStates];
      for (int64_t e = 0; e < x.numel(); ++e) {
        for (int g = 0; g < groups; ++g) values[g] = static_cast<double>(in[g][e]);
        update(values, results);
        for (int s = 0; s <= kStates; ++s) out[s][e] = static_cast<T>(results[s]);
      }
      return Status::ok();
    });
    KILN_RETURN_IF_ERROR(status);
  }
  return Status::ok();
}

// values: x, g, h -> results: x_new, h_new.
Status adagradKernel(KernelContext& ctx) {
  OptimizerCall call;
  KILN_RETURN_IF_ERROR(readOptimizerCall(ctx, 3, &call));
  const double decay = ctx.node().attrFloat("decay_factor", 0.f);
  const double epsilon = ctx.node().attrFloat("epsilon", 1e-6f);  // schema default
  const double norm = ctx.node().attrFloat("norm_coefficient", 0.f);
  const double rate = call.rate / (1.0 + static_cast<double>(call.step) * decay);
  return applyOptimizer<1>(ctx, call, [&](const double* v, double* r) {
    const double g = norm * v[0] + v[1];
    r[1] = v[2] + g * g;
    r[0] = v[0] - rate * g / (std::sqrt(r[1]) + epsilon);
  });
}

// values: x, g, v, h -> results: x_new, v_new, h_new.
Status adamKernel(KernelContext& ctx) {
  OptimizerCall call;
  KILN_RETURN_IF_ERROR(readOptimizerCall(ctx, 4, &call));
  const Node& node = ctx.node();
  const double alpha = node.attrFloat("alpha", 0.9f), beta = node.attrFloat("beta", 0.999f);
  const double epsilon = node.attrFloat("epsilon", 1e-6f),
               norm = node.attrFloat("norm_coefficient", 0.f);
  const double post = node.attrFloat("norm_coefficient_post", 0.f);
  // Bias correction of both moments applies from the first step on (T > 0).
  const double t = static_cast<double>(call.step);
  const double rate = call.step > 0
                          ? call.rate * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t))
                          : call.rate;
  return applyOptimizer<2>(ctx, call, [&](const double* v, double* r) {
    const double g = norm * v[0] + v[1];
    r[1] = alpha * v[2] + (1 - alpha) * g;
    r[2] = beta * v[3] + (1 - beta) * g * g;
    const double x = v[0] - rate * r[1] / (std::sqrt(r[2]) + epsilon);
    r[0] = (1 - post) * x;
  });
}

// values: x, g, v -> results: x_new, v_new.
Status momentumKernel(KernelContext& ctx) {
  OptimizerCall call;
  KILN_RETURN_IF_ERROR(readOptimizerCall(ctx, 3, &call));
  const Node& node = ctx.node();
  for (const char* name : {"alpha", "beta", "mode", "norm_coefficient"}) {
    if (!node.hasAttr(name)) return ctx.error(std::string("attribute '") + name + "' is required");
  }
  const std::string mode = node.attrString("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    return ctx.error("mode must be standard or nesterov");
  const bool nesterov = mode == "nesterov";
  const double alpha = node.attrFloat("alpha", 0.f), norm = node.attrFloat("norm_coefficient", 0.f);
  // The gradient's coefficient is 1 on the first step, beta afterwards.
  const double beta = call.step > 0 ? node.attrFloat("beta", 0.f) : 1.0;
  const double rate = call.rate;
  return applyOptimizer<1>(ctx, call, [&](const double* v, double* r) {
    const double g = norm * v[0] + v[1];
    r[1] = alpha * v[2] + beta * g;
    r[0] = v[0] - rate * (nesterov ? g + alpha * r[1] : r[1]);
  });
}

}  // namespace

void registerTrainingKernels(KernelRegistry& registry) {
  registry.add("Adagrad", 1, 1000, &adagradKernel, kTrainingDomain);
  registry.add("Adam", 1, 1000, &adamKernel, kTrainingDomain);
  registry.add("Momentum", 1, 1000, &momentumKernel, kTrainingDomain);
}

}  // namespace kiln::cpu
