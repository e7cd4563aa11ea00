// inline_constant_if: an If testing a fixed shape (Shape -> Gather -> Equal, folded to a
// constant by fold_constants) becomes its taken branch: the branch's nodes, an initializer
// and a nested If of a constant condition join the main graph, the branch's values under
// fresh names, and a branch that hands out an outer value gets an Identity. The outputs stay
// the CPU reference's. An If of a data-dependent condition stays. An If testing the shape of
// an earlier If's output folds once that If is inlined (DeBERTa's layer after layer).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "inline_constant_if";

Attribute graphAttribute(Graph g) {
  Attribute a;
  a.kind = Attribute::Kind::kGraph;
  a.g = std::make_shared<Graph>(std::move(g));
  return a;
}

Graph branchGraph(const std::string& output) {
  Graph b;
  b.outputs = {{output, DataType::kFloat32, false, {}}};
  return b;
}

Node ifNode(const std::string& cond, Graph thenBranch, Graph elseBranch, const std::string& out) {
  Node n = makeNode("If", {cond}, {out});
  n.attributes["then_branch"] = graphAttribute(std::move(thenBranch));
  n.attributes["else_branch"] = graphAttribute(std::move(elseBranch));
  return n;
}

// A network of input x [2, 3] and addWidthIsThree's initializers, nothing else yet.
Network widthTestNetwork() {
  Network net;
  net.opsets[""] = 17;
  net.graph.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(3)}}};
  net.graph.initializers["one_index"] = Tensor::int64Vector({1});
  net.graph.initializers["three"] = Tensor::int64Vector({3});
  return net;
}

// Appends cond = (shape(of)[1] == 3) to g, which holds the initializers one_index and three.
void addWidthIsThree(Graph& g, const std::string& of, const std::string& cond) {
  g.nodes.push_back(makeNode("Shape", {of}, {of + "_shape"}));
  g.nodes.push_back(makeNode("Gather", {of + "_shape", "one_index"}, {of + "_width"}));
  g.nodes.push_back(makeNode("Equal", {of + "_width", "three"}, {cond + "_1"}));
  g.nodes.push_back(makeNode("Squeeze", {cond + "_1"}, {cond}));
}

// x [2, 3]: cond = (shape(x)[1] == 3), or with `dataDependent` (sum(x) > 0). The then
// branch computes Relu(x) * k (k its own initializer) and, through a nested If of the
// constant `yes`, adds x; the else branch hands out x itself. y = If(...) + 1.
Network shapeTest(bool dataDependent) {
  Network net = widthTestNetwork();
  Graph& g = net.graph;
  g.initializers["yes"] = Tensor::fromVector(DataType::kBool, {}, std::vector<uint8_t>{1});
  g.initializers["zero"] = floatTensor({}, {0.f});
  g.initializers["plus"] = floatTensor({}, {1.f});
  if (dataDependent) {
    g.nodes.push_back(withInt(makeNode("ReduceSum", {"x"}, {"sum"}, 13), "keepdims", 0));
    g.nodes.push_back(makeNode("Greater", {"sum", "zero"}, {"cond"}));
  } else {
    addWidthIsThree(g, "x", "cond");
  }
  Graph nestedThen = branchGraph("n");
  nestedThen.nodes.push_back(makeNode("Add", {"scaled", "x"}, {"n"}));
  Graph nestedElse = branchGraph("scaled");
  Graph thenBranch = branchGraph("t");
  thenBranch.initializers["k"] = floatTensor({3}, {0.5f, 2.f, -1.f});
  thenBranch.nodes.push_back(makeNode("Relu", {"x"}, {"r"}));
  thenBranch.nodes.push_back(makeNode("Mul", {"r", "k"}, {"scaled"}));
  thenBranch.nodes.push_back(ifNode("yes", nestedThen, nestedElse, "t"));
  Graph elseBranch = branchGraph("x");
  g.nodes.push_back(ifNode("cond", thenBranch, elseBranch, "chosen"));
  g.nodes.push_back(makeNode("Add", {"chosen", "plus"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 3}, 3, -2.0, 2.0)}});
}

int count(const Network& net, const std::string& op) {
  return static_cast<int>(std::count_if(net.graph.nodes.begin(), net.graph.nodes.end(),
                                        [&](const Node& n) { return n.opType == op; }));
}

TEST(InlineConstantIf, ShapeTestBecomesTheTakenBranch) {
  const Network original = shapeTest(false);
  Network inlined = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(inlined, 1, {}, &applied).isOk());
  EXPECT_EQ(std::count_if(applied.begin(), applied.end(),
                          [](const PassApplication& a) { return a.pass == kPass; }),
            2);  // the If and the nested one
  EXPECT_EQ(count(inlined, "If"), 0);
  EXPECT_EQ(count(inlined, "Relu"), 1);
  const auto expected = run(original);
  const auto actual = run(inlined);
  ASSERT_EQ(actual.size(), 1u);
  expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-6, 1e-6);
  // Disabled by name, the If stays (and still computes the same).
  Network kept = original;
  ASSERT_TRUE(runPasses(kept, 1, {kPass}, &applied).isOk());
  EXPECT_EQ(count(kept, "If"), 1);
}

TEST(InlineConstantIf, DataDependentConditionStays) {
  const Network original = shapeTest(true);
  Network net = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(net, 1, {}, &applied).isOk());
  for (const PassApplication& a : applied) EXPECT_NE(a.pass, kPass);
  EXPECT_EQ(count(net, "If"), 1);
  expectTensorNear(run(net)[0].tensor, run(original)[0].tensor, 1e-6, 1e-6);
}

// The taken branch computes r and holds an If of a data-dependent condition whose then
// branch hands out r by name alone (no node) and whose else branch negates r: after
// inlining, that If stays and both its branches read r under its new name.
TEST(InlineConstantIf, NestedBranchReadsTheInlinedValuesNewName) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(3)}}};
  g.initializers["yes"] = Tensor::fromVector(DataType::kBool, {}, std::vector<uint8_t>{1});
  g.initializers["zero"] = floatTensor({}, {0.f});
  g.nodes.push_back(withInt(makeNode("ReduceSum", {"x"}, {"sum"}, 13), "keepdims", 0));
  g.nodes.push_back(makeNode("Greater", {"sum", "zero"}, {"positive"}));
  Graph handsOut = branchGraph("r");
  Graph negates = branchGraph("e");
  negates.nodes.push_back(makeNode("Neg", {"r"}, {"e"}));
  Graph taken = branchGraph("t");
  taken.nodes.push_back(makeNode("Relu", {"x"}, {"r"}));
  taken.nodes.push_back(ifNode("positive", handsOut, negates, "t"));
  g.nodes.push_back(ifNode("yes", taken, branchGraph("x"), "y"));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  Network inlined = net;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(inlined, 1, {}, &applied).isOk());
  EXPECT_EQ(count(inlined, "If"), 1);
  for (const Node& n : inlined.graph.nodes)
    if (n.opType == "If") EXPECT_NE(n.attrGraph("then_branch")->outputs[0].name, "r");
  for (const auto& [lo, hi] : {std::pair{0.1, 2.0}, std::pair{-2.0, 1.0}}) {
    // both branches of the data-dependent If (seed 3's sum over [-2, 1] is negative)
    const std::map<std::string, Tensor> in = {
        {"x", randomTensor(DataType::kFloat32, {2, 3}, 3, lo, hi)}};
    expectTensorNear(runOnReference(inlined, in)[0].tensor, runOnReference(net, in)[0].tensor, 1e-6,
                     1e-6);
  }
}

// y1 = If(shape(x)[1] == 3, Relu(x), x); y = If(shape(y1)[1] == 3, Neg(y1), y1): y1 has no
// shape while its If stands, so the second condition only folds in a later round.
TEST(InlineConstantIf, ShapeTestOfAnEarlierIfsOutputFoldsInTheNextRound) {
  Network net = widthTestNetwork();
  Graph& g = net.graph;
  addWidthIsThree(g, "x", "first");
  Graph relu = branchGraph("r");
  relu.nodes.push_back(makeNode("Relu", {"x"}, {"r"}));
  g.nodes.push_back(ifNode("first", relu, branchGraph("x"), "y1"));
  addWidthIsThree(g, "y1", "second");
  Graph neg = branchGraph("n");
  neg.nodes.push_back(makeNode("Neg", {"y1"}, {"n"}));
  g.nodes.push_back(ifNode("second", neg, branchGraph("y1"), "y"));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  Network inlined = net;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(inlined, 1, {}, &applied).isOk());
  EXPECT_EQ(std::count_if(applied.begin(), applied.end(),
                          [](const PassApplication& a) { return a.pass == kPass; }),
            2);
  EXPECT_EQ(count(inlined, "If"), 0);
  EXPECT_EQ(count(inlined, "Shape"), 0);
  EXPECT_EQ(count(inlined, "Neg"), 1);
  expectTensorNear(run(inlined)[0].tensor, run(net)[0].tensor, 1e-6, 1e-6);
}

}  // namespace
}  // namespace kiln::test
