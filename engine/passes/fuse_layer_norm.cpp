// fuse_layer_norm: LayerNormalization as exporters before opset 17 write it, as one
// LayerNormalization node (ai.kiln LayerNormalization, the same op, in models that
// import an older opset; rewrite_helpers.h):
//   m = ReduceMean(x), d = x - m, v = ReduceMean(d^2), y = d / sqrt(v + eps) [* gamma] [+ beta]
//   = LayerNormalization(x, gamma (ones when absent), [beta]; axis = -1, epsilon = eps)
// over the last axis, in the forms norm_patterns.h lists (Pow or Mul for d^2, Div by
// the root or a product with its reciprocal, products in any order). d is read inside
// the pattern alone; gamma and beta are [n] with n x's last dim. Runs before
// fuse_add_layer_norm, which then takes a residual Add in front of the new node.
#include "passes/fusion_passes.h"
#include "passes/norm_patterns.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fuse_layer_norm";

std::optional<Fusion> layerNormAt(Graph& g, const GraphIndex& index, const Shapes& shapes, int at) {
  NormalizationMatch m;
  auto centered = [](const NormalizationMatch& n) { return n.centered; };
  if (!matchNormalization(g, index, shapes, at, centered, &m)) return std::nullopt;
  const std::string scale = scaleOrOnes(g, shapes, m);
  if (scale.empty()) return std::nullopt;
  Fusion fusion;
  fusion.nodes = m.nodes;
  Node& norm = fusion.fused;
  norm.opType = "LayerNormalization";
  placeNewerOnnxOp(&norm, g.nodes[at].opset, 17);
  norm.name = "LayerNorm(" + g.nodes[m.nodes.front()].displayName() + " .. " +
              g.nodes[m.nodes.back()].displayName() + ")";
  norm.inputs = {m.x, scale};
  if (!m.bias.empty()) norm.inputs.push_back(m.bias);
  norm.outputs = {m.output};
  norm.attributes["axis"] = intAttribute(-1);
  norm.attributes["epsilon"] = floatAttribute(static_cast<float>(m.epsilon));
  return fusion;
}

}  // namespace

std::unique_ptr<Pass> makeFuseLayerNorm() {
  return makeFusionPass(
      {kName,
       "(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * gamma + beta (last axis) -> "
       "LayerNormalization",
       1},
      layerNormAt);
}

}  // namespace kiln::passes
