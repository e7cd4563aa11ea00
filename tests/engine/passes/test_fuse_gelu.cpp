// fuse_gelu: the erf and tanh GELU chains in the arrangements exporters write become
// one Gelu (ai.kiln Gelu below opset 20); wrong constants and intermediates read
// elsewhere stay. Graphs run with and without the pipeline on the CPU reference.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/passes/pass_test_support.h"
#include "passes/rewrite_helpers.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fuse_gelu";

// x [2, 5, 8] -> `nodes` (all at ai.onnx `opset`) ending in "y"; the GELU constants.
Network gelu(const std::vector<Node>& nodes, int opset = 20) {
  Network net;
  net.opsets[""] = opset;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(5), DimExpr(8)}}};
  g.initializers["half"] = floatTensor({}, {0.5f});
  g.initializers["one"] = floatTensor({}, {1.f});
  g.initializers["sqrt2"] = floatTensor({}, {1.4142135f});
  g.initializers["inv_sqrt2"] = floatTensor({1}, {0.70710678f});
  g.initializers["three"] = floatTensor({}, {3.f});
  g.initializers["cubic"] = floatTensor({}, {0.044715f});
  g.initializers["sqrt_2_pi"] = floatTensor({}, {0.7978845608f});
  g.initializers["wrong_half"] = floatTensor({}, {0.6f});
  g.initializers["wrong_cubic"] = floatTensor({}, {0.05f});
  g.initializers["gamma"] = randomTensor(DataType::kFloat32, {8}, 4, 0.5, 1.5);
  g.initializers["beta"] = randomTensor(DataType::kFloat32, {8}, 5);
  g.nodes = nodes;
  for (Node& n : g.nodes) n.opset = opset;  // as the importer sets them
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 5, 8}, 1, -3.0, 3.0)}});
}

// 1 + erf(x / sqrt 2) as "e" (`scaled`: x * (1 / sqrt 2), and 1 + erf written first).
std::vector<Node> erfTerm(bool scaled = false) {
  if (scaled)
    return {makeNode("Mul", {"x", "inv_sqrt2"}, {"z"}), makeNode("Erf", {"z"}, {"t"}),
            makeNode("Add", {"one", "t"}, {"e"})};
  return {makeNode("Div", {"x", "sqrt2"}, {"z"}), makeNode("Erf", {"z"}, {"t"}),
          makeNode("Add", {"t", "one"}, {"e"})};
}

std::vector<Node> with(std::vector<Node> nodes, const std::vector<Node>& more) {
  nodes.insert(nodes.end(), more.begin(), more.end());
  return nodes;
}

// 1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)) as "e": HF's NewGELU, or with x^3 as
// x * (x * x), or Megatron's sqrt(2/pi) * x * (1 + 0.044715 * x * x).
enum class TanhForm { kPow, kProducts, kFactored };

std::vector<Node> tanhTerm(TanhForm form, const std::string& cubic = "cubic") {
  std::vector<Node> n;
  switch (form) {
    case TanhForm::kPow:
      n = {makeNode("Pow", {"x", "three"}, {"p"}), makeNode("Mul", {"p", cubic}, {"q"}),
           makeNode("Add", {"x", "q"}, {"r"}), makeNode("Mul", {"r", "sqrt_2_pi"}, {"s"})};
      break;
    case TanhForm::kProducts:
      n = {makeNode("Mul", {"x", "x"}, {"xx"}), makeNode("Mul", {"x", "xx"}, {"p"}),
           makeNode("Mul", {cubic, "p"}, {"q"}), makeNode("Add", {"q", "x"}, {"r"}),
           makeNode("Mul", {"sqrt_2_pi", "r"}, {"s"})};
      break;
    case TanhForm::kFactored:
      n = {makeNode("Mul", {"x", "x"}, {"xx"}), makeNode("Mul", {cubic, "xx"}, {"q"}),
           makeNode("Add", {"one", "q"}, {"r"}), makeNode("Mul", {"x", "r"}, {"xr"}),
           makeNode("Mul", {"sqrt_2_pi", "xr"}, {"s"})};
      break;
  }
  return with(n, {makeNode("Tanh", {"s"}, {"t"}), makeNode("Add", {"t", "one"}, {"e"})});
}

// The two Muls by x and 0.5 in three associations.
enum class Halving { kProductThenHalf, kHalfThenProduct, kHalfOfTerm };

std::vector<Node> halve(Halving h, const std::string& half = "half") {
  switch (h) {
    case Halving::kProductThenHalf:
      return {makeNode("Mul", {"x", "e"}, {"xe"}), makeNode("Mul", {half, "xe"}, {"y"})};
    case Halving::kHalfThenProduct:
      return {makeNode("Mul", {"x", half}, {"hx"}), makeNode("Mul", {"hx", "e"}, {"y"})};
    case Halving::kHalfOfTerm:
      return {makeNode("Mul", {"e", half}, {"he"}), makeNode("Mul", {"x", "he"}, {"y"})};
  }
  return {};
}

// One Gelu node of x with `approximate` in `domain`, with the whole chain as provenance.
void expectGelu(const Network& net, const std::string& approximate, const std::string& domain) {
  Network fused;
  auto applied = fuseAndCompareOutputs(kPass, run, net, 1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes.size(), net.graph.nodes.size());
  const Node& node = fused.graph.nodes[0];
  EXPECT_EQ(node.opType, "Gelu");
  EXPECT_EQ(node.domain, domain);
  EXPECT_EQ(node.inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(node.attrString("approximate", "none"), approximate);
  EXPECT_EQ(node.attrStrings(kSourceNodesAttribute).size(), net.graph.nodes.size());
  EXPECT_EQ(node.attrString(kFusionPassAttribute, ""), kPass);
}

TEST(FuseGelu, ErfFormInEveryArrangement) {
  for (Halving h : {Halving::kProductThenHalf, Halving::kHalfThenProduct, Halving::kHalfOfTerm})
    for (bool scaled : {false, true}) {
      SCOPED_TRACE(static_cast<int>(h) * 2 + scaled);
      expectGelu(gelu(with(erfTerm(scaled), halve(h))), "none", "");
    }
}

TEST(FuseGelu, TanhFormInEveryArrangement) {
  for (TanhForm form : {TanhForm::kPow, TanhForm::kProducts, TanhForm::kFactored})
    for (Halving h : {Halving::kProductThenHalf, Halving::kHalfOfTerm}) {
      SCOPED_TRACE(static_cast<int>(form) * 3 + static_cast<int>(h));
      expectGelu(gelu(with(tanhTerm(form), halve(h))), "tanh", "");
    }
}

TEST(FuseGelu, BelowOpset20ItIsTheKilnGelu) {
  expectGelu(gelu(with(erfTerm(), halve(Halving::kProductThenHalf)), 17), "none", kKilnDomain);
  expectGelu(gelu(with(tanhTerm(TanhForm::kPow), halve(Halving::kHalfThenProduct)), 13), "tanh",
             kKilnDomain);
}

TEST(FuseGelu, AfterLayerNormalization) {
  // The GEMM epilogue takes a GELU after MatMul + bias; after a LayerNorm it is this pass's.
  std::vector<Node> nodes = {
      withFloat(withInt(makeNode("LayerNormalization", {"x", "gamma", "beta"}, {"n"}), "axis", -1),
                "epsilon", 1e-5f)};
  for (Node node : with(erfTerm(), halve(Halving::kHalfOfTerm))) {
    for (std::string& in : node.inputs)
      if (in == "x") in = "n";
    nodes.push_back(node);
  }
  Network fused;
  ASSERT_EQ(fuseAndCompareOutputs(kPass, run, gelu(nodes), 2, &fused).size(), 1u);
  EXPECT_EQ(fused.graph.nodes[1].opType, "Gelu");
  EXPECT_EQ(fused.graph.nodes[1].inputs, std::vector<std::string>{"n"});
}

TEST(FuseGelu, WrongConstantsStay) {
  Network half = gelu(with(erfTerm(), halve(Halving::kProductThenHalf, "wrong_half")));
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, half, half.graph.nodes.size()).empty());
  Network cubic = gelu(with(tanhTerm(TanhForm::kPow, "wrong_cubic"), halve(Halving::kHalfOfTerm)));
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, cubic, cubic.graph.nodes.size()).empty());
  // erf(x / 1.5) is no GELU.
  Network divisor = gelu(with(erfTerm(), halve(Halving::kHalfThenProduct)));
  divisor.graph.initializers["sqrt2"] = floatTensor({}, {1.5f});
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, divisor, divisor.graph.nodes.size()).empty());
}

// A strongly typed FP16 region stores the GELU's constants in float16: sqrt(2) is
// 1.4140625 there. Such a constant matches within half a unit in its type's last place,
// a float32 one within 1e-5 relative; other numbers still do not.
TEST(FuseGelu, SixteenBitConstantsMatchTheirRounding) {
  auto as = [](DataType type, float v) { return castTensor(floatTensor({}, {v}), type); };
  using passes::rewrite::isNearScalar;
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
    SCOPED_TRACE(dataTypeName(type));
    const Tensor sqrt2 = as(type, 1.4142135f), cubic = as(type, 0.044715f);
    EXPECT_TRUE(isNearScalar(&sqrt2, std::sqrt(2.0)));
    EXPECT_TRUE(isNearScalar(&cubic, 0.044715));
    const Tensor other = as(type, 1.5f), wrongCubic = as(type, 0.05f);
    EXPECT_FALSE(isNearScalar(&other, std::sqrt(2.0)));
    EXPECT_FALSE(isNearScalar(&wrongCubic, 0.044715));
  }
  const Tensor rounded = floatTensor({}, {1.4140625f});  // float32 holding the fp16 value
  EXPECT_FALSE(isNearScalar(&rounded, std::sqrt(2.0)));
}

// The erf GELU of a strongly typed FP16 region: x, the chain and its constants in float16
// (sqrt(2) as 1.4140625, which a float32 1e-5 rule would refuse) is one Gelu.
TEST(FuseGelu, Float16ChainWithFloat16Constants) {
  Network net = gelu(with(erfTerm(), halve(Halving::kProductThenHalf)));
  net.graph.inputs[0].type = DataType::kFloat16;
  net.graph.outputs[0].type = DataType::kFloat16;
  for (const char* c : {"half", "one", "sqrt2"})
    net.graph.initializers[c] = castTensor(net.graph.initializers[c], DataType::kFloat16);
  Network fused = net;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
  ASSERT_EQ(fused.graph.nodes.size(), 1u);
  EXPECT_EQ(fused.graph.nodes[0].opType, "Gelu");
  const std::map<std::string, Tensor> feeds = {
      {"x",
       castTensor(randomTensor(DataType::kFloat32, {2, 5, 8}, 1, -3.0, 3.0), DataType::kFloat16)}};
  const auto expected = runOnReference(net, feeds), actual = runOnReference(fused, feeds);
  ASSERT_EQ(actual.size(), 1u);
  expectTensorNear(castTensor(actual[0].tensor, DataType::kFloat32),
                   castTensor(expected[0].tensor, DataType::kFloat32), 4e-3, 4e-3);
}

TEST(FuseGelu, IntermediatesReadElsewhereStay) {
  for (const char* shared : {"t", "e", "z"}) {
    SCOPED_TRACE(shared);
    Network net = gelu(with(erfTerm(), halve(Halving::kProductThenHalf)));
    net.graph.outputs.push_back({shared, DataType::kFloat32, false, {}});
    EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, net, net.graph.nodes.size()).empty());
  }
  Network cube = gelu(with(tanhTerm(TanhForm::kProducts), halve(Halving::kHalfThenProduct)));
  cube.graph.outputs.push_back({"xx", DataType::kFloat32, false, {}});
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, cube, cube.graph.nodes.size()).empty());
}

}  // namespace
}  // namespace kiln::test
