// fold_batch_norm:
//   BatchNormalization(Conv(X, W, B), scale, bias, mean, var)
//     = Conv(X, W * s, (B - mean) * s + bias),  s = scale / sqrt(var + epsilon)
// per output channel m: W's first dim for Conv; for ConvTranspose, whose W is
// [C, M/group, k...], output channel m = (c / (C/group)) * (M/group) + j of W[c, j].
// Only for inference-mode BN with one output, constant float32 parameters and
// weights, and a convolution output read by the BN alone.
// New weights get new names, so a W shared with other nodes is left as it was.
#include <cmath>
#include <vector>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fold_batch_norm";
using rewrite::float32Constant;

// The folded weights and bias, or false when the pair does not qualify.
// The output channel of each W row (W viewed as [rows, k...]): W[m] for Conv,
// W[c, j] -> (c / (C/group)) * (M/group) + j for ConvTranspose; empty when the
// group does not divide W.
std::vector<int64_t> rowChannels(const Node& conv, const Tensor& weights, int64_t* channels) {
  const int64_t d0 = weights.dim(0);
  if (conv.opType == "Conv") {
    *channels = d0;
    std::vector<int64_t> rows(static_cast<size_t>(d0));
    for (int64_t m = 0; m < d0; ++m) rows[m] = m;
    return rows;
  }
  const int64_t group = conv.attrInt("group", 1), perGroup = weights.dim(1);
  if (group <= 0 || d0 % group) return {};
  *channels = perGroup * group;
  std::vector<int64_t> rows;
  for (int64_t c = 0; c < d0; ++c)
    for (int64_t j = 0; j < perGroup; ++j) rows.push_back(c / (d0 / group) * perGroup + j);
  return rows;
}

}  // namespace

bool foldBatchNormWeights(const Node& conv, const Node& bn, const GraphIndex& index, Tensor* w,
                          Tensor* b) {
  if (bn.inputs.size() != 5 || bn.outputs.size() != 1 || bn.attrInt("training_mode", 0) != 0)
    return false;
  const Tensor* weights = float32Constant(index, conv.inputs[1], -1);
  if (!weights || weights->rank() < 3) return false;
  int64_t channels = 0;
  const std::vector<int64_t> rowChannel = rowChannels(conv, *weights, &channels);
  if (rowChannel.empty()) return false;
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
  std::vector<double> scale(static_cast<size_t>(channels));
  for (int64_t m = 0; m < channels; ++m)
    scale[m] = params[0]->data<float>()[m] / std::sqrt(params[3]->data<float>()[m] + epsilon);
  const int64_t rowLength = weights->numel() / static_cast<int64_t>(rowChannel.size());
  for (size_t r = 0; r < rowChannel.size(); ++r) {
    float* row = w->data<float>() + static_cast<int64_t>(r) * rowLength;
    for (int64_t i = 0; i < rowLength; ++i)
      row[i] = static_cast<float>(row[i] * scale[rowChannel[r]]);
  }
  for (int64_t m = 0; m < channels; ++m) {
    const double s = scale[m];
    const double b0 = bias ? bias->data<float>()[m] : 0.0;
    b->data<float>()[m] =
        static_cast<float>((b0 - params[2]->data<float>()[m]) * s + params[1]->data<float>()[m]);
  }
  return true;
}

namespace {

// A fresh initializer name derived from `base`.
std::string freshName(const Graph& g, const std::string& base) {
  std::string name = base + "_bnfolded";
  for (int i = 1; g.initializers.count(name); ++i) name = base + "_bnfolded" + std::to_string(i);
  return name;
}

// Conv or ConvTranspose at `at` -> BatchNormalization as one convolution with folded
// weights and bias.
std::optional<Fusion> foldAt(Graph& g, const GraphIndex& index, int at) {
  const Node& conv = g.nodes[at];
  const bool convolution = conv.opType == "Conv" || conv.opType == "ConvTranspose";
  const int bnIndex =
      convolution && isDefaultDomain(conv) && conv.inputs.size() >= 2 && conv.outputs.size() == 1
          ? index.soleReader(conv.outputs[0])
          : -1;
  Tensor w, b;
  if (bnIndex < 0 || g.nodes[bnIndex].opType != "BatchNormalization" ||
      !isDefaultDomain(g.nodes[bnIndex]) || g.nodes[bnIndex].inputs[0] != conv.outputs[0] ||
      !foldBatchNormWeights(conv, g.nodes[bnIndex], index, &w, &b))
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
      {kName, "Conv/ConvTranspose(X, W, B) -> BatchNormalization: W * s, (B - mean) * s + bias", 1},
      foldAt);
}

}  // namespace kiln::passes
