#include "ops/rnn_params.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace kiln::ops {
namespace {

using Kind = RnnActivation::Kind;

struct ActivationInfo {
  const char* name;  // lower case
  Kind kind;
  bool takesAlpha, takesBeta;
  float alpha, beta;  // the defaults of the matching ONNX operators
};

constexpr ActivationInfo kActivations[] = {
    {"relu", Kind::kRelu, false, false, 0.f, 0.f},
    {"tanh", Kind::kTanh, false, false, 0.f, 0.f},
    {"sigmoid", Kind::kSigmoid, false, false, 0.f, 0.f},
    {"affine", Kind::kAffine, true, true, 1.f, 0.f},
    {"leakyrelu", Kind::kLeakyRelu, true, false, 0.01f, 0.f},
    {"thresholdedrelu", Kind::kThresholdedRelu, true, false, 1.f, 0.f},
    {"scaledtanh", Kind::kScaledTanh, true, true, 1.f, 1.f},
    {"hardsigmoid", Kind::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", Kind::kElu, true, false, 1.f, 0.f},
    {"softsign", Kind::kSoftsign, false, false, 0.f, 0.f},
    {"softplus", Kind::kSoftplus, false, false, 0.f, 0.f},
};

std::vector<std::string> defaultActivations(RnnCell cell) {
  switch (cell) {
    case RnnCell::kRnn:
      return {"Tanh"};
    case RnnCell::kGru:
      return {"Sigmoid", "Tanh"};
    case RnnCell::kLstm:
      return {"Sigmoid", "Tanh", "Tanh"};
  }
  return {};
}

std::string lowerCase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

const ActivationInfo* findActivation(const std::string& name) {
  const std::string key = lowerCase(name);
  const auto* info = std::find_if(std::begin(kActivations), std::end(kActivations),
                                  [&](const ActivationInfo& a) { return key == a.name; });
  return info == std::end(kActivations) ? nullptr : info;
}

}  // namespace

bool isRnnActivationName(const std::string& name) {
  return findActivation(name) != nullptr;
}

int rnnActivationsPerDirection(RnnCell cell) {
  return static_cast<int>(defaultActivations(cell).size());
}

Result<std::vector<RnnActivation>> rnnActivations(const Node& node, RnnCell cell,
                                                  int64_t directions) {
  const size_t perDirection = defaultActivations(cell).size();
  std::vector<std::string> names = node.attrStrings("activations");
  if (names.empty()) names = defaultActivations(cell);
  // A single direction's list serves both directions of a bidirectional cell.
  if (names.size() == perDirection && directions == 2) {
    const std::vector<std::string> forward = names;
    names.insert(names.end(), forward.begin(), forward.end());
  }
  if (directions < 1 || names.size() != perDirection * static_cast<size_t>(directions))
    return invalidArgument("attribute 'activations' needs " +
                           std::to_string(perDirection * static_cast<size_t>(
                                                             std::max<int64_t>(directions, 1))) +
                           " entries, got " + std::to_string(names.size()));
  const std::vector<float> alphas = node.attrFloats("activation_alpha");
  const std::vector<float> betas = node.attrFloats("activation_beta");
  size_t nextAlpha = 0, nextBeta = 0;
  std::vector<RnnActivation> out;
  for (const std::string& name : names) {
    const ActivationInfo* info = findActivation(name);
    if (!info) return unsupported("activation '" + name + "'");
    RnnActivation a{info->kind, info->alpha, info->beta};
    if (info->takesAlpha && nextAlpha < alphas.size()) a.alpha = alphas[nextAlpha++];
    if (info->takesBeta && nextBeta < betas.size()) a.beta = betas[nextBeta++];
    out.push_back(a);
  }
  return out;
}

}  // namespace kiln::ops
