// fuse_layer_norm and fuse_rms_norm: decomposed LayerNorm and RMSNorm chains become
// LayerNormalization / RMSNormalization (ai.kiln below their ONNX opsets), in the
// forms exporters write; other axes, read intermediates and wrong exponents stay.
// Also: a fused opset-12 model survives the plan file (its ai.kiln nodes resolve
// after the re-import) and runs to the same outputs.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "kiln/build_backend.h"
#include "kiln/builder.h"
#include "kiln/plan.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kLayerNorm = "fuse_layer_norm";
constexpr const char* kRmsNorm = "fuse_rms_norm";

// x [2, 5, 16] -> `nodes` ending in "y" at ai.onnx `opset`.
Network norm(const std::vector<Node>& nodes, int opset = 17) {
  Network net;
  net.opsets[""] = opset;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(5), DimExpr(16)}},
              {"r", DataType::kFloat32, true, {DimExpr(2), DimExpr(5), DimExpr(16)}}};
  g.initializers["gamma"] = randomTensor(DataType::kFloat32, {16}, 4, 0.5, 1.5);
  g.initializers["beta"] = randomTensor(DataType::kFloat32, {16}, 5);
  g.initializers["gamma1"] = floatTensor({1}, {1.25f});
  g.initializers["eps"] = floatTensor({}, {1e-5f});
  g.initializers["two"] = floatTensor({}, {2.f});
  g.initializers["three"] = floatTensor({}, {3.f});
  g.initializers["one"] = floatTensor({}, {1.f});
  g.initializers["minus_half"] = floatTensor({}, {-0.5f});
  g.initializers["last_axis"] = int64Tensor({1}, {-1});
  g.initializers["axis1"] = int64Tensor({1}, {1});
  g.nodes = nodes;
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 5, 16}, 1, -2.0, 3.0)},
                              {"r", randomTensor(DataType::kFloat32, {2, 5, 16}, 2, -1.0, 1.0)}});
}

// ReduceMean over `axis` with keepdims: the axes attribute before opset 18, an input since.
Node mean(const std::string& in, const std::string& out, int opset, int64_t axis = -1) {
  if (opset >= 18)
    return makeNode("ReduceMean", {in, axis == -1 ? "last_axis" : "axis1"}, {out}, opset);
  return withInts(makeNode("ReduceMean", {in}, {out}, opset), "axes", {axis});
}

// The PyTorch (< opset 17) / Paddle LayerNorm: d = x - mean, d^2, mean, + eps, sqrt, d / s,
// * gamma, + beta. `square`: Pow or Mul; `divide`: d / s or d * Reciprocal(s).
std::vector<Node> layerNorm(int opset, bool pow = true, bool divide = true, bool gamma = true,
                            bool beta = true, int64_t axis = -1) {
  std::vector<Node> n = {mean("x", "m", opset, axis), makeNode("Sub", {"x", "m"}, {"d"}, opset)};
  n.push_back(pow ? makeNode("Pow", {"d", "two"}, {"sq"}, opset)
                  : makeNode("Mul", {"d", "d"}, {"sq"}, opset));
  n.push_back(mean("sq", "v", opset, axis));
  n.push_back(makeNode("Add", {"v", "eps"}, {"a"}, opset));
  n.push_back(makeNode("Sqrt", {"a"}, {"s"}, opset));
  const std::string normalized = gamma || beta ? "nd" : "y";
  if (divide) {
    n.push_back(makeNode("Div", {"d", "s"}, {normalized}, opset));
  } else {
    n.push_back(makeNode("Reciprocal", {"s"}, {"inv"}, opset));
    n.push_back(makeNode("Mul", {"inv", "d"}, {normalized}, opset));
  }
  if (gamma) n.push_back(makeNode("Mul", {"gamma", "nd"}, {beta ? "g" : "y"}, opset));
  if (beta) n.push_back(makeNode("Add", {gamma ? "g" : "nd", "beta"}, {"y"}, opset));
  return n;
}

enum class Inverse { kReciprocalSqrt, kDivSqrt, kPowMinusHalf, kOneOverSqrt };

// LLaMA's RMSNorm: x^2, mean, + eps, 1 / sqrt, x * that [* gamma].
std::vector<Node> rmsNorm(int opset, Inverse inverse, bool gamma = true, bool pow = true) {
  std::vector<Node> n = {pow ? makeNode("Pow", {"x", "two"}, {"sq"}, opset)
                             : makeNode("Mul", {"x", "x"}, {"sq"}, opset),
                         mean("sq", "v", opset), makeNode("Add", {"eps", "v"}, {"a"}, opset)};
  const std::string out = gamma ? "nx" : "y";
  switch (inverse) {
    case Inverse::kReciprocalSqrt:
      n.push_back(makeNode("Sqrt", {"a"}, {"s"}, opset));
      n.push_back(makeNode("Reciprocal", {"s"}, {"inv"}, opset));
      n.push_back(makeNode("Mul", {"x", "inv"}, {out}, opset));
      break;
    case Inverse::kOneOverSqrt:
      n.push_back(makeNode("Sqrt", {"a"}, {"s"}, opset));
      n.push_back(makeNode("Div", {"one", "s"}, {"inv"}, opset));
      n.push_back(makeNode("Mul", {"inv", "x"}, {out}, opset));
      break;
    case Inverse::kDivSqrt:
      n.push_back(makeNode("Sqrt", {"a"}, {"s"}, opset));
      n.push_back(makeNode("Div", {"x", "s"}, {out}, opset));
      break;
    case Inverse::kPowMinusHalf:
      n.push_back(makeNode("Pow", {"a", "minus_half"}, {"inv"}, opset));
      n.push_back(makeNode("Mul", {"x", "inv"}, {out}, opset));
      break;
  }
  if (gamma) n.push_back(makeNode("Mul", {"nx", "gamma"}, {"y"}, opset));
  return n;
}

// One node of `op` in `domain` reading x; returns it.
Node expectOneNode(const std::string& pass, const Network& net, const std::string& op,
                   const std::string& domain) {
  Network fused;
  auto applied = fuseAndCompareOutputs(pass, run, net, 1, &fused);
  EXPECT_EQ(applied.size(), 1u);
  if (applied.empty() || fused.graph.nodes.empty()) return Node();
  EXPECT_EQ(applied[0].nodes.size(), net.graph.nodes.size());
  const Node& node = fused.graph.nodes[0];
  EXPECT_EQ(node.opType, op);
  EXPECT_EQ(node.domain, domain);
  EXPECT_EQ(node.inputs.at(0), "x");
  EXPECT_EQ(node.attrInt("axis", 0), -1);
  EXPECT_FLOAT_EQ(node.attrFloat("epsilon", 0.f), 1e-5f);
  EXPECT_EQ(node.attrString(kFusionPassAttribute, ""), pass);
  return node;
}

TEST(FuseLayerNorm, DecomposedFormsBecomeLayerNormalization) {
  const Node full = expectOneNode(kLayerNorm, norm(layerNorm(17)), "LayerNormalization", "");
  EXPECT_EQ(full.inputs, (std::vector<std::string>{"x", "gamma", "beta"}));
  expectOneNode(kLayerNorm, norm(layerNorm(17, false, false)), "LayerNormalization", "");
  expectOneNode(kLayerNorm, norm(layerNorm(18), 18), "LayerNormalization", "");
  // No beta; no gamma either (a ones scale is made).
  const Node noBeta = expectOneNode(kLayerNorm, norm(layerNorm(17, true, true, true, false)),
                                    "LayerNormalization", "");
  EXPECT_EQ(noBeta.inputs, (std::vector<std::string>{"x", "gamma"}));
  Network fused;
  ASSERT_EQ(fuseAndCompareOutputs(kLayerNorm, run, norm(layerNorm(17, true, false, false, false)),
                                  1, &fused)
                .size(),
            1u);
  const Tensor& ones = fused.graph.initializers.at(fused.graph.nodes[0].inputs[1]);
  EXPECT_EQ(ones.shape(), (Shape{16}));
  EXPECT_EQ(ones.data<float>()[7], 1.f);
}

TEST(FuseLayerNorm, OlderOpsetsGetTheKilnOpAndTheResidualFusesToo) {
  expectOneNode(kLayerNorm, norm(layerNorm(12), 12), "LayerNormalization", kKilnDomain);
  // Add(x0, r) -> LayerNorm: then fuse_add_layer_norm makes one AddLayerNorm of it.
  std::vector<Node> nodes = {makeNode("Add", {"x0", "r"}, {"x"}, 12)};
  for (const Node& n : layerNorm(12)) nodes.push_back(n);
  Network net = norm(nodes, 12);
  net.graph.inputs[0].name = "x0";
  Network fused;
  auto applied = fuseAndCompareOutputs(
      kLayerNorm,
      [](const Network& n) {
        return runOnReference(n,
                              {{"x0", randomTensor(DataType::kFloat32, {2, 5, 16}, 1, -2.0, 3.0)},
                               {"r", randomTensor(DataType::kFloat32, {2, 5, 16}, 2, -1.0, 1.0)}});
      },
      net, 1, &fused);
  EXPECT_EQ(applied.size(), 1u);
  EXPECT_EQ(fused.graph.nodes[0].opType, "AddLayerNorm");
  EXPECT_EQ(fused.graph.nodes[0].attrStrings(kSourceNodesAttribute).size(), nodes.size());
}

TEST(FuseLayerNorm, OtherAxesReadIntermediatesAndWrongScalesStay) {
  // Normalizing axis 1 is not the last axis: nothing fuses.
  Network axis = norm(layerNorm(17, true, true, true, true, 1));
  EXPECT_TRUE(fuseAndCompareOutputs(kLayerNorm, run, axis, axis.graph.nodes.size()).empty());
  // d^3 is no variance.
  Network cube = norm(layerNorm(17));
  cube.graph.nodes[2].inputs[1] = "three";
  EXPECT_TRUE(fuseAndCompareOutputs(kLayerNorm, run, cube, cube.graph.nodes.size()).empty());
  // The variance read elsewhere: nothing fuses.
  Network variance = norm(layerNorm(17));
  variance.graph.outputs.push_back({"v", DataType::kFloat32, false, {}});
  EXPECT_TRUE(
      fuseAndCompareOutputs(kLayerNorm, run, variance, variance.graph.nodes.size()).empty());
  // d read elsewhere: no LayerNorm of x, but d's RMSNorm tail still is one.
  Network centered = norm(layerNorm(17, true, true, true, false));
  centered.graph.outputs.push_back({"d", DataType::kFloat32, false, {}});
  EXPECT_TRUE(fuseAndCompareOutputs(kLayerNorm, run, centered, 3).empty());
  EXPECT_EQ(fuseAndCompareOutputs(kRmsNorm, run, centered, 3).size(), 1u);
  // A [1] scale broadcasts but is no per-element gamma: the Mul and Add stay.
  Network scalar = norm(layerNorm(17));
  scalar.graph.nodes[7].inputs[0] = "gamma1";
  EXPECT_EQ(fuseAndCompareOutputs(kLayerNorm, run, scalar, 3).size(), 1u);
}

TEST(FuseRmsNorm, LlamaFormsBecomeRMSNormalization) {
  for (Inverse inverse : {Inverse::kReciprocalSqrt, Inverse::kDivSqrt, Inverse::kPowMinusHalf,
                          Inverse::kOneOverSqrt}) {
    SCOPED_TRACE(static_cast<int>(inverse));
    const Node node =
        expectOneNode(kRmsNorm, norm(rmsNorm(23, inverse), 23), "RMSNormalization", "");
    EXPECT_EQ(node.inputs, (std::vector<std::string>{"x", "gamma"}));
  }
  expectOneNode(kRmsNorm, norm(rmsNorm(17, Inverse::kReciprocalSqrt, true, false)),
                "RMSNormalization", kKilnDomain);
  expectOneNode(kRmsNorm, norm(rmsNorm(17, Inverse::kDivSqrt, false)), "RMSNormalization",
                kKilnDomain);
  // x read elsewhere (the residual stream) does not matter: x stays.
  Network shared = norm(rmsNorm(23, Inverse::kReciprocalSqrt), 23);
  shared.graph.nodes.push_back(makeNode("Relu", {"x"}, {"rx"}));
  shared.graph.outputs.push_back({"rx", DataType::kFloat32, false, {}});
  EXPECT_EQ(fuseAndCompareOutputs(kRmsNorm, run, shared, 2).size(), 1u);
}

TEST(FuseRmsNorm, OtherAxesReadIntermediatesAndWrongExponentsStay) {
  Network cube = norm(rmsNorm(17, Inverse::kReciprocalSqrt));
  cube.graph.nodes[0].inputs[1] = "three";
  EXPECT_TRUE(fuseAndCompareOutputs(kRmsNorm, run, cube, cube.graph.nodes.size()).empty());
  Network root = norm(rmsNorm(17, Inverse::kPowMinusHalf));
  root.graph.nodes[3].inputs[1] = "two";  // (v + eps)^2, not its inverse root
  EXPECT_TRUE(fuseAndCompareOutputs(kRmsNorm, run, root, root.graph.nodes.size()).empty());
  Network axis = norm(rmsNorm(17, Inverse::kReciprocalSqrt));
  axis.graph.nodes[1] = mean("sq", "v", 17, 1);
  EXPECT_TRUE(fuseAndCompareOutputs(kRmsNorm, run, axis, axis.graph.nodes.size()).empty());
  Network read = norm(rmsNorm(17, Inverse::kReciprocalSqrt));
  read.graph.outputs.push_back({"inv", DataType::kFloat32, false, {}});
  EXPECT_TRUE(fuseAndCompareOutputs(kRmsNorm, run, read, read.graph.nodes.size()).empty());
}

TEST(FuseLayerNorm, KilnNodesSurviveThePlanFile) {
  // Opset 12: the fused LayerNormalization is ai.kiln, so the plan re-imports it.
  auto original = std::make_shared<Network>(norm(layerNorm(12), 12));
  auto plan = buildPlan(original, BuilderConfig(), *cpuBuildBackend());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  auto bytes = serializePlan(*plan);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
  auto loaded = deserializePlan(*bytes, "layer_norm.kiln");
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  ASSERT_EQ(loaded->network->graph.nodes.size(), 1u);
  EXPECT_EQ(loaded->network->graph.nodes[0].domain, kKilnDomain);
  const auto expected = run(*original);
  const auto actual = run(*loaded->network);
  ASSERT_EQ(actual.size(), 1u);
  expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-5);
}

}  // namespace
}  // namespace kiln::test
