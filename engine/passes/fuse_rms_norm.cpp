// fuse_rms_norm: root-mean-square normalization (LLaMA, T5) as one RMSNormalization
// node (ONNX opset 23; ai.kiln RMSNormalization, the same op, in models that import
// an older opset; rewrite_helpers.h):
//   y = x / sqrt(mean(x^2) + eps) [* gamma]
//     = RMSNormalization(x, gamma (ones when absent); axis = -1, epsilon = eps)
// over the last axis, with 1 / sqrt as Div(x, Sqrt), Reciprocal(Sqrt), Div(1, Sqrt)
// or Pow(., -0.5), x^2 as Pow(x, 2) or x * x, products in any order (norm_patterns.h).
// x may have other readers; gamma is [n] with n x's last dim. A pattern whose x is
// itself x' - mean(x') is a LayerNormalization and left to fuse_layer_norm, which
// runs first.
#include "passes/fusion_passes.h"
#include "passes/norm_patterns.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fuse_rms_norm";

std::optional<Fusion> rmsNormAt(Graph& g, const GraphIndex& index, const Shapes& shapes, int at) {
  NormalizationMatch m;
  auto rootMeanSquare = [](const NormalizationMatch& n) { return !n.centered && n.bias.empty(); };
  if (!matchNormalization(g, index, shapes, at, rootMeanSquare, &m)) return std::nullopt;
  const std::string scale = scaleOrOnes(g, shapes, m);
  if (scale.empty()) return std::nullopt;
  Fusion fusion;
  fusion.nodes = m.nodes;
  Node& norm = fusion.fused;
  norm.opType = "RMSNormalization";
  placeNewerOnnxOp(&norm, g.nodes[at].opset, 23);
  norm.name = "RMSNorm(" + g.nodes[m.nodes.front()].displayName() + " .. " +
              g.nodes[m.nodes.back()].displayName() + ")";
  norm.inputs = {m.x, scale};
  norm.outputs = {m.output};
  norm.attributes["axis"] = intAttribute(-1);
  norm.attributes["epsilon"] = floatAttribute(static_cast<float>(m.epsilon));
  return fusion;
}

}  // namespace

std::unique_ptr<Pass> makeFuseRmsNorm() {
  return makeFusionPass(
      {kName, "x / sqrt(mean(x^2) + eps) * gamma (last axis) -> RMSNormalization", 1}, rmsNormAt);
}

}  // namespace kiln::passes
