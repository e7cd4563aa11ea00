#include <algorithm>
#include <cctype>
#include <string>

#include "backends/cpu/ops/rnn_common.h"

namespace kiln::cpu {
namespace {

struct ActivationInfo {
  const char* name;
  Activation::Kind kind;
  bool takesAlpha, takesBeta;
  float alpha, beta;  // the defaults of the matching ONNX operators
};

constexpr ActivationInfo kActivations[] = {
    {"relu", Activation::Kind::kRelu, false, false, 0.f, 0.f},
    {"tanh", Activation::Kind::kTanh, false, false, 0.f, 0.f},
    {"sigmoid", Activation::Kind::kSigmoid, false, false, 0.f, 0.f},
    {"affine", Activation::Kind::kAffine, true, true, 1.f, 0.f},
    {"leakyrelu", Activation::Kind::kLeakyRelu, true, false, 0.01f, 0.f},
    {"thresholdedrelu", Activation::Kind::kThresholdedRelu, true, false, 1.f, 0.f},
    {"scaledtanh", Activation::Kind::kScaledTanh, true, true, 1.f, 1.f},
    {"hardsigmoid", Activation::Kind::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", Activation::Kind::kElu, true, false, 1.f, 0.f},
    {"softsign", Activation::Kind::kSoftsign, false, false, 0.f, 0.f},
    {"softplus", Activation::Kind::kSoftplus, false, false, 0.f, 0.f},
};

std::vector<std::string> defaultActivations(CellKind kind) {
  switch (kind) {
    case CellKind::kRnn:
      return {"Tanh"};
    case CellKind::kGru:
      return {"Sigmoid", "Tanh"};
    case CellKind::kLstm:
      return {"Sigmoid", "Tanh", "Tanh"};
  }
  return {};
}

std::string lowerCase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

int cellActivationCount(CellKind kind) {
  return static_cast<int>(defaultActivations(kind).size());
}

Status parseActivations(const KernelContext& ctx, CellKind kind, int64_t dirs,
                        std::vector<Activation>* out) {
  const size_t perDirection = defaultActivations(kind).size();
  std::vector<std::string> names = ctx.node().attrStrings("activations");
  if (names.empty()) names = defaultActivations(kind);
  // A single direction's list serves both directions of a bidirectional cell.
  if (names.size() == perDirection && dirs == 2) {
    const std::vector<std::string> forward = names;
    names.insert(names.end(), forward.begin(), forward.end());
  }
  if (names.size() != perDirection * static_cast<size_t>(dirs)) {
    return ctx.error("attribute 'activations' needs " + std::to_string(perDirection * dirs) +
                     " entries, got " + std::to_string(names.size()));
  }
  const std::vector<float> alphas = ctx.node().attrFloats("activation_alpha");
  const std::vector<float> betas = ctx.node().attrFloats("activation_beta");
  size_t nextAlpha = 0, nextBeta = 0;
  out->clear();
  for (const std::string& name : names) {
    const std::string key = lowerCase(name);
    const auto* info = std::find_if(std::begin(kActivations), std::end(kActivations),
                                    [&](const ActivationInfo& a) { return key == a.name; });
    if (info == std::end(kActivations)) return ctx.unsupported("activation '" + name + "'");
    Activation a;
    a.kind = info->kind;
    a.alpha = info->alpha;
    a.beta = info->beta;
    if (info->takesAlpha && nextAlpha < alphas.size()) a.alpha = alphas[nextAlpha++];
    if (info->takesBeta && nextBeta < betas.size()) a.beta = betas[nextBeta++];
    out->push_back(a);
  }
  return Status::ok();
}

}  // namespace kiln::cpu
