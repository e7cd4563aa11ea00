// fuse_conv_bias_activation: Conv [+ per-channel bias Add] [+ residual Add]
// [-> activation] becomes one ai.kiln FusedConv; graphs run with and without the
// pipeline on the CPU reference give the same outputs (1e-5). Negative cases keep
// the graph as it was. The FusedConv reference kernel against hand-computed values,
// and the PP-OCR classifier through the whole pipeline.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/onnx_import.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fuse_conv_bias_activation";

Node conv(std::vector<std::string> in, const std::string& out = "c") {
  return withInts(makeNode("Conv", std::move(in), {out}), "pads", {1, 1, 1, 1});
}

// x [2, 3, 9, 9], x4 [2, 3, 4, 4] and r [2, 4, 9, 9] inputs; w [4, 3, 3, 3], b [4], per-channel
// constants [4, 1, 1] and [1, 4, 1, 1], BN parameters; `nodes` end in "y".
Network convGraph(const std::vector<Node>& nodes) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(3), DimExpr(9), DimExpr(9)}},
              {"x4", DataType::kFloat32, true, {DimExpr(2), DimExpr(3), DimExpr(4), DimExpr(4)}},
              {"r", DataType::kFloat32, true, {DimExpr(2), DimExpr(4), DimExpr(9), DimExpr(9)}},
              {"bvar", DataType::kFloat32, true, {DimExpr(1), DimExpr(4), DimExpr(1), DimExpr(1)}}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {4, 3, 3, 3}, 1);
  g.initializers["b"] = randomTensor(DataType::kFloat32, {4}, 2);
  g.initializers["b3"] = randomTensor(DataType::kFloat32, {4, 1, 1}, 3);
  g.initializers["b4"] = randomTensor(DataType::kFloat32, {1, 4, 1, 1}, 4);
  g.initializers["b1d"] = randomTensor(DataType::kFloat32, {4}, 5);
  g.initializers["b2d"] = randomTensor(DataType::kFloat32, {4, 1}, 6);
  g.initializers["scale"] = randomTensor(DataType::kFloat32, {4}, 7, 0.5, 1.5);
  g.initializers["shift"] = randomTensor(DataType::kFloat32, {4}, 8);
  g.initializers["mean"] = randomTensor(DataType::kFloat32, {4}, 9);
  g.initializers["var"] = randomTensor(DataType::kFloat32, {4}, 10, 0.2, 2.0);
  g.initializers["lo"] = floatTensor({}, {-0.25f});
  g.initializers["hi"] = floatTensor({}, {0.5f});
  g.initializers["zero"] = floatTensor({}, {0.f});
  g.initializers["three"] = floatTensor({}, {3.f});
  g.initializers["six"] = floatTensor({}, {6.f});
  g.initializers["sqrt2"] = floatTensor({}, {1.41421356f});
  g.initializers["one"] = floatTensor({}, {1.f});
  g.initializers["half"] = floatTensor({}, {0.5f});
  g.nodes = nodes;
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  std::map<std::string, Tensor> in = {
      {"x", randomTensor(DataType::kFloat32, {2, 3, 9, 9}, 11, -2.0, 2.0)},
      {"x4", randomTensor(DataType::kFloat32, {2, 3, 4, 4}, 14, -2.0, 2.0)},
      {"r", randomTensor(DataType::kFloat32, {2, 4, 9, 9}, 12, -2.0, 2.0)},
      {"bvar", randomTensor(DataType::kFloat32, {1, 4, 1, 1}, 13)}};
  return runOnReference(net, in);
}

std::vector<PassApplication> fuseAndCompare(const Network& original, size_t expectedNodes,
                                            Network* fusedOut = nullptr) {
  return fuseAndCompareOutputs(kPass, run, original, expectedNodes, fusedOut);
}

TEST(FuseConvBiasActivation, ConvBiasReluIsOneNodeWithProvenance) {
  Network fused;
  auto applied =
      fuseAndCompare(convGraph({conv({"x", "w", "b"}), makeNode("Relu", {"c"}, {"y"})}), 1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"c", "y"}));
  EXPECT_EQ(applied[0].layer, "c + y");
  const Node& node = fused.graph.nodes[0];
  EXPECT_EQ(node.opType, "FusedConv");
  EXPECT_EQ(node.domain, kKilnDomain);
  EXPECT_EQ(node.inputs, (std::vector<std::string>{"x", "w", "b"}));
  EXPECT_EQ(node.outputs, std::vector<std::string>{"y"});
  EXPECT_EQ(node.attrString("activation", ""), "relu");
  EXPECT_EQ(node.attrInts("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(node.attrStrings(kSourceNodesAttribute), (std::vector<std::string>{"c", "y"}));
  EXPECT_EQ(node.attrString(kFusionPassAttribute, ""), kPass);
  EXPECT_EQ(fused.opsets.at(kKilnDomain), 1);
}

TEST(FuseConvBiasActivation, FoldedBatchNormResidualBlock) {
  // Conv -> BN -> Add(r) -> Relu, as in every ResNet bottleneck: the BN folds, then
  // the residual and the Relu join the Conv; provenance names all four ONNX nodes.
  Node bn = makeNode("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"bn"});
  Network fused;
  auto applied =
      fuseAndCompare(convGraph({conv({"x", "w"}), bn, makeNode("Add", {"bn", "r"}, {"s"}),
                                makeNode("Relu", {"s"}, {"y"})}),
                     1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  const std::vector<std::string> sources = {"c", "bn", "s", "y"};
  EXPECT_EQ(applied[0].nodes, sources);
  const Node& node = fused.graph.nodes[0];
  EXPECT_EQ(node.name, "c + bn + s + y");
  EXPECT_EQ(node.attrStrings(kSourceNodesAttribute), sources);
  EXPECT_EQ(node.inputs.size(), 4u);
  EXPECT_EQ(node.inputs[3], "r");
  EXPECT_EQ(node.attrString(kFusionPassAttribute, ""), kPass);
}

TEST(FuseConvBiasActivation, ChannelBiasAddsJoinTheConvBias) {
  for (const char* bias : {"b3", "b4"}) {
    SCOPED_TRACE(bias);
    // No bias of its own: the constant becomes it, reshaped to [4].
    Network fused;
    ASSERT_EQ(fuseAndCompare(convGraph({conv({"x", "w"}), makeNode("Add", {bias, "c"}, {"y"})}), 1,
                             &fused)
                  .size(),
              1u);
    const std::string b = fused.graph.nodes[0].inputs[2];
    EXPECT_EQ(fused.graph.initializers.at(b).shape(), (Shape{4}));
    // With a bias of its own: one bias, the sum; then the residual and a Relu.
    ASSERT_EQ(fuseAndCompare(
                  convGraph({conv({"x", "w", "b"}), makeNode("Add", {"c", bias}, {"cb"}),
                             makeNode("Add", {"r", "cb"}, {"s"}), makeNode("Relu", {"s"}, {"y"})}),
                  1, &fused)
                  .size(),
              1u);
    EXPECT_EQ(fused.graph.nodes[0].attrStrings(kSourceNodesAttribute).size(), 4u);
  }
}

TEST(FuseConvBiasActivation, EveryActivation) {
  struct Case {
    std::vector<Node> tail;  // reads "c", writes "y"
    const char* activation;
  };
  const Node leaky = withFloat(makeNode("LeakyRelu", {"c"}, {"y"}), "alpha", 0.2f);
  const Node hardSigmoid = withFloat(makeNode("HardSigmoid", {"c"}, {"y"}), "alpha", 0.3f);
  const Node clipOld =
      withFloat(withFloat(makeNode("Clip", {"c"}, {"y"}, 6), "min", -0.3f), "max", 0.7f);
  const std::vector<Case> cases = {
      {{leaky}, "leaky_relu"},
      {{makeNode("Clip", {"c", "lo", "hi"}, {"y"}, 13)}, "clip"},
      {{clipOld}, "clip"},
      {{makeNode("Clip", {"c", "zero"}, {"y"}, 13)}, "relu"},
      {{makeNode("Sigmoid", {"c"}, {"y"})}, "sigmoid"},
      {{makeNode("Tanh", {"c"}, {"y"})}, "tanh"},
      {{hardSigmoid}, "hard_sigmoid"},
      {{makeNode("HardSwish", {"c"}, {"y"})}, "hard_swish"},
      {{makeNode("Sigmoid", {"c"}, {"sg"}), makeNode("Mul", {"c", "sg"}, {"y"})}, "silu"},
      // Paddle's hard-swish: x * Clip(x + 3, 0, 6) / 6.
      {{makeNode("Add", {"c", "three"}, {"a3"}),
        makeNode("Clip", {"a3", "zero", "six"}, {"cl"}, 13), makeNode("Mul", {"cl", "c"}, {"m"}),
        makeNode("Div", {"m", "six"}, {"y"})},
       "hard_swish"},
      {{makeNode("Gelu", {"c"}, {"y"}, 20)}, "gelu_erf"},
      {{withString(makeNode("Gelu", {"c"}, {"y"}, 20), "approximate", "tanh")}, "gelu_tanh"},
      // GELU as exported below opset 20: c * 0.5 * (1 + erf(c / sqrt(2))).
      {{makeNode("Div", {"c", "sqrt2"}, {"d"}), makeNode("Erf", {"d"}, {"e"}),
        makeNode("Add", {"e", "one"}, {"e1"}), makeNode("Mul", {"c", "e1"}, {"ce"}),
        makeNode("Mul", {"ce", "half"}, {"y"})},
       "gelu_erf"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.activation);
    std::vector<Node> nodes = {conv({"x", "w", "b"})};
    nodes.insert(nodes.end(), c.tail.begin(), c.tail.end());
    Network fused;
    ASSERT_EQ(fuseAndCompare(convGraph(nodes), 1, &fused).size(), 1u);
    EXPECT_EQ(fused.graph.nodes[0].attrString("activation", ""), c.activation);
  }
}

TEST(FuseConvBiasActivation, OneDimensionalConvolutionAndGelu) {
  // wav2vec2's feature encoder: Conv1d (no bias) -> GELU, one FusedConv of rank 3.
  Network net;
  net.opsets[""] = 20;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(4), DimExpr(30)}}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {6, 4, 3}, 1);
  Node c = withInts(makeNode("Conv", {"x", "w"}, {"c"}, 20), "strides", {2});
  g.nodes = {c, makeNode("Gelu", {"c"}, {"y"}, 20)};
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  Network fused;
  auto run1d = [](const Network& n) {
    return runOnReference(n, {{"x", randomTensor(DataType::kFloat32, {2, 4, 30}, 3, -2.0, 2.0)}});
  };
  ASSERT_EQ(fuseAndCompareOutputs(kPass, run1d, net, 1, &fused).size(), 1u);
  EXPECT_EQ(fused.graph.nodes[0].opType, "FusedConv");
  EXPECT_EQ(fused.graph.nodes[0].attrString("activation", ""), "gelu_erf");
}

TEST(FuseConvBiasActivation, SharedIntermediatesAreNotFused) {
  // The Conv's output is also a graph output: nothing to fuse.
  Network net = convGraph({conv({"x", "w", "b"}), makeNode("Relu", {"c"}, {"y"})});
  net.graph.outputs.push_back({"c", DataType::kFloat32, false, {}});
  EXPECT_TRUE(fuseAndCompare(net, 2).empty());
  // The residual sum feeds the Relu and another node: Conv + Add fuse, the Relu stays.
  Network shared = convGraph({conv({"x", "w", "b"}), makeNode("Add", {"c", "r"}, {"s"}),
                              makeNode("Relu", {"s"}, {"y"}), makeNode("Neg", {"s"}, {"n"})});
  shared.graph.outputs.push_back({"n", DataType::kFloat32, false, {}});
  Network fused;
  auto applied = fuseAndCompare(shared, 3, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"c", "s"}));
  EXPECT_EQ(fused.graph.nodes[0].attrString("activation", ""), "none");
  // SiLU whose Sigmoid output is read elsewhere: not an activation of the chain.
  Network silu = convGraph({conv({"x", "w", "b"}), makeNode("Sigmoid", {"c"}, {"sg"}),
                            makeNode("Mul", {"c", "sg"}, {"y"})});
  silu.graph.outputs.push_back({"sg", DataType::kFloat32, false, {}});
  EXPECT_TRUE(fuseAndCompare(silu, 3).empty());
}

TEST(FuseConvBiasActivation, NonConstantOrMisshapedBiasIsNotFused) {
  // A per-channel value that is not a constant is neither bias nor residual.
  EXPECT_TRUE(
      fuseAndCompare(convGraph({conv({"x", "w", "b"}), makeNode("Add", {"c", "bvar"}, {"y"})}), 2)
          .empty());
  // [4] broadcasts along the last axis, [4, 1] along the one before (a 4 x 4 image
  // here): four values, but not one per channel.
  for (const char* bias : {"b1d", "b2d"}) {
    SCOPED_TRACE(bias);
    EXPECT_TRUE(
        fuseAndCompare(convGraph({conv({"x4", "w", "b"}), makeNode("Add", {"c", bias}, {"a"}),
                                  makeNode("Relu", {"a"}, {"y"})}),
                       3)
            .empty());
  }
  // Clip with a bound computed at run time stays a Clip.
  Network dynamicClip = convGraph({conv({"x", "w", "b"}),
                                   withInt(makeNode("ReduceMin", {"bvar"}, {"nlo"}), "keepdims", 0),
                                   makeNode("Clip", {"c", "nlo"}, {"y"}, 13)});
  EXPECT_TRUE(fuseAndCompare(dynamicClip, 3).empty());
}

TEST(FuseConvBiasActivation, DisabledByName) {
  Network net = convGraph({conv({"x", "w", "b"}), makeNode("Relu", {"c"}, {"y"})});
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(net, 1, {kPass}, &applied).isOk());
  EXPECT_TRUE(applied.empty());
  EXPECT_EQ(net.graph.nodes.size(), 2u);
}

// The reference kernel against act(conv + B + Z) worked out by hand: a 1x1 conv of
// one input channel, x = [1, -2], w = [2, -3] (two output channels).
TEST(FusedConvOp, MatchesTheFormula) {
  const Tensor x = floatTensor({1, 1, 1, 2}, {1.f, -2.f});
  const Tensor w = floatTensor({2, 1, 1, 1}, {2.f, -3.f});
  const Tensor b = floatTensor({2}, {0.5f, -1.f});
  const Tensor z = floatTensor({1, 2, 1, 2}, {0.25f, 1.f, 2.f, -5.f});
  // conv + B + Z = [2 + 0.5 + 0.25, -4 + 0.5 + 1, -3 - 1 + 2, 6 - 1 - 5] = [2.75, -2.5, -2, 0]
  auto leaky = OpTest("FusedConv", 1, kKilnDomain)
                   .attr("activation", std::string("leaky_relu"))
                   .attr("activation_alpha", 0.1f)
                   .input(x)
                   .input(w)
                   .input(b)
                   .input(z)
                   .run();
  ASSERT_TRUE(leaky.isOk()) << leaky.status().toString();
  expectTensorNear(leaky.value()[0], floatTensor({1, 2, 1, 2}, {2.75f, -0.25f, -0.2f, 0.f}), 1e-6,
                   1e-6);
  auto clip = OpTest("FusedConv", 1, kKilnDomain)
                  .attr("activation", std::string("clip"))
                  .attr("activation_alpha", -1.f)
                  .attr("activation_beta", 1.f)
                  .input(x)
                  .input(w)
                  .missingInput()
                  .input(z)
                  .run();
  ASSERT_TRUE(clip.isOk()) << clip.status().toString();
  // Without B: [2.25, -3, -1, 1] clipped to [-1, 1].
  expectTensorNear(clip.value()[0], floatTensor({1, 2, 1, 2}, {1.f, -1.f, -1.f, 1.f}), 1e-6, 1e-6);
  auto bad = OpTest("FusedConv", 1, kKilnDomain)
                 .input(x)
                 .input(w)
                 .input(b)
                 .input(floatTensor({1, 2, 2}, {1.f, 2.f, 3.f, 4.f}))
                 .run();
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("input Z"), std::string::npos) << bad.status().message();
  auto unknown = OpTest("FusedConv", 1, kKilnDomain)
                     .attr("activation", std::string("gelu"))
                     .input(x)
                     .input(w)
                     .run();
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("gelu"), std::string::npos);
}

TEST(FusionPipeline, PaddleClassifierConvolutionsFuse) {
  auto imported = importOnnxFile(std::string(KILN_MODELS_DIR) + "/ppocr_mobile_v2_cls/model.onnx");
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  Network fused = imported.value();
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
  std::map<std::string, int> activations;
  int records = 0;
  for (const Node& n : fused.graph.nodes)
    if (n.opType == "FusedConv") ++activations[n.attrString("activation", "")];
  for (const PassApplication& a : applied) records += a.pass == kPass;
  // Of its 53 convolutions: 18 with Paddle's decomposed hard-swish, 6 with a Relu
  // after the folded BN, and the 18 squeeze-excitation convolutions (9 with Relu, 9
  // with HardSigmoid), whose bias Add reads Reshape(constant, constant shape), a
  // constant once fold_constants has run. The 7 residual Adds stay: their operands'
  // heights and widths are symbolic expressions (the model's input is [N, 3, H, W])
  // that inference cannot prove equal.
  EXPECT_EQ(activations,
            (std::map<std::string, int>{{"hard_sigmoid", 9}, {"hard_swish", 18}, {"relu", 15}}));
  EXPECT_EQ(records, 42);
  const Tensor x = randomTensor(DataType::kFloat32, {2, 3, 48, 192}, 9);
  std::vector<NamedTensor> a, b;
  ASSERT_TRUE(ReferenceBackend(imported.value()).run({{"x", x}}, &a).isOk());
  ASSERT_TRUE(ReferenceBackend(fused).run({{"x", x}}, &b).isOk());
  expectTensorNear(b[0].tensor, a[0].tensor, 1e-5, 1e-3);
}

}  // namespace
}  // namespace kiln::test
