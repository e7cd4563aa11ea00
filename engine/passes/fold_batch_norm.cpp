// fold_batch_norm:
//   BatchNormalization(Conv(X, W, B), scale, bias, mean, var)
//     = Conv(X, W * s, (B - mean) * s + bias),  s = scale / sqrt(var + epsilon)
// per output channel m (W's first dim). Only for inference-mode BN with one output,
// constant float32 parameters and weights, and a Conv output read by the BN alone.
// New weights get new names, so a W shared with other nodes is left as it was.
#include <cmath>

#include "passes/fusion_passes.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fold_batch_norm";

const Tensor* float32Constant(const GraphIndex& index, const std::string& name, int64_t count) {
  const Tensor* t = name.empty() ? nullptr : index.constant(name);
  return t && t->type() == DataType::kFloat32 && (count < 0 || t->numel() == count) ? t : nullptr;
}

// The folded weights and bias, or false when the pair does not qualify.
bool fold(const Node& conv, const Node& bn, const GraphIndex& index, Tensor* w, Tensor* b) {
  if (bn.inputs.size() != 5 || bn.outputs.size() != 1 || bn.attrInt("training_mode", 0) != 0)
    return false;
  const Tensor* weights = float32Constant(index, conv.inputs[1], -1);
  if (!weights || weights->rank() < 3) return false;
  const int64_t channels = weights->dim(0);
  const Tensor* params[4];
  for (int i = 0; i < 4; ++i) {
    params[i] = float32Constant(index, bn.inputs[i + 1], channels);
    if (!params[i]) return false;
  }
  const Tensor* bias =
      conv.inputs.size() > 2 ? float32Constant(index, conv.inputs[2], channels) : nullptr;
  if (conv.inputs.size() > 2 && !conv.inputs[2].empty() && !bias) return false;
  const double epsilon = bn.attrFloat("epsilon", 1e-5f);
  *w = weights->clone();
  *b = Tensor(DataType::kFloat32, {channels});
  const int64_t perChannel = weights->numel() / channels;
  for (int64_t m = 0; m < channels; ++m) {
    const double s = params[0]->data<float>()[m] / std::sqrt(params[3]->data<float>()[m] + epsilon);
    float* row = w->data<float>() + m * perChannel;
    for (int64_t i = 0; i < perChannel; ++i) row[i] = static_cast<float>(row[i] * s);
    const double b0 = bias ? bias->data<float>()[m] : 0.0;
    b->data<float>()[m] =
        static_cast<float>((b0 - params[2]->data<float>()[m]) * s + params[1]->data<float>()[m]);
  }
  return true;
}

// A fresh initializer name derived from `base`.
std::string freshName(const Graph& g, const std::string& base) {
  std::string name = base + "_bnfolded";
  for (int i = 1; g.initializers.count(name); ++i) name = base + "_bnfolded" + std::to_string(i);
  return name;
}

// Conv at `at` -> BatchNormalization as one Conv with folded weights and bias.
std::optional<Fusion> foldAt(Graph& g, const GraphIndex& index, int at) {
  const Node& conv = g.nodes[at];
  const int bnIndex = conv.opType == "Conv" && isDefaultDomain(conv) && conv.inputs.size() >= 2 &&
                              conv.outputs.size() == 1
                          ? index.soleReader(conv.outputs[0])
                          : -1;
  Tensor w, b;
  if (bnIndex < 0 || g.nodes[bnIndex].opType != "BatchNormalization" ||
      !isDefaultDomain(g.nodes[bnIndex]) || g.nodes[bnIndex].inputs[0] != conv.outputs[0] ||
      !fold(conv, g.nodes[bnIndex], index, &w, &b))
    return std::nullopt;
  Node fused = conv;
  fused.name = conv.displayName() + " + " + g.nodes[bnIndex].displayName();
  fused.outputs = {g.nodes[bnIndex].outputs[0]};
  const std::string wName = freshName(g, conv.inputs[1]);
  const std::string bName = freshName(g, conv.inputs[1] + "_bias");
  g.initializers[wName] = std::move(w);
  g.initializers[bName] = std::move(b);
  fused.inputs.resize(3);
  fused.inputs[1] = wName;
  fused.inputs[2] = bName;
  return Fusion{{at, bnIndex}, std::move(fused)};
}

}  // namespace

std::unique_ptr<Pass> makeFoldBatchNorm() {
  return makeFusionPass(
      {kName, "Conv(X, W, B) -> BatchNormalization: W * s, (B - mean) * s + bias", 1}, foldAt);
}

}  // namespace kiln::passes
