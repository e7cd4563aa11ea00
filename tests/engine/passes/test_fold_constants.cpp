// fold_constants: nodes of constant inputs become initializers with the same values;
// shape subgraphs of static shapes fold; random ops, Q/DQ, graph outputs and large
// broadcasts stay; outputs are unchanged (graph run with and without the pass).
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fold_constants";

ValueInfo floatInput(const std::string& name, const Shape& shape) {
  ValueInfo v{name, DataType::kFloat32, true, {}};
  for (int64_t d : shape) v.shape.push_back(DimExpr(d));
  return v;
}

// x[2, 6] -> MatMul(x, Transpose(w_t) * 2) -> Reshape(Shape-derived [3, 4]) -> y, and a
// Relu of the graph input that must stay.
Network weightAndShapeGraph() {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {floatInput("x", {2, 6})};
  g.initializers["w_t"] = randomTensor(DataType::kFloat32, {6, 6}, 1);
  g.initializers["two"] = floatTensor({}, {2.f});
  g.initializers["three"] = int64Tensor({1}, {3});
  g.nodes = {withInts(makeNode("Transpose", {"w_t"}, {"w"}), "perm", {1, 0}),
             makeNode("Mul", {"w", "two"}, {"w2"}),
             makeNode("Relu", {"x"}, {"r"}),
             makeNode("MatMul", {"r", "w2"}, {"m"}),
             makeNode("Shape", {"m"}, {"shape"}),
             withInt(makeNode("ReduceProd", {"shape"}, {"count"}), "keepdims", 1),
             makeNode("Div", {"count", "three"}, {"cols"}),
             withInt(makeNode("Concat", {"three", "cols"}, {"target"}), "axis", 0),
             makeNode("Reshape", {"m", "target"}, {"y"})};
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<std::string> foldedNodes(const std::vector<PassApplication>& applied) {
  std::vector<std::string> names;
  for (const PassApplication& a : applied)
    if (a.pass == kPass) names.insert(names.end(), a.nodes.begin(), a.nodes.end());
  return names;
}

TEST(FoldConstants, WeightArithmeticAndShapeSubgraphsFold) {
  const Network original = weightAndShapeGraph();
  Network folded = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(folded, 1, {}, &applied).isOk());
  EXPECT_EQ(foldedNodes(applied),
            (std::vector<std::string>{"w", "w2", "shape", "count", "cols", "target"}));
  // Relu, MatMul and the Reshape (now of a constant shape) remain: no merge applies.
  ASSERT_EQ(folded.graph.nodes.size(), 3u);
  EXPECT_EQ(folded.graph.nodes[2].opType, "Reshape");
  // The transposed, doubled weight replaced the original (unread now).
  EXPECT_EQ(folded.graph.initializers.count("w_t"), 0u);
  ASSERT_EQ(folded.graph.initializers.count("w2"), 1u);
  const Tensor& w2 = folded.graph.initializers.at("w2");
  const Tensor& wt = original.graph.initializers.at("w_t");
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 6; ++j)
      EXPECT_FLOAT_EQ(w2.data<float>()[i * 6 + j], 2.f * wt.data<float>()[j * 6 + i]);
  EXPECT_EQ(folded.graph.initializers.at("target").toInt64Vector(), (std::vector<int64_t>{3, 4}));
  const std::map<std::string, Tensor> feeds = {{"x", randomTensor(DataType::kFloat32, {2, 6}, 2)}};
  const auto expected = runOnReference(original, feeds);
  const auto actual = runOnReference(folded, feeds);
  ASSERT_EQ(actual.size(), 1u);
  expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-6, 1e-6);
}

TEST(FoldConstants, WhatMustStayStays) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {floatInput("x", {4})};
  g.initializers["scale"] = floatTensor({}, {0.5f});
  g.initializers["wq"] = Tensor(DataType::kInt8, {4});
  g.initializers["big_shape"] = int64Tensor({2}, {1024, 1024});
  g.initializers["huge_shape"] = int64Tensor({2}, {int64_t{1} << 20, int64_t{1} << 20});
  g.initializers["step"] = int64Tensor({1}, {7});
  g.initializers["c"] = floatTensor({4}, {1.f, 2.f, 3.f, 4.f});
  g.nodes = {
      // Q/DQ of a weight: fold_qdq reads the int8 weight through its DequantizeLinear.
      makeNode("DequantizeLinear", {"wq", "scale"}, {"w"}), makeNode("Add", {"x", "w"}, {"a"}),
      // A fresh draw per run.
      withInts(makeNode("RandomUniform", {}, {"noise"}), "shape", {4}),
      makeNode("Add", {"a", "noise"}, {"b"}),
      // 4 MiB of one value: the runtime broadcasts it for free.
      makeNode("ConstantOfShape", {"big_shape"}, {"big"}),
      makeNode("ReduceMax", {"big"}, {"big_max"}),
      // 2^40 int64 elements: shape inference knows the size, so it is not even computed.
      makeNode("Expand", {"step", "huge_shape"}, {"huge"}),
      makeNode("ReduceMax", {"huge"}, {"huge_max"}),
      // Constant, but a graph output: it stays a layer.
      makeNode("Neg", {"c"}, {"negated"})};
  g.outputs = {{"b", DataType::kFloat32, false, {}},
               {"big_max", DataType::kFloat32, false, {}},
               {"huge_max", DataType::kInt64, false, {}},
               {"negated", DataType::kFloat32, false, {}}};
  std::vector<PassApplication> applied;
  Network folded = net;
  ASSERT_TRUE(runPasses(folded, 1, {}, &applied).isOk());
  EXPECT_TRUE(foldedNodes(applied).empty());
  EXPECT_EQ(folded.graph.nodes.size(), net.graph.nodes.size());
}

TEST(FoldConstants, DisabledByNameAndListed) {
  Network net = weightAndShapeGraph();
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(net, 1, {kPass}, &applied).isOk());
  EXPECT_TRUE(foldedNodes(applied).empty());
  bool listed = false;
  for (const PassInfo& info : listPasses()) listed |= info.name == kPass && info.minimumLevel == 1;
  EXPECT_TRUE(listed);
  Network level0 = weightAndShapeGraph();
  ASSERT_TRUE(runPasses(level0, 0, {}, &applied).isOk());
  EXPECT_EQ(level0.graph.nodes.size(), 9u);
}

}  // namespace
}  // namespace kiln::test
