// fuse_matmul_bias_activation, the activations and the Gemm forms: MatMul + bias and
// Gemm (+ C or + bias Add) followed by each activation FusedConv takes, a Gelu node of
// either form (fuse_gelu's, the ONNX op, ai.kiln's alias) or the tanh GELU chain,
// become one FusedMatMul. Graphs run with and without the level-1 pipeline on the
// CPU reference give the same outputs (1e-5); the rewritten node counts, activation
// attributes and provenance are checked, and the Gemm forms it must leave alone stay.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fuse_matmul_bias_activation";

// x [2, 5, 8] (x2 [5, 8] for Gemm) -> `nodes` (ai.onnx opset 20 unless a node says
// otherwise) ending in "y"; weights w [8, 6], wt [6, 8], w5 [5, 6], biases b [6],
// c [1, 6].
Network graph(const std::vector<Node>& nodes) {
  Network net;
  net.opsets[""] = 20;
  net.opsets[kKilnDomain] = 1;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(5), DimExpr(8)}},
              {"x2", DataType::kFloat32, true, {DimExpr(5), DimExpr(8)}}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {8, 6}, 1);
  g.initializers["wt"] = randomTensor(DataType::kFloat32, {6, 8}, 2);
  g.initializers["w5"] = randomTensor(DataType::kFloat32, {5, 6}, 5);
  g.initializers["b"] = randomTensor(DataType::kFloat32, {6}, 3);
  g.initializers["c"] = randomTensor(DataType::kFloat32, {1, 6}, 4);
  for (const auto& [name, value] : std::map<std::string, float>{{"lo", -0.25f},
                                                                {"hi", 0.5f},
                                                                {"zero", 0.f},
                                                                {"three", 3.f},
                                                                {"six", 6.f},
                                                                {"half", 0.5f},
                                                                {"one", 1.f},
                                                                {"cubic", 0.044715f},
                                                                {"root", 0.7978845608f}})
    g.initializers[name] = floatTensor({}, {value});
  g.nodes = nodes;
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 5, 8}, 11, -2.0, 2.0)},
                              {"x2", randomTensor(DataType::kFloat32, {5, 8}, 12, -2.0, 2.0)}});
}

std::vector<PassApplication> fuseAndCompare(const Network& original, size_t expectedNodes,
                                            Network* fusedOut = nullptr) {
  return fuseAndCompareOutputs(kPass, run, original, expectedNodes, fusedOut);
}

// MatMul(x, w) + b as "a", then `tail` (reads "a", writes "y").
std::vector<Node> linear(std::vector<Node> tail) {
  std::vector<Node> nodes = {makeNode("MatMul", {"x", "w"}, {"mm"}, 20),
                             makeNode("Add", {"mm", "b"}, {"a"}, 20)};
  nodes.insert(nodes.end(), tail.begin(), tail.end());
  return nodes;
}

// 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))), as HF's NewGELU writes it.
std::vector<Node> geluTanhChain() {
  return {makeNode("Mul", {"a", "a"}, {"a2"}, 20),     makeNode("Mul", {"a2", "a"}, {"a3"}, 20),
          makeNode("Mul", {"a3", "cubic"}, {"k"}, 20), makeNode("Add", {"a", "k"}, {"s"}, 20),
          makeNode("Mul", {"s", "root"}, {"r"}, 20),   makeNode("Tanh", {"r"}, {"t"}, 20),
          makeNode("Add", {"t", "one"}, {"e"}, 20),    makeNode("Mul", {"a", "half"}, {"h"}, 20),
          makeNode("Mul", {"h", "e"}, {"y"}, 20)};
}

Node kilnGelu() {
  Node n = makeNode("Gelu", {"a"}, {"y"}, 1);
  n.domain = kKilnDomain;
  return n;
}

struct Case {
  std::vector<Node> tail;  // reads "a", writes "y"
  const char* activation;
  float alpha = 0.f, beta = 0.f;
};

std::vector<Case> everyActivation() {
  const Node gelu = makeNode("Gelu", {"a"}, {"y"}, 20);
  Node geluTanh = gelu;
  geluTanh.attributes["approximate"].kind = Attribute::Kind::kString;
  geluTanh.attributes["approximate"].s = "tanh";
  return {
      {{makeNode("Relu", {"a"}, {"y"}, 20)}, "relu"},
      {{withFloat(makeNode("LeakyRelu", {"a"}, {"y"}, 20), "alpha", 0.2f)}, "leaky_relu", 0.2f},
      {{makeNode("Clip", {"a", "lo", "hi"}, {"y"}, 20)}, "clip", -0.25f, 0.5f},
      {{withFloat(withFloat(makeNode("Clip", {"a"}, {"y"}, 6), "min", -0.3f), "max", 0.7f)},
       "clip",
       -0.3f,
       0.7f},
      {{makeNode("Clip", {"a", "zero"}, {"y"}, 20)}, "relu"},
      {{makeNode("Sigmoid", {"a"}, {"y"}, 20)}, "sigmoid"},
      {{makeNode("Tanh", {"a"}, {"y"}, 20)}, "tanh"},
      {{withFloat(withFloat(makeNode("HardSigmoid", {"a"}, {"y"}, 20), "alpha", 0.3f), "beta",
                  0.4f)},
       "hard_sigmoid",
       0.3f,
       0.4f},
      {{makeNode("HardSwish", {"a"}, {"y"}, 20)}, "hard_swish"},
      {{makeNode("Sigmoid", {"a"}, {"sg"}, 20), makeNode("Mul", {"a", "sg"}, {"y"}, 20)}, "silu"},
      {{makeNode("Add", {"a", "three"}, {"a3"}, 20),
        makeNode("Clip", {"a3", "zero", "six"}, {"cl"}, 20),
        makeNode("Mul", {"cl", "a"}, {"m"}, 20), makeNode("Div", {"m", "six"}, {"y"}, 20)},
       "hard_swish"},
      {{gelu}, "gelu_erf"},
      {{geluTanh}, "gelu_tanh"},
      {{kilnGelu()}, "gelu_erf"},
      {geluTanhChain(), "gelu_tanh"},
  };
}

void expectActivation(const Node& node, const Case& c) {
  EXPECT_EQ(node.opType, "FusedMatMul");
  EXPECT_EQ(node.attrString("activation", ""), c.activation);
  const std::string act = c.activation;
  const bool alpha = act == "leaky_relu" || act == "clip" || act == "hard_sigmoid";
  const bool beta = act == "clip" || act == "hard_sigmoid";
  EXPECT_EQ(node.hasAttr("activation_alpha"), alpha);
  EXPECT_EQ(node.hasAttr("activation_beta"), beta);
  if (alpha) EXPECT_FLOAT_EQ(node.attrFloat("activation_alpha", 0.f), c.alpha);
  if (beta) EXPECT_FLOAT_EQ(node.attrFloat("activation_beta", 0.f), c.beta);
}

TEST(FuseMatMulActivations, MatMulBiasAndEveryActivationAreOneNode) {
  for (const Case& c : everyActivation()) {
    SCOPED_TRACE(c.activation + (" after " + c.tail.back().opType));
    Network fused;
    auto applied = fuseAndCompare(graph(linear(c.tail)), 1, &fused);
    ASSERT_EQ(applied.size(), 1u);
    // Every ONNX node behind the layer, a Gelu node's chain included.
    EXPECT_EQ(applied[0].nodes.size(), 2 + c.tail.size());
    EXPECT_EQ(fused.graph.nodes[0].attrStrings(kSourceNodesAttribute).size(), 2 + c.tail.size());
    expectActivation(fused.graph.nodes[0], c);
  }
}

// A MatMul without a bias (a Linear with bias=False, or a zero bias that
// remove_no_op_nodes took away) and its activation: one layer with a zero bias.
TEST(FuseMatMulActivations, MatMulWithoutBiasAndItsActivationAreOneNode) {
  for (const Case& c : everyActivation()) {
    SCOPED_TRACE(c.activation + (" after " + c.tail.back().opType));
    std::vector<Node> nodes = {makeNode("MatMul", {"x", "w"}, {"a"}, 20)};
    nodes.insert(nodes.end(), c.tail.begin(), c.tail.end());
    Network fused;
    ASSERT_EQ(fuseAndCompare(graph(nodes), 1, &fused).size(), 1u);
    expectActivation(fused.graph.nodes[0], c);
    const Tensor& bias = fused.graph.initializers.at(fused.graph.nodes[0].inputs[2]);
    for (int64_t i = 0; i < bias.numel(); ++i) EXPECT_EQ(bias.valueAsDouble(i), 0.0);
  }
}

TEST(FuseMatMulActivations, GemmWithCAndEveryActivationAreOneNode) {
  for (const Case& c : everyActivation()) {
    SCOPED_TRACE(c.activation + (" after " + c.tail.back().opType));
    std::vector<Node> nodes = {makeNode("Gemm", {"x2", "w", "b"}, {"a"}, 20)};
    nodes.insert(nodes.end(), c.tail.begin(), c.tail.end());
    Network fused;
    ASSERT_EQ(fuseAndCompare(graph(nodes), 1, &fused).size(), 1u);
    expectActivation(fused.graph.nodes[0], c);
    EXPECT_EQ(fused.graph.nodes[0].inputs, (std::vector<std::string>{"x2", "w", "b"}));
  }
}

TEST(FuseMatMulActivations, NamesListTheOnnxNodesBehindAGeluNode) {
  // fuse_gelu first makes the tanh chain one Gelu; the layer names its nine nodes.
  Network fused;
  auto applied = fuseAndCompare(graph(linear(geluTanhChain())), 1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].layer, "mm + a + PWN(a2, a3, k, s, r, t, e, h, y)");
  EXPECT_EQ(fused.graph.nodes[0].attrString(kFusionPassAttribute, ""), kPass);
}

TEST(FuseMatMulActivations, TransposedGemmWeightsAndRowBias) {
  // Gemm(transB) with C [1, 6]: W^T [8, 6] and C as [6] become new initializers; the
  // [6, 8] weight only the Gemm read goes.
  const Node gemm = withInt(makeNode("Gemm", {"x2", "wt", "c"}, {"a"}, 20), "transB", 1);
  Network fused;
  ASSERT_EQ(fuseAndCompare(graph({gemm, makeNode("Sigmoid", {"a"}, {"y"}, 20)}), 1, &fused).size(),
            1u);
  const Node& node = fused.graph.nodes[0];
  EXPECT_EQ(node.attrString("activation", ""), "sigmoid");
  EXPECT_EQ(fused.graph.initializers.at(node.inputs[1]).shape(), (Shape{8, 6}));
  EXPECT_EQ(fused.graph.initializers.at(node.inputs[2]).shape(), (Shape{6}));
  EXPECT_EQ(fused.graph.initializers.count("wt"), 0u);
  EXPECT_EQ(node.attrStrings(kSourceNodesAttribute), (std::vector<std::string>{"a", "y"}));
}

TEST(FuseMatMulActivations, GemmWithoutCTakesTheBiasAdd) {
  for (int64_t transB : {0, 1}) {
    SCOPED_TRACE(transB);
    const Node gemm =
        withInt(makeNode("Gemm", {"x2", transB ? "wt" : "w"}, {"g"}, 20), "transB", transB);
    Network fused;
    auto applied = fuseAndCompare(graph({gemm, makeNode("Add", {"g", "b"}, {"y"}, 20)}), 1, &fused);
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_EQ(applied[0].layer, "g + y");
    EXPECT_EQ(fused.graph.nodes[0].attrString("activation", ""), "none");
  }
}

// A Gemm with neither C nor a bias Add (GPT-2's Conv1D through the dynamo exporter, its
// zero bias dropped) and its activation: one layer with a zero bias; alone it stays.
TEST(FuseMatMulActivations, GemmWithoutCOrBiasAndItsActivationAreOneNode) {
  for (int64_t transB : {0, 1}) {
    SCOPED_TRACE(transB);
    const Node gemm =
        withInt(makeNode("Gemm", {"x2", transB ? "wt" : "w"}, {"a"}, 20), "transB", transB);
    std::vector<Node> nodes = {gemm};
    for (const Node& n : geluTanhChain()) nodes.push_back(n);
    Network fused;
    auto applied = fuseAndCompare(graph(nodes), 1, &fused);
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_EQ(fused.graph.nodes[0].attrString("activation", ""), "gelu_tanh");
    const Tensor& bias = fused.graph.initializers.at(fused.graph.nodes[0].inputs[2]);
    EXPECT_EQ(bias.shape(), (Shape{6}));
    for (int64_t i = 0; i < bias.numel(); ++i) EXPECT_EQ(bias.valueAsDouble(i), 0.0);
    Network alone = graph({gemm});
    alone.graph.nodes[0].outputs = {"y"};
    EXPECT_TRUE(fuseAndCompare(alone, 1).empty());
  }
}

TEST(FuseMatMulActivations, GemmFormsItCannotExpressStay) {
  const Node relu = makeNode("Relu", {"a"}, {"y"}, 20);
  const Node plain = makeNode("Gemm", {"x2", "w", "b"}, {"a"}, 20);
  // Alone, a Gemm with C already is one layer with its bias in the epilogue.
  Network alone = graph({plain});
  alone.graph.nodes[0].outputs = {"y"};
  EXPECT_TRUE(fuseAndCompare(alone, 1).empty());
  // alpha, beta and transA have no FusedMatMul form (transA: x2^T [8, 5] x w5 [5, 6]).
  for (const Node& gemm : {withFloat(plain, "alpha", 0.5f), withFloat(plain, "beta", 2.f),
                           withInt(makeNode("Gemm", {"x2", "w5", "b"}, {"a"}, 20), "transA", 1)}) {
    SCOPED_TRACE(gemm.attributes.begin()->first);
    EXPECT_TRUE(fuseAndCompare(graph({gemm, relu}), 2).empty());
  }
  // A transposed weight another layer reads too would be stored twice.
  Network shared = graph({withInt(makeNode("Gemm", {"x2", "wt", "b"}, {"a"}, 20), "transB", 1),
                          relu, withInt(makeNode("Gemm", {"x2", "wt"}, {"g2"}, 20), "transB", 1)});
  shared.graph.outputs.push_back({"g2", DataType::kFloat32, false, {}});
  EXPECT_TRUE(fuseAndCompare(shared, 3).empty());
}

TEST(FuseMatMulActivations, ActivationReadElsewhereKeepsItsNodes) {
  // The SiLU's Sigmoid is also a graph output: MatMul + bias fuse, Sigmoid and Mul stay.
  Network net = graph(
      linear({makeNode("Sigmoid", {"a"}, {"sg"}, 20), makeNode("Mul", {"a", "sg"}, {"y"}, 20)}));
  net.graph.outputs.push_back({"sg", DataType::kFloat32, false, {}});
  Network fused;
  auto applied = fuseAndCompare(net, 3, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"mm", "a"}));
  EXPECT_EQ(fused.graph.nodes[0].attrString("activation", ""), "none");
}

TEST(FuseMatMulActivations, ReferenceKernelsKeepTheirActivationSets) {
  // FusedMatMul names every activation it does not know; FusedConv takes GELU too:
  // gelu_erf(Conv(x, w)) element by element.
  const Tensor a = randomTensor(DataType::kFloat32, {3, 4}, 21);
  auto unknown = OpTest("FusedMatMul", 1, kKilnDomain)
                     .attr("activation", std::string("mish"))
                     .input(a)
                     .input(randomTensor(DataType::kFloat32, {4, 2}, 22))
                     .input(randomTensor(DataType::kFloat32, {2}, 23))
                     .run();
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("gelu_tanh"), std::string::npos)
      << unknown.status().message();
  const Tensor x = randomTensor(DataType::kFloat32, {1, 2, 4, 4}, 24);
  const Tensor w = randomTensor(DataType::kFloat32, {3, 2, 1, 1}, 25);
  auto conv = OpTest("FusedConv", 1, kKilnDomain)
                  .attr("activation", std::string("gelu_erf"))
                  .input(x)
                  .input(w)
                  .run();
  ASSERT_TRUE(conv.isOk()) << conv.status().toString();
  auto plain = OpTest("Conv", 17).input(x).input(w).run();
  ASSERT_TRUE(plain.isOk()) << plain.status().toString();
  std::vector<float> want;
  for (int64_t i = 0; i < plain.value()[0].numel(); ++i) {
    const double v = plain.value()[0].valueAsDouble(i);
    want.push_back(static_cast<float>(v * 0.5 * (1.0 + std::erf(v / std::sqrt(2.0)))));
  }
  expectTensorNear(conv.value()[0], floatTensor({1, 3, 4, 4}, want), 1e-6, 1e-6);
}

}  // namespace
}  // namespace kiln::test
