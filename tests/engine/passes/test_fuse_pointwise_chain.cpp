// fuse_pointwise_chain: groups of elementwise ops become one ai.kiln PointwiseChain
// (level 2+); graphs run with and without the pass on the CPU reference (outputs
// poisoned with NaN by the executor) give the same values; groups stop at a value read
// outside them, at ops the chain does not take and at non-float types; the program
// and the layer name are TensorRT-style and exact; a bad program is a one-line error.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/passes/pass_test_support.h"
#include "ir/pointwise_program.h"
#include "kiln/passes.h"
#include "kiln/shape_inference.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fuse_pointwise_chain";
using Feeds = std::map<std::string, Tensor>;

ValueInfo input(const std::string& name, std::vector<int64_t> dims,
                DataType type = DataType::kFloat32) {
  ValueInfo v{name, type, true, {}};
  for (int64_t d : dims) v.shape.push_back(DimExpr(d));
  return v;
}

// x [2, 3, 8], y [8] and z [2, 1, 8] inputs; initializers half (0.5), bias [3, 1],
// wide (a one-element [1, 1, 1, 1] constant); `nodes` end in `outputs`.
Network graph(const std::vector<Node>& nodes, std::vector<std::string> outputs = {"out"},
              DataType type = DataType::kFloat32) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {input("x", {2, 3, 8}, type), input("y", {8}, type), input("z", {2, 1, 8}, type)};
  g.initializers["half"] = floatTensor({}, {0.5f});
  g.initializers["bias"] = randomTensor(DataType::kFloat32, {3, 1}, 7);
  g.initializers["wide"] = floatTensor({1, 1, 1, 1}, {1.25f});
  g.initializers["lo"] = floatTensor({}, {-0.25f});
  g.initializers["hi"] = floatTensor({}, {0.75f});
  g.nodes = nodes;
  for (const std::string& o : outputs) g.outputs.push_back({o, DataType::kUndefined, false, {}});
  return net;
}

Feeds feeds(DataType type = DataType::kFloat32) {
  return {{"x", randomTensor(type, {2, 3, 8}, 1, -3.0, 3.0)},
          {"y", randomTensor(type, {8}, 2, 0.5, 2.0)},
          {"z", randomTensor(type, {2, 1, 8}, 3, -2.0, 2.0)}};
}

struct Fused {
  Network network;
  std::vector<PassApplication> applied;  // this pass's records
};

// Runs the level-`level` pipeline on a copy of `original`; checks every output against
// the unfused graph's on the reference at `tolerance`.
Fused fuseAndCompare(const Network& original, int level = 2, double tolerance = 1e-6,
                     DataType type = DataType::kFloat32) {
  Fused f{original, {}};
  std::vector<PassApplication> applied;
  Status s = runPasses(f.network, level, {}, &applied);
  EXPECT_TRUE(s.isOk()) << s.toString();
  for (const PassApplication& a : applied)
    if (a.pass == kPass) f.applied.push_back(a);
  const auto expected = runOnReference(original, feeds(type));
  const auto actual = runOnReference(f.network, feeds(type));
  EXPECT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].name);
    EXPECT_EQ(actual[i].tensor.type(), expected[i].tensor.type());
    expectTensorNear(actual[i].tensor, expected[i].tensor, tolerance, tolerance);
  }
  return f;
}

TEST(FusePointwiseChain, BiasActivationScaleIsOneKernelWithAnExactProgram) {
  const Fused f = fuseAndCompare(
      graph({makeNode("Add", {"x", "bias"}, {"a"}), makeNode("Relu", {"a"}, {"r"}),
             makeNode("Mul", {"r", "half"}, {"m"}), makeNode("Sigmoid", {"m"}, {"out"})}));
  ASSERT_EQ(f.network.graph.nodes.size(), 1u);
  const Node& node = f.network.graph.nodes[0];
  EXPECT_EQ(node.opType, kPointwiseChainOp);
  EXPECT_EQ(node.domain, kKilnDomain);
  EXPECT_EQ(node.name, "PWN(a, r, m, out)");
  EXPECT_EQ(node.inputs, (std::vector<std::string>{"x", "bias"}));
  EXPECT_EQ(node.outputs, std::vector<std::string>{"out"});
  EXPECT_EQ(node.attrStrings("ops"), (std::vector<std::string>{"Add", "Relu", "Mul", "Sigmoid"}));
  // Values: in0 = x, in1 = bias, 2 = the constant 0.5, 3.. = steps.
  EXPECT_EQ(node.attrInts("operands"), (std::vector<int64_t>{0, 1, 3, 4, 2, 5}));
  EXPECT_EQ(node.attrFloats("constants"), std::vector<float>{0.5f});
  EXPECT_EQ(node.attrString(kFusionPassAttribute, ""), kPass);
  EXPECT_EQ(node.attrStrings(kSourceNodesAttribute),
            (std::vector<std::string>{"a", "r", "m", "out"}));
  ASSERT_EQ(f.applied.size(), 1u);
  EXPECT_EQ(f.applied[0].layer, "PWN(a, r, m, out)");
  EXPECT_EQ(f.network.opsets.at(kKilnDomain), 1);
}

TEST(FusePointwiseChain, DiamondsBroadcastsAndClipFuseWhole) {
  // swish(x) = x * sigmoid(x) reads x twice; y [8] and z [2, 1, 8] broadcast; Clip's
  // bounds are constant inputs (opset 13); Max, Pow, Div and Sub on the way.
  const Fused f = fuseAndCompare(graph(
      {makeNode("Sigmoid", {"x"}, {"s"}), makeNode("Mul", {"x", "s"}, {"sw"}),
       makeNode("Add", {"sw", "y"}, {"a"}), makeNode("Pow", {"y", "half"}, {"p"}),
       makeNode("Div", {"a", "p"}, {"d"}), makeNode("Max", {"d", "z"}, {"mx"}),
       makeNode("Sub", {"mx", "z"}, {"sb"}), makeNode("Clip", {"sb", "lo", "hi"}, {"out"}, 13)}));
  ASSERT_EQ(f.network.graph.nodes.size(), 1u);
  const Node& node = f.network.graph.nodes[0];
  EXPECT_EQ(node.inputs, (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(node.attrFloats("alphas").back(), -0.25f);
  EXPECT_EQ(node.attrFloats("betas").back(), 0.75f);
  // The fused node keeps the output's shape [2, 3, 8] under shape inference.
  auto inferred = inferShapes(f.network);
  ASSERT_TRUE(inferred.isOk()) << inferred.status().toString();
  const InferredValue& out = inferred.value().values.at("out");
  ASSERT_TRUE(out.hasShape);
  EXPECT_EQ(out.type, DataType::kFloat32);
  ASSERT_EQ(out.shape.size(), 3u);
  EXPECT_EQ(out.shape[1], DimExpr(3));
}

TEST(FusePointwiseChain, EveryUnaryOpAndLeakyHardAndGeluForms) {
  Node leaky = withFloat(makeNode("LeakyRelu", {"t3"}, {"t4"}), "alpha", 0.2f);
  Node hard = withFloat(makeNode("HardSigmoid", {"t4"}, {"t5"}), "alpha", 0.3f);
  Node gelu = makeNode("Gelu", {"t9"}, {"t10"}, 20);
  gelu.attributes["approximate"].kind = Attribute::Kind::kString;
  gelu.attributes["approximate"].s = "tanh";
  Network net =
      graph({makeNode("Abs", {"x"}, {"t0"}), makeNode("Sqrt", {"t0"}, {"t1"}),
             makeNode("Log", {"t1"}, {"t2"}), makeNode("Exp", {"t2"}, {"t3"}), leaky, hard,
             makeNode("HardSwish", {"t5"}, {"t6"}), makeNode("Softplus", {"t6"}, {"t7"}),
             makeNode("Erf", {"t7"}, {"t8"}), makeNode("Tanh", {"t8"}, {"t9"}), gelu,
             makeNode("Gelu", {"t10"}, {"t11"}, 20), makeNode("Neg", {"t11"}, {"t12"}),
             makeNode("Reciprocal", {"t12"}, {"t13"}), makeNode("Min", {"t13", "y"}, {"out"})});
  net.opsets[""] = 20;
  for (Node& n : net.graph.nodes) n.opset = 20;
  const Fused f = fuseAndCompare(net);
  ASSERT_EQ(f.network.graph.nodes.size(), 1u);
  EXPECT_EQ(f.network.graph.nodes[0].attrStrings("ops").size(), 15u);
  EXPECT_EQ(f.network.graph.nodes[0].attrFloats("alphas")[10], 1.f);  // the tanh form
}

TEST(FusePointwiseChain, BiasGeluTanhChainIsOneKernelWithOrWithoutFuseGelu) {
  // 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))) of a = x + y, as exporters write it.
  Network net =
      graph({makeNode("Add", {"x", "y"}, {"a"}), makeNode("Mul", {"a", "a"}, {"a2"}),
             makeNode("Mul", {"a2", "a"}, {"a3"}), makeNode("Mul", {"a3", "k"}, {"c"}),
             makeNode("Add", {"a", "c"}, {"s"}), makeNode("Mul", {"s", "root"}, {"r"}),
             makeNode("Tanh", {"r"}, {"t"}), makeNode("Add", {"t", "one"}, {"e"}),
             makeNode("Mul", {"a", "half"}, {"h"}), makeNode("Mul", {"h", "e"}, {"out"})});
  net.graph.initializers["k"] = floatTensor({}, {0.044715f});
  net.graph.initializers["root"] = floatTensor({}, {0.7978845608028654f});
  net.graph.initializers["one"] = floatTensor({}, {1.f});
  net.opsets[""] = 20;
  for (Node& n : net.graph.nodes) n.opset = 20;
  // fuse_gelu takes the GELU first (Add + Gelu remain); without it all ten ops fuse.
  const Fused withGelu = fuseAndCompare(net, 2, 1e-5);
  ASSERT_EQ(withGelu.network.graph.nodes.size(), 1u);
  EXPECT_EQ(withGelu.network.graph.nodes[0].attrStrings("ops"),
            (std::vector<std::string>{"Add", "Gelu"}));
  Network alone = net;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(alone, 2, {"fuse_gelu"}, &applied).isOk());
  ASSERT_EQ(alone.graph.nodes.size(), 1u);
  EXPECT_EQ(alone.graph.nodes[0].attrStrings("ops").size(), 10u);
  EXPECT_EQ(alone.graph.nodes[0].attrFloats("constants").size(), 4u);
  expectTensorNear(runOnReference(alone, feeds())[0].tensor, runOnReference(net, feeds())[0].tensor,
                   1e-6, 1e-6);
}

TEST(FusePointwiseChain, AValueReadOutsideEndsTheGroup) {
  // "r" is a graph output too: Add + Relu is one group, Mul + Tanh another.
  const Fused f =
      fuseAndCompare(graph({makeNode("Add", {"x", "y"}, {"a"}), makeNode("Relu", {"a"}, {"r"}),
                            makeNode("Mul", {"r", "z"}, {"m"}), makeNode("Tanh", {"m"}, {"out"})},
                           {"out", "r"}));
  EXPECT_EQ(countOps(f.network, kPointwiseChainOp), 2);
  EXPECT_EQ(f.network.graph.nodes.size(), 2u);
  // A Softmax reading "a" keeps Add out of the chain (alone it is a chain of one: x [2, 3, 8]
  // + y [8] broadcasts between two inputs); Relu + Mul + Tanh still fuse.
  const Fused g =
      fuseAndCompare(graph({makeNode("Add", {"x", "y"}, {"a"}), makeNode("Softmax", {"a"}, {"sm"}),
                            makeNode("Relu", {"a"}, {"r"}), makeNode("Mul", {"r", "sm"}, {"m"}),
                            makeNode("Tanh", {"m"}, {"out"})}));
  EXPECT_EQ(g.network.graph.nodes.size(), 3u);
  ASSERT_EQ(g.applied.size(), 2u);
  EXPECT_EQ(g.applied[0].layer, "PWN(r, m, out)");
  EXPECT_EQ(g.applied[1].layer, "PWN(a)");
}

TEST(FusePointwiseChain, CastsBetweenFloatTypesRoundWhereTheGraphDoes) {
  // float32 -> float16 -> Relu -> float32 + y: the chain rounds at the Cast as the
  // graph does, so the float32 output matches exactly.
  Node toHalf = withInt(makeNode("Cast", {"x"}, {"h"}), "to", 10);
  Node toFloat = withInt(makeNode("Cast", {"hr"}, {"f"}), "to", 1);
  const Fused f = fuseAndCompare(graph({toHalf, makeNode("Relu", {"h"}, {"hr"}), toFloat,
                                        makeNode("Add", {"f", "y"}, {"out"})}),
                                 2, 0.0);
  ASSERT_EQ(f.network.graph.nodes.size(), 1u);
  EXPECT_EQ(f.network.graph.nodes[0].attrInts("types"), (std::vector<int64_t>{10, 10, 1, 1}));
}

TEST(FusePointwiseChain, HalfGraphsRoundOnlyAtTheOutput) {
  Network net = graph({makeNode("Mul", {"x", "y"}, {"m"}), makeNode("Add", {"m", "z"}, {"a"}),
                       makeNode("Sigmoid", {"a"}, {"out"})},
                      {"out"}, DataType::kFloat16);
  net.graph.initializers.clear();
  // The unfused graph rounds m and a to half; the chain keeps them in float.
  const Fused f = fuseAndCompare(net, 2, 2e-3, DataType::kFloat16);
  ASSERT_EQ(f.network.graph.nodes.size(), 1u);
  EXPECT_EQ(f.network.graph.nodes[0].attrInts("types").back(), 10);
}

TEST(FusePointwiseChain, AWideScalarStaysAnInput) {
  // x [2, 3, 8] * wide [1, 1, 1, 1] is [1, 2, 3, 8]: inlining would lose the rank.
  const Fused f = fuseAndCompare(
      graph({makeNode("Mul", {"x", "wide"}, {"m"}), makeNode("Relu", {"m"}, {"out"})}));
  ASSERT_EQ(f.network.graph.nodes.size(), 1u);
  EXPECT_EQ(f.network.graph.nodes[0].inputs, (std::vector<std::string>{"x", "wide"}));
  EXPECT_TRUE(f.network.graph.nodes[0].attrFloats("constants").empty());
}

TEST(FusePointwiseChain, LongChainsSplitAt128Ops) {
  // 300 alternating Tanh / Mul(y): groups of 128, 128 and 44 from the end.
  std::vector<Node> nodes;
  std::string previous = "x";
  for (int i = 0; i < 300; ++i) {
    const std::string out = i == 299 ? "out" : "t" + std::to_string(i);
    nodes.push_back(i % 2 ? makeNode("Mul", {previous, "y"}, {out})
                          : makeNode("Tanh", {previous}, {out}));
    previous = out;
  }
  const Fused f = fuseAndCompare(graph(nodes));
  ASSERT_EQ(f.network.graph.nodes.size(), 3u);
  EXPECT_EQ(f.network.graph.nodes[0].attrStrings("ops").size(), 44u);
  EXPECT_EQ(f.network.graph.nodes[1].attrStrings("ops").size(), 128u);
  EXPECT_EQ(f.network.graph.nodes[2].attrStrings("ops").size(), 128u);
}

TEST(FusePointwiseChain, LevelOneBuildsStayUnfused) {
  const Network net = graph({makeNode("Add", {"x", "y"}, {"a"}), makeNode("Relu", {"a"}, {"out"})});
  EXPECT_TRUE(fuseAndCompare(net, 1).applied.empty());
  Network disabled = net;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(disabled, 3, {kPass}, &applied).isOk());
  EXPECT_EQ(disabled.graph.nodes.size(), 2u);
  bool listed = false;
  for (const PassInfo& info : listPasses())
    if (info.name == kPass) listed = info.minimumLevel == 2;
  EXPECT_TRUE(listed);
}

TEST(FusePointwiseChain, LoneOpsOtherOpsAndOtherTypesStayAsTheyAre) {
  // One op: nothing to fuse. A Clip with a bound computed at run time, Where and Floor
  // are not chain ops, so each neighbour stays alone.
  EXPECT_TRUE(fuseAndCompare(graph({makeNode("Relu", {"x"}, {"out"})})).applied.empty());
  const Fused f = fuseAndCompare(
      graph({withInt(makeNode("ReduceMin", {"y"}, {"lo2"}), "keepdims", 0),
             makeNode("Clip", {"x", "lo2", "hi"}, {"c"}, 13), makeNode("Floor", {"c"}, {"out"})}));
  EXPECT_TRUE(f.applied.empty());
  EXPECT_EQ(f.network.graph.nodes.size(), 3u);
  // int64 arithmetic is not fused.
  Network ints;
  ints.opsets[""] = 17;
  ints.graph.inputs = {input("i", {4}, DataType::kInt64)};
  ints.graph.nodes = {makeNode("Add", {"i", "i"}, {"s"}), makeNode("Mul", {"s", "i"}, {"out"})};
  ints.graph.outputs = {{"out", DataType::kUndefined, false, {}}};
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(ints, 3, {}, &applied).isOk());
  EXPECT_EQ(ints.graph.nodes.size(), 2u);
}

TEST(FusePointwiseChain, ALoneBroadcastBetweenTwoComputedValuesIsAChainOfOne) {
  // x * z, z [2, 1, 8] over x [2, 3, 8] (squeeze-excitation's scale): one op, fused.
  const Fused se = fuseAndCompare(graph({makeNode("Mul", {"x", "z"}, {"out"})}));
  ASSERT_EQ(se.applied.size(), 1u);
  EXPECT_EQ(se.network.graph.nodes[0].opType, kPointwiseChainOp);
  EXPECT_EQ(se.network.graph.nodes[0].name, "PWN(" + se.applied[0].nodes[0] + ")");
  // The same shapes, or a constant operand: nothing a chain of one would gain.
  EXPECT_TRUE(fuseAndCompare(graph({makeNode("Mul", {"x", "x"}, {"out"})})).applied.empty());
  EXPECT_TRUE(fuseAndCompare(graph({makeNode("Add", {"x", "bias"}, {"out"})})).applied.empty());
}

TEST(FusePointwiseChain, ABadProgramIsAnErrorNamingTheNode) {
  Fused f =
      fuseAndCompare(graph({makeNode("Add", {"x", "y"}, {"a"}), makeNode("Relu", {"a"}, {"out"})}));
  ASSERT_EQ(f.network.graph.nodes.size(), 1u);
  f.network.graph.nodes[0].attributes["operands"].ints = {0, 1, 5};  // Relu reads itself
  std::vector<NamedTensor> out;
  Status s = ReferenceBackend(f.network).run(feeds(), &out);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("PWN(a, out)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("not defined before it"), std::string::npos) << s.message();
  f.network.graph.nodes[0].attributes["ops"].strings = {"Add", "Floor"};
  s = ReferenceBackend(f.network).run(feeds(), &out);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("unknown op 'Floor'"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace kiln::test
