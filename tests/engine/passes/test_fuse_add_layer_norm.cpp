// fuse_add_layer_norm: LayerNormalization(A + B) becomes one ai.kiln AddLayerNorm
// (with the sum as a second output when something else reads it), RMSNormalization(A + B)
// one with rms = 1; graphs run with
// and without the pass on the CPU reference give the same outputs. Also the whole
// pipeline on the tiny BERT layer: every attention softmax and residual fuses.
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

constexpr const char* kPass = "fuse_add_layer_norm";

Node layerNorm(std::vector<std::string> in, std::vector<std::string> out = {"y"},
               int64_t axis = -1) {
  Node n = withInt(makeNode("LayerNormalization", std::move(in), std::move(out)), "axis", axis);
  return withFloat(std::move(n), "epsilon", 1e-3f);
}

Node rmsNorm(std::vector<std::string> in, std::vector<std::string> out = {"y"}) {
  Node n = withInt(makeNode("RMSNormalization", std::move(in), std::move(out), 23), "axis", -1);
  return withFloat(std::move(n), "epsilon", 1e-3f);
}

// a, b [2, 5, 16] inputs, a bias [16], gamma/beta [16], a [1] scale; `nodes` end in "y".
Network residual(const std::vector<Node>& nodes) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  const std::vector<DimExpr> shape = {DimExpr(2), DimExpr(5), DimExpr(16)};
  g.inputs = {{"a", DataType::kFloat32, true, shape}, {"b", DataType::kFloat32, true, shape}};
  g.initializers["bias"] = randomTensor(DataType::kFloat32, {16}, 3);
  g.initializers["gamma"] = randomTensor(DataType::kFloat32, {16}, 4, 0.5, 1.5);
  g.initializers["beta"] = randomTensor(DataType::kFloat32, {16}, 5);
  g.initializers["one"] = floatTensor({1}, {1.5f});
  g.nodes = nodes;
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  std::map<std::string, Tensor> in = {
      {"a", randomTensor(DataType::kFloat32, {2, 5, 16}, 1, -3.0, 3.0)},
      {"b", randomTensor(DataType::kFloat32, {2, 5, 16}, 2, -3.0, 3.0)}};
  return runOnReference(net, in);
}

std::vector<PassApplication> fuseAndCompare(const Network& original, size_t expectedNodes,
                                            Network* fusedOut = nullptr) {
  return fuseAndCompareOutputs(kPass, run, original, expectedNodes, fusedOut);
}

TEST(FuseAddLayerNorm, ResidualAddIsOneNodeWithProvenance) {
  Network fused;
  auto applied = fuseAndCompare(
      residual({makeNode("Add", {"a", "b"}, {"sum"}), layerNorm({"sum", "gamma", "beta"})}), 1,
      &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"sum", "y"}));
  const Node& node = fused.graph.nodes[0];
  EXPECT_EQ(node.opType, "AddLayerNorm");
  EXPECT_EQ(node.domain, kKilnDomain);
  EXPECT_EQ(node.name, "sum + y");
  EXPECT_EQ(node.inputs, (std::vector<std::string>{"a", "b", "gamma", "beta"}));
  EXPECT_EQ(node.outputs, std::vector<std::string>{"y"});
  EXPECT_FLOAT_EQ(node.attrFloat("epsilon", 0.f), 1e-3f);
  EXPECT_EQ(node.attrStrings(kSourceNodesAttribute), (std::vector<std::string>{"sum", "y"}));
  EXPECT_EQ(node.attrString(kFusionPassAttribute, ""), kPass);
}

TEST(FuseAddLayerNorm, BiasAlongTheLastDimAndNoBeta) {
  EXPECT_EQ(fuseAndCompare(residual({makeNode("Add", {"bias", "a"}, {"sum"}),
                                     layerNorm({"sum", "gamma", "beta"})}),
                           1)
                .size(),
            1u);
  Network fused;
  EXPECT_EQ(
      fuseAndCompare(residual({makeNode("Add", {"a", "b"}, {"sum"}), layerNorm({"sum", "gamma"})}),
                     1, &fused)
          .size(),
      1u);
  EXPECT_EQ(fused.graph.nodes[0].inputs.size(), 3u);
}

TEST(FuseAddLayerNorm, SumReadElsewhereBecomesTheSecondOutput) {
  // The residual stream: the sum is a graph output as well.
  Network net =
      residual({makeNode("Add", {"a", "b"}, {"sum"}), layerNorm({"sum", "gamma", "beta"})});
  net.graph.outputs.push_back({"sum", DataType::kFloat32, false, {}});
  Network fused;
  ASSERT_EQ(fuseAndCompare(net, 1, &fused).size(), 1u);
  EXPECT_EQ(fused.graph.nodes[0].outputs, (std::vector<std::string>{"y", "sum"}));
  // A reader of the sum between the Add and the LayerNormalization: the fused node
  // takes the Add's place, so the graph stays in topological order.
  Network between =
      residual({makeNode("Add", {"a", "b"}, {"sum"}), makeNode("Relu", {"sum"}, {"r"}),
                layerNorm({"sum", "gamma", "beta"})});
  between.graph.outputs.push_back({"r", DataType::kFloat32, false, {}});
  ASSERT_EQ(fuseAndCompare(between, 2, &fused).size(), 1u);
  EXPECT_EQ(fused.graph.nodes[0].opType, "AddLayerNorm");
  EXPECT_EQ(fused.graph.nodes[1].opType, "Relu");
}

// The post-norm residual (SwinV2): Add(b, LayerNormalization(a)) in either operand order, and
// the rms form, is one AddLayerNorm with residual_after = 1 reading a and b; the norm's output
// read elsewhere too stays unfused; a residual broadcast along the rows fuses.
TEST(FuseAddLayerNorm, PostNormResidualIsOneNodeWithTheResidualAfter) {
  for (bool normFirst : {true, false}) {
    Network fused;
    const Node add =
        normFirst ? makeNode("Add", {"n", "b"}, {"y"}) : makeNode("Add", {"b", "n"}, {"y"});
    const auto applied =
        fuseAndCompare(residual({layerNorm({"a", "gamma", "beta"}, {"n"}), add}), 1, &fused);
    ASSERT_EQ(applied.size(), 1u);
    const Node& node = fused.graph.nodes[0];
    EXPECT_EQ(node.opType, "AddLayerNorm");
    EXPECT_EQ(node.inputs, (std::vector<std::string>{"a", "b", "gamma", "beta"}));
    EXPECT_EQ(node.outputs, std::vector<std::string>{"y"});
    EXPECT_EQ(node.attrInt("residual_after", 0), 1);
    EXPECT_EQ(node.attrStrings(kSourceNodesAttribute), (std::vector<std::string>{"n", "y"}));
  }
  Network fused;
  ASSERT_EQ(
      fuseAndCompare(residual({rmsNorm({"a", "gamma"}, {"n"}), makeNode("Add", {"n", "b"}, {"y"})}),
                     1, &fused)
          .size(),
      1u);
  EXPECT_EQ(fused.graph.nodes[0].attrInt("rms", 0), 1);
  EXPECT_EQ(fused.graph.nodes[0].attrInt("residual_after", 0), 1);
  // The norm's output is also a graph output: both stay.
  Network shared =
      residual({layerNorm({"a", "gamma", "beta"}, {"n"}), makeNode("Add", {"n", "b"}, {"y"})});
  shared.graph.outputs.push_back({"n", DataType::kFloat32, false, {}});
  EXPECT_TRUE(fuseAndCompare(shared, 2).empty());
  // A residual that broadcasts along the rows (a bias [16]) fuses too.
  EXPECT_EQ(fuseAndCompare(residual({layerNorm({"a", "gamma", "beta"}, {"n"}),
                                     makeNode("Add", {"bias", "n"}, {"y"})}),
                           1)
                .size(),
            1u);
}

// The op itself: Y = LayerNorm(A) * gamma + beta + B on the CPU reference, against the formula.
TEST(AddLayerNormOp, ResidualAfterMatchesTheFormula) {
  Network net = residual({withFloat(
      withInt(makeNode("AddLayerNorm", {"a", "b", "gamma", "beta"}, {"y"}), "residual_after", 1),
      "epsilon", 1e-3f)});
  net.graph.nodes[0].domain = kKilnDomain;
  net.opsets[kKilnDomain] = 1;
  const std::vector<NamedTensor> out = run(net);
  ASSERT_EQ(out.size(), 1u);
  const Tensor a = randomTensor(DataType::kFloat32, {2, 5, 16}, 1, -3.0, 3.0);
  const Tensor b = randomTensor(DataType::kFloat32, {2, 5, 16}, 2, -3.0, 3.0);
  const Tensor& gamma = net.graph.initializers.at("gamma");
  const Tensor& beta = net.graph.initializers.at("beta");
  for (int64_t row = 0; row < 10; ++row) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < 16; ++i) mean += a.data<float>()[row * 16 + i] / 16.0;
    for (int64_t i = 0; i < 16; ++i) {
      const double d = a.data<float>()[row * 16 + i] - mean;
      var += d * d / 16.0;
    }
    for (int64_t i = 0; i < 16; ++i) {
      const double expected =
          (a.data<float>()[row * 16 + i] - mean) / std::sqrt(var + 1e-3) * gamma.data<float>()[i] +
          beta.data<float>()[i] + b.data<float>()[row * 16 + i];
      EXPECT_NEAR(out[0].tensor.data<float>()[row * 16 + i], expected, 1e-4);
    }
  }
}

TEST(FuseAddLayerNorm, UsedStatisticsAreNotFused) {
  Network net = residual({makeNode("Add", {"a", "b"}, {"sum"}),
                          layerNorm({"sum", "gamma", "beta"}, {"y", "mean", "inv_std"})});
  net.graph.outputs.push_back({"mean", DataType::kFloat32, false, {}});
  EXPECT_TRUE(fuseAndCompare(net, 2).empty());
  // Named but unread statistics do not stop it.
  Network unread = residual({makeNode("Add", {"a", "b"}, {"sum"}),
                             layerNorm({"sum", "gamma", "beta"}, {"y", "mean", "inv_std"})});
  EXPECT_EQ(fuseAndCompare(unread, 1).size(), 1u);
}

TEST(FuseAddLayerNorm, OtherAxesAndBroadcastScalesAreNotFused) {
  // Normalizing the last two dims needs gamma [5, 16]: not this op.
  Network twoDims =
      residual({makeNode("Add", {"a", "b"}, {"sum"}), layerNorm({"sum", "g2", "b2"}, {"y"}, 1)});
  twoDims.graph.initializers["g2"] = randomTensor(DataType::kFloat32, {5, 16}, 6);
  twoDims.graph.initializers["b2"] = randomTensor(DataType::kFloat32, {5, 16}, 7);
  EXPECT_TRUE(fuseAndCompare(twoDims, 2).empty());
  // axis 2 is the last axis of rank 3: fused.
  EXPECT_EQ(fuseAndCompare(residual({makeNode("Add", {"a", "b"}, {"sum"}),
                                     layerNorm({"sum", "gamma", "beta"}, {"y"}, 2)}),
                           1)
                .size(),
            1u);
  // A one-element scale broadcast over the row stays a LayerNormalization.
  EXPECT_TRUE(
      fuseAndCompare(residual({makeNode("Add", {"a", "b"}, {"sum"}), layerNorm({"sum", "one"})}), 2)
          .empty());
  // No Add in front: nothing to fuse.
  EXPECT_TRUE(fuseAndCompare(residual({layerNorm({"a", "gamma", "beta"})}), 1).empty());
}

TEST(FuseAddLayerNorm, SharedSumReadByTwoNormsFusesOnce) {
  // Two LayerNormalizations of one sum: the first fusion writes the sum for the second.
  Network net = residual({makeNode("Add", {"a", "b"}, {"sum"}), layerNorm({"sum", "gamma", "beta"}),
                          layerNorm({"sum", "gamma"}, {"y2"})});
  net.graph.outputs.push_back({"y2", DataType::kFloat32, false, {}});
  Network fused;
  ASSERT_EQ(fuseAndCompare(net, 2, &fused).size(), 1u);
  EXPECT_EQ(fused.graph.nodes[0].outputs, (std::vector<std::string>{"y", "sum"}));
}

// T5's and LLaMA's pre-norm residual: RMSNormalization of the sum, which the next
// residual add reads again.
TEST(FuseAddLayerNorm, RmsNormalizationOfAResidualAddIsOneNodeWithRms) {
  Network net = residual({makeNode("Add", {"a", "b"}, {"sum"}, 23), rmsNorm({"sum", "gamma"})});
  net.opsets[""] = 23;
  net.graph.outputs.push_back({"sum", DataType::kFloat32, false, {}});
  Network fused;
  ASSERT_EQ(fuseAndCompare(net, 1, &fused).size(), 1u);
  const Node& node = fused.graph.nodes[0];
  EXPECT_EQ(node.opType, "AddLayerNorm");
  EXPECT_EQ(node.attrInt("rms", 0), 1);
  EXPECT_FLOAT_EQ(node.attrFloat("epsilon", 0.f), 1e-3f);
  EXPECT_EQ(node.inputs, (std::vector<std::string>{"a", "b", "gamma"}));
  EXPECT_EQ(node.outputs, (std::vector<std::string>{"y", "sum"}));
  // A LayerNormalization keeps rms unset.
  ASSERT_EQ(fuseAndCompare(residual({makeNode("Add", {"a", "b"}, {"sum"}),
                                     layerNorm({"sum", "gamma", "beta"})}),
                           1, &fused)
                .size(),
            1u);
  EXPECT_FALSE(fused.graph.nodes[0].hasAttr("rms"));
  // A scale of another type (Y takes the scale's type in RMSNormalization) stays unfused.
  Network mixed =
      residual({makeNode("Add", {"a", "b"}, {"sum"}, 23), rmsNorm({"sum", "gamma16"}, {"y16"}),
                withInt(makeNode("Cast", {"y16"}, {"y"}, 23), "to", 1)});
  mixed.opsets[""] = 23;
  mixed.graph.initializers["gamma16"] =
      castTensor(randomTensor(DataType::kFloat32, {16}, 8, 0.5, 1.5), DataType::kFloat16);
  EXPECT_TRUE(fuseAndCompare(mixed, 3).empty());
  // A one-element scale broadcast over the row stays an RMSNormalization.
  Network scalar = residual({makeNode("Add", {"a", "b"}, {"sum"}, 23), rmsNorm({"sum", "one"})});
  scalar.opsets[""] = 23;
  EXPECT_TRUE(fuseAndCompare(scalar, 2).empty());
}

// The reference kernel on A [1, 4] + B [4] = S = [2, 2, 4, 4], gamma [1, 2, 1, 2], beta
// [0, 0, 1, 1], both outputs; `rms` sets the attribute.
Result<std::vector<Tensor>> addNormOfFourElements(int64_t rms) {
  return OpTest("AddLayerNorm", 1, kKilnDomain)
      .attr("epsilon", 1e-5f)
      .attr("rms", rms)
      .input(floatTensor({1, 4}, {1.f, 2.f, 3.f, 4.f}))
      .input(floatTensor({4}, {1.f, 0.f, 1.f, 0.f}))
      .input(floatTensor({4}, {1.f, 2.f, 1.f, 2.f}))
      .input(floatTensor({4}, {0.f, 0.f, 1.f, 1.f}))
      .run(2);
}

// Against LayerNorm(A + B) worked out by hand: mean 3, variance 1.
TEST(AddLayerNormOp, MatchesTheFormula) {
  auto out = addNormOfFourElements(0);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  const float k = static_cast<float>(1.0 / std::sqrt(1.0 + 1e-5));
  expectTensorNear(out.value()[0], floatTensor({1, 4}, {-k, -2 * k, 1 + k, 1 + 2 * k}), 1e-6, 1e-6);
  expectTensorNear(out.value()[1], floatTensor({1, 4}, {2.f, 2.f, 4.f, 4.f}), 0, 0);
  auto bad = OpTest("AddLayerNorm", 1, kKilnDomain)
                 .input(floatTensor({1, 4}, {1.f, 2.f, 3.f, 4.f}))
                 .input(floatTensor({1, 4}, {1.f, 2.f, 3.f, 4.f}))
                 .input(floatTensor({3}, {1.f, 1.f, 1.f}))
                 .run();
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("gamma"), std::string::npos) << bad.status().message();
}

// The rms form: mean of squares 10; Y = S / sqrt(10 + eps) * gamma + beta.
TEST(AddLayerNormOp, RmsFormMatchesTheFormula) {
  auto out = addNormOfFourElements(1);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  const float k = static_cast<float>(1.0 / std::sqrt(10.0 + 1e-5));
  expectTensorNear(out.value()[0], floatTensor({1, 4}, {2 * k, 4 * k, 1 + 4 * k, 1 + 8 * k}), 1e-6,
                   1e-6);
  expectTensorNear(out.value()[1], floatTensor({1, 4}, {2.f, 2.f, 4.f, 4.f}), 0, 0);
}

TEST(FusionPipeline, TinyBertFusesAttentionSoftmaxAndBothResiduals) {
  auto imported = importOnnxFile(std::string(KILN_TEST_DATA_DIR) + "/builder/tiny_bert.onnx");
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  Network fused = imported.value();
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
  int softmaxes = 0, norms = 0;
  for (const PassApplication& a : applied) {
    softmaxes += a.pass == "fuse_softmax_scale_mask";
    norms += a.pass == kPass;
  }
  EXPECT_EQ(softmaxes, 1);  // Div(scores, sqrt(d)) + Softmax
  EXPECT_EQ(norms, 2);      // the embedding LayerNormalization has no Add before it
  // 11 nodes for the six linears and the GELU, 1 for the softmax, 2 for the residuals,
  // 8 for the attention block (9 nodes with the fused softmax -> one FusedAttention),
  // 1 for the Identity before the graph output (remove_no_op_nodes).
  EXPECT_EQ(fused.graph.nodes.size(), imported->graph.nodes.size() - 23);
  const Tensor ids = randomInputTensor(DataType::kInt64, {3, 20}, 4);
  std::vector<NamedTensor> a, b;
  ASSERT_TRUE(ReferenceBackend(imported.value()).run({{"input_ids", ids}}, &a).isOk());
  ASSERT_TRUE(ReferenceBackend(fused).run({{"input_ids", ids}}, &b).isOk());
  expectTensorNear(b[0].tensor, a[0].tensor, 1e-5, 1e-4);
}

}  // namespace
}  // namespace kiln::test
