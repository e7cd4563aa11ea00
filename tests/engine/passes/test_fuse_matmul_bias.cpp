// fuse_matmul_bias_activation: graphs run with and without the pass give the same
// outputs; the rewritten layer counts and provenance are what the algebra says.
#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/onnx_import.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

// x [2, 5, 8] -> MatMul(W [8, 6]) -> Add(b [6]) -> `tail` nodes; output "y".
Network linearNetwork(const std::vector<Node>& tail) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(5), DimExpr(8)}}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {8, 6}, 1);
  g.initializers["b"] = randomTensor(DataType::kFloat32, {6}, 2);
  g.initializers["sqrt2"] = floatTensor({}, {1.4142135f});
  g.initializers["one"] = floatTensor({}, {1.f});
  g.initializers["half"] = floatTensor({}, {0.5f});
  g.nodes = {makeNode("MatMul", {"x", "w"}, {"mm"}), makeNode("Add", {"mm", "b"}, {"biased"})};
  for (const Node& n : tail) g.nodes.push_back(n);
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

// The three associations of x * 0.5 * (1 + erf(x / sqrt(2))) exporters write.
enum class GeluOrder { kProductThenHalf, kHalfThenProduct, kHalfOfErfThenProduct };

std::vector<Node> geluTail(GeluOrder order) {
  std::vector<Node> t = {makeNode("Div", {"biased", "sqrt2"}, {"d"}), makeNode("Erf", {"d"}, {"e"}),
                         makeNode("Add", {"e", "one"}, {"e1"})};
  switch (order) {
    case GeluOrder::kProductThenHalf:
      t.push_back(makeNode("Mul", {"biased", "e1"}, {"p"}));
      t.push_back(makeNode("Mul", {"p", "half"}, {"y"}));
      break;
    case GeluOrder::kHalfThenProduct:
      t.push_back(makeNode("Mul", {"biased", "half"}, {"h"}));
      t.push_back(makeNode("Mul", {"h", "e1"}, {"y"}));
      break;
    case GeluOrder::kHalfOfErfThenProduct:  // torch.onnx (dynamo) writes this one
      t.push_back(makeNode("Mul", {"half", "e1"}, {"h"}));
      t.push_back(makeNode("Mul", {"biased", "h"}, {"y"}));
      break;
  }
  return t;
}

Tensor run(const Network& net, const Tensor& x) {
  ReferenceBackend backend(net);
  std::vector<NamedTensor> out;
  Status s = backend.run({{"x", x}}, &out);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return out.empty() ? Tensor() : out[0].tensor;
}

// Applies the pipeline; checks outputs match the original and returns the records.
// remove_no_op_nodes stays off: these graphs end in an Identity that stands for any
// reader of the GEMM's output (test_remove_no_op_nodes.cpp removes it); so does
// fuse_pointwise_chain, which would take the pointwise nodes this pass leaves.
std::vector<PassApplication> fuseAndCompare(const Network& original, size_t expectedNodes) {
  Network fused = original;
  std::vector<PassApplication> applied;
  Status s = runPasses(fused, 3, {"remove_no_op_nodes", "fuse_pointwise_chain"}, &applied);
  EXPECT_TRUE(s.isOk()) << s.toString();
  EXPECT_EQ(fused.graph.nodes.size(), expectedNodes);
  const Tensor x = randomTensor(DataType::kFloat32, {2, 5, 8}, 7);
  expectTensorNear(run(fused, x), run(original, x), 1e-5, 1e-5);
  return applied;
}

TEST(FuseMatMulBias, BiasAlone) {
  auto applied = fuseAndCompare(linearNetwork({makeNode("Identity", {"biased"}, {"y"})}), 2);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"mm", "biased"}));
  EXPECT_EQ(applied[0].layer, "mm + biased");
}

// x [2, 5, 8] viewed as rows [10, 8], Gemm(W^T [6, 8]; transB = 1, c [6]), the rows viewed
// back as `back`; Identity -> "y".
Network rowViewNetwork(const std::vector<int64_t>& back) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(5), DimExpr(8)}}};
  g.initializers["wt"] = randomTensor(DataType::kFloat32, {6, 8}, 3);
  g.initializers["c"] = randomTensor(DataType::kFloat32, {6}, 4);
  g.initializers["rows"] = int64Tensor({2}, {-1, 8});
  g.initializers["back"] = int64Tensor({int64_t(back.size())}, back);
  Node gemm = makeNode("Gemm", {"xr", "wt", "c"}, {"g"});
  gemm.attributes["transB"].kind = Attribute::Kind::kInt;
  gemm.attributes["transB"].i = 1;
  g.nodes = {makeNode("Reshape", {"x", "rows"}, {"xr"}), gemm,
             makeNode("Reshape", {"g", "back"}, {"gb"}), makeNode("Identity", {"gb"}, {"y"})};
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

TEST(FuseMatMulBias, RowViewsAroundALoneGemmFoldIntoIt) {
  // Back to x's leading dims: one FusedMatMul reads x and writes the view's output.
  auto applied = fuseAndCompare(rowViewNetwork({2, 5, 6}), 2);
  ASSERT_EQ(applied.size(), 2u);  // the fusion, then remove_dead_nodes' flattening Reshape
  EXPECT_EQ(applied[0].layer, "g + gb");
  // Back to other dims ([5, 2, 6] is not x's [2, 5]): the lone Gemm and its views stay.
  EXPECT_TRUE(fuseAndCompare(rowViewNetwork({5, 2, 6}), 4).empty());
}

TEST(FuseMatMulBias, Relu) {
  auto applied = fuseAndCompare(linearNetwork({makeNode("Relu", {"biased"}, {"y"})}), 1);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].layer, "mm + biased + PWN(y)");
}

TEST(FuseMatMulBias, GeluInEveryProductOrder) {
  for (GeluOrder order : {GeluOrder::kProductThenHalf, GeluOrder::kHalfThenProduct,
                          GeluOrder::kHalfOfErfThenProduct}) {
    SCOPED_TRACE(static_cast<int>(order));
    Network net = linearNetwork(geluTail(order));
    // fuse_gelu makes the chain one Gelu, which the GEMM's epilogue then takes.
    auto applied = fuseAndCompare(net, 1);
    ASSERT_EQ(applied.size(), 2u);
    EXPECT_EQ(applied[0].pass, "fuse_gelu");
    EXPECT_EQ(applied[1].nodes.size(), 7u);
    Network fused = net;
    std::vector<PassApplication> again;
    ASSERT_TRUE(runPasses(fused, 3, {}, &again).isOk());
    const Node& node = fused.graph.nodes[0];
    EXPECT_EQ(node.domain, kKilnDomain);
    EXPECT_EQ(node.attrString("activation", ""), "gelu_erf");
    EXPECT_EQ(node.attrStrings(kSourceNodesAttribute).size(), 7u);
    EXPECT_EQ(node.attrString(kFusionPassAttribute, ""), "fuse_matmul_bias_activation");
  }
}

TEST(FuseMatMulBias, GeluChainFusesWithoutFuseGelu) {
  // With fuse_gelu off (or no shapes for it), the pass takes the raw erf chain itself.
  for (GeluOrder order : {GeluOrder::kProductThenHalf, GeluOrder::kHalfThenProduct,
                          GeluOrder::kHalfOfErfThenProduct}) {
    SCOPED_TRACE(static_cast<int>(order));
    Network net = linearNetwork(geluTail(order));
    Network fused = net;
    std::vector<PassApplication> applied;
    ASSERT_TRUE(runPasses(fused, 3, {"fuse_gelu"}, &applied).isOk());
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_EQ(applied[0].nodes.size(), 7u);
    EXPECT_EQ(applied[0].layer.rfind("mm + biased + PWN(", 0), 0u) << applied[0].layer;
    ASSERT_EQ(fused.graph.nodes.size(), 1u);
    EXPECT_EQ(fused.graph.nodes[0].attrString("activation", ""), "gelu_erf");
    const Tensor x = randomTensor(DataType::kFloat32, {2, 5, 8}, 7);
    expectTensorNear(run(fused, x), run(net, x), 1e-5, 1e-5);
  }
}

TEST(FuseMatMulBias, SharedIntermediatesAreNotFused) {
  // The MatMul result is also a graph output: fusing would lose it.
  Network net = linearNetwork({makeNode("Identity", {"biased"}, {"y"})});
  net.graph.outputs.push_back({"mm", DataType::kFloat32, false, {}});
  fuseAndCompare(net, 3);
  // A GELU-looking chain whose Erf result is read twice keeps its pointwise nodes.
  std::vector<Node> tail = geluTail(GeluOrder::kProductThenHalf);
  tail.push_back(makeNode("Identity", {"e"}, {"extra"}));
  Network leaky = linearNetwork(tail);
  leaky.graph.outputs.push_back({"extra", DataType::kFloat32, false, {}});
  auto applied = fuseAndCompare(leaky, 7);  // bias fused, the GELU chain stays
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes.size(), 2u);
}

TEST(FuseMatMulBias, ConstantNodeScalarsCount) {
  Network net = linearNetwork(geluTail(GeluOrder::kHalfOfErfThenProduct));
  Node half = makeNode("Constant", {}, {"half_node"});
  Attribute value;
  value.kind = Attribute::Kind::kTensor;
  value.t = floatTensor({}, {0.5f});
  half.attributes["value"] = value;
  net.graph.nodes.insert(net.graph.nodes.begin(), half);
  for (Node& n : net.graph.nodes)
    for (std::string& in : n.inputs)
      if (in == "half") in = "half_node";
  // One layer: fuse_gelu's Gelu takes the Constant's scalar, this pass the Gelu; the
  // Constant goes (folded into an initializer, or removed once unread).
  auto applied = fuseAndCompare(net, 1);
  auto layer = std::find_if(applied.begin(), applied.end(), [](const PassApplication& a) {
    return a.pass == "fuse_matmul_bias_activation";
  });
  ASSERT_NE(layer, applied.end());
  EXPECT_EQ(layer->nodes.size(), 7u);
}

TEST(FuseMatMulBias, BiasFromAConstantNodeAfterTheMatMulKeepsTopologicalOrder) {
  Network net = linearNetwork({makeNode("Identity", {"biased"}, {"y"})});
  Node bias = makeNode("Constant", {}, {"b_node"});
  Attribute value;
  value.kind = Attribute::Kind::kTensor;
  value.t = randomTensor(DataType::kFloat32, {6}, 9);
  bias.attributes["value"] = value;
  net.graph.nodes.insert(net.graph.nodes.begin() + 1, bias);  // between MatMul and Add
  net.graph.nodes[2].inputs[1] = "b_node";
  // Fused (Constant-node tensors count as weights), with the fused node after the
  // Constant, so the graph stays in topological order.
  Network fused = net;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 3, {"remove_dead_nodes", "remove_no_op_nodes"}, &applied).isOk());
  EXPECT_EQ(applied.size(), 1u);
  ASSERT_EQ(fused.graph.nodes.size(), 3u);
  EXPECT_EQ(fused.graph.nodes[0].opType, "Constant");
  EXPECT_EQ(fused.graph.nodes[1].opType, "FusedMatMul");
  const Tensor x = randomTensor(DataType::kFloat32, {2, 5, 8}, 7);
  expectTensorNear(run(fused, x), run(net, x), 1e-5, 1e-5);
}

TEST(FuseMatMulBias, AdjacentLinearsAllFuse) {
  // Two MatMuls back to back on one input (Q and K projections): both fuse.
  Network net = linearNetwork({makeNode("Identity", {"biased"}, {"y"})});
  Graph& g = net.graph;
  g.initializers["w2"] = randomTensor(DataType::kFloat32, {8, 6}, 11);
  g.initializers["b2"] = randomTensor(DataType::kFloat32, {6}, 12);
  g.nodes.insert(g.nodes.begin() + 1, makeNode("MatMul", {"x", "w2"}, {"mm2"}));
  g.nodes.insert(g.nodes.begin() + 3, makeNode("Add", {"mm2", "b2"}, {"biased2"}));
  g.outputs.push_back({"biased2", DataType::kFloat32, false, {}});
  auto applied = fuseAndCompare(net, 3);
  EXPECT_EQ(applied.size(), 2u);
}

TEST(FuseMatMulBias, WrongBiasShapeIsNotFused) {
  Network net = linearNetwork({makeNode("Identity", {"biased"}, {"y"})});
  net.graph.initializers["b"] = randomTensor(DataType::kFloat32, {5, 6}, 3);
  fuseAndCompare(net, 3);
}

TEST(FuseMatMulBias, DisabledByNameAndUnknownNamesRefused) {
  Network net = linearNetwork({makeNode("Relu", {"biased"}, {"y"})});
  std::vector<PassApplication> applied;
  ASSERT_TRUE(
      runPasses(net, 3, {"fuse_matmul_bias_activation", "fuse_pointwise_chain"}, &applied).isOk());
  EXPECT_TRUE(applied.empty());
  EXPECT_EQ(net.graph.nodes.size(), 3u);
  Status s = runPasses(net, 3, {"fuse_everything"}, &applied);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("fuse_matmul_bias_activation"), std::string::npos) << s.message();
}

TEST(FuseMatMulBias, TinyBertFusesEveryLinearAndItsGelu) {
  auto imported = importOnnxFile(std::string(KILN_TEST_DATA_DIR) + "/builder/tiny_bert.onnx");
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  Network fused = imported.value();
  std::vector<PassApplication> applied;
  // This pass alone (the softmax and residual fusions: test_fuse_add_layer_norm.cpp and
  // test_fuse_matmul_residual.cpp, attention: test_fuse_attention.cpp).
  ASSERT_TRUE(runPasses(fused, 3,
                        {"fuse_softmax_scale_mask", "fuse_add_layer_norm", "fuse_matmul_residual",
                         "fuse_attention", "remove_no_op_nodes", "merge_transposes",
                         "merge_layout_transposes", "fold_constants"},
                        &applied)
                  .isOk());
  // fuse_gelu's Gelu, then q, k, v, attention out, FFN in (+ the Gelu), FFN out.
  EXPECT_EQ(applied.size(), 7u);
  EXPECT_EQ(fused.graph.nodes.size(), imported->graph.nodes.size() - 11);
  const Tensor ids = randomInputTensor(DataType::kInt64, {3, 20}, 4);
  std::vector<NamedTensor> a, b;
  ASSERT_TRUE(ReferenceBackend(imported.value()).run({{"input_ids", ids}}, &a).isOk());
  ASSERT_TRUE(ReferenceBackend(fused).run({{"input_ids", ids}}, &b).isOk());
  expectTensorNear(b[0].tensor, a[0].tensor, 1e-5, 1e-4);
}

}  // namespace
}  // namespace kiln::test
