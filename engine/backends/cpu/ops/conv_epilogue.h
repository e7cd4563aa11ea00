// The activation epilogue of ai.kiln FusedConv, QuantizedConv and FusedMatMul: the
// activation attributes (activation, activation_alpha, activation_beta) parsed once
// per node and applied per element in the layer's compute type, with the formulas of
// the ONNX ops they stand for. FusedMatMul also takes the two GELU forms.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "backends/cpu/kernel.h"

namespace kiln::cpu {

enum class ConvActivation {
  kNone,
  kRelu,
  kLeakyRelu,
  kClip,
  kSigmoid,
  kTanh,
  kHardSigmoid,
  kHardSwish,
  kSilu,
  kGeluErf,   // FusedMatMul, FusedConv: Gelu, x * 0.5 * (1 + erf(x / sqrt(2)))
  kGeluTanh,  // FusedMatMul, FusedConv: Gelu(approximate = tanh)
};

struct Epilogue {
  ConvActivation activation = ConvActivation::kNone;
  double alpha = 0.0, beta = 0.0;
};

// The node's activation; the GELU forms only `withGelu` (FusedMatMul, FusedConv; the INT8
// layers have none).
inline Status parseEpilogue(const KernelContext& ctx, Epilogue* out, bool withGelu = false) {
  static const std::pair<const char*, ConvActivation> kNames[] = {
      {"none", ConvActivation::kNone},
      {"relu", ConvActivation::kRelu},
      {"leaky_relu", ConvActivation::kLeakyRelu},
      {"clip", ConvActivation::kClip},
      {"sigmoid", ConvActivation::kSigmoid},
      {"tanh", ConvActivation::kTanh},
      {"hard_sigmoid", ConvActivation::kHardSigmoid},
      {"hard_swish", ConvActivation::kHardSwish},
      {"silu", ConvActivation::kSilu},
      {"gelu_erf", ConvActivation::kGeluErf},
      {"gelu_tanh", ConvActivation::kGeluTanh}};
  const std::string name = ctx.node().attrString("activation", "none");
  const auto* end = std::end(kNames) - (withGelu ? 0 : 2);
  auto it =
      std::find_if(std::begin(kNames), end, [&](const auto& entry) { return name == entry.first; });
  if (it == end)
    return ctx.error("unknown activation '" + name +
                     "' (none, relu, leaky_relu, clip, sigmoid, tanh, hard_sigmoid, hard_swish, "
                     "silu" +
                     (withGelu ? ", gelu_erf, gelu_tanh)" : ")"));
  out->activation = it->second;
  out->alpha = ctx.node().attrFloat("activation_alpha", 0.f);
  out->beta = ctx.node().attrFloat("activation_beta", 0.f);
  return Status::ok();
}

template <class C>
C activate(C x, const Epilogue& e) {
  switch (e.activation) {
    case ConvActivation::kRelu:
      return x > C(0) ? x : C(0);
    case ConvActivation::kLeakyRelu:
      return x >= C(0) ? x : x * C(e.alpha);
    case ConvActivation::kClip:
      return std::min(std::max(x, C(e.alpha)), C(e.beta));
    case ConvActivation::kSigmoid:
      return C(1) / (C(1) + std::exp(-x));
    case ConvActivation::kTanh:
      return std::tanh(x);
    case ConvActivation::kHardSigmoid:
      return std::min(std::max(C(e.alpha) * x + C(e.beta), C(0)), C(1));
    case ConvActivation::kHardSwish:
      return x * std::min(std::max(x / C(6) + C(0.5), C(0)), C(1));
    case ConvActivation::kSilu:
      return x / (C(1) + std::exp(-x));
    case ConvActivation::kGeluErf:  // as the Gelu kernel (activations.cpp)
      return C(0.5) * x * (C(1) + std::erf(x * C(0.7071067811865476)));
    case ConvActivation::kGeluTanh: {
      const C kScale = C(0.7978845608028654);  // sqrt(2 / pi)
      return C(0.5) * x * (C(1) + std::tanh(kScale * (x + C(0.044715) * x * x * x)));
    }
    default:
      return x;
  }
}

}  // namespace kiln::cpu
