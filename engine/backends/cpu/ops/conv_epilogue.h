// The activation epilogue of ai.kiln FusedConv and QuantizedConv: the activation
// attributes (activation, activation_alpha, activation_beta) parsed once per node and
// applied per element in the layer's compute type.
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
  kSilu
};

struct Epilogue {
  ConvActivation activation = ConvActivation::kNone;
  double alpha = 0.0, beta = 0.0;
};

inline Status parseEpilogue(const KernelContext& ctx, Epilogue* out) {
  static const std::pair<const char*, ConvActivation> kNames[] = {
      {"none", ConvActivation::kNone},
      {"relu", ConvActivation::kRelu},
      {"leaky_relu", ConvActivation::kLeakyRelu},
      {"clip", ConvActivation::kClip},
      {"sigmoid", ConvActivation::kSigmoid},
      {"tanh", ConvActivation::kTanh},
      {"hard_sigmoid", ConvActivation::kHardSigmoid},
      {"hard_swish", ConvActivation::kHardSwish},
      {"silu", ConvActivation::kSilu}};
  const std::string name = ctx.node().attrString("activation", "none");
  auto it = std::find_if(std::begin(kNames), std::end(kNames),
                         [&](const auto& entry) { return name == entry.first; });
  if (it == std::end(kNames))
    return ctx.error(
        "unknown activation '" + name +
        "' (none, relu, leaky_relu, clip, sigmoid, tanh, hard_sigmoid, hard_swish, silu)");
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
    default:
      return x;
  }
}

}  // namespace kiln::cpu
