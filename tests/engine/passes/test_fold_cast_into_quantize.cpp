// fold_cast_into_quantize: QuantizeLinear(Cast(x, to = float32)) reads a float16/bfloat16 x
// itself, with the CPU reference's int8 outputs unchanged bit for bit; a Cast read
// elsewhere stays for that reader, and a Cast that rounds (float64 -> float32) stays.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

// y = Q(Cast(x, float32), 0.02, 0) for an x of `type` [2, 3, 8]; with `castOutput` the
// Cast's result is a graph output too.
Network castThenQuantize(DataType type, bool castOutput = false) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", type, true, {DimExpr(2), DimExpr(3), DimExpr(8)}}};
  g.initializers["scale"] = Tensor::scalarFloat(0.02f);
  Tensor zero(DataType::kInt8, {});
  zero.data<int8_t>()[0] = 0;
  g.initializers["zero"] = zero;
  g.nodes.push_back(withInt(makeNode("Cast", {"x"}, {"x32"}), "to", 1));
  g.nodes.push_back(makeNode("QuantizeLinear", {"x32", "scale", "zero"}, {"y"}));
  g.outputs = {{"y", DataType::kInt8, false, {}}};
  if (castOutput) g.outputs.push_back({"x32", DataType::kFloat32, false, {}});
  return net;
}

std::map<std::string, Tensor> feeds(DataType type) {
  return {{"x", castTensor(randomTensor(DataType::kFloat32, {2, 3, 8}, 7, -4.0, 4.0), type)}};
}

int countOf(const Network& net, const std::string& op) {
  int n = 0;
  for (const Node& node : net.graph.nodes) n += node.opType == op;
  return n;
}

Network folded(const Network& net) {
  Network out = net;
  std::vector<PassApplication> applied;
  const Status s = runPasses(out, 0, {}, &applied);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return out;
}

void expectSameOutputs(const Network& a, const Network& b, DataType type) {
  const auto x = runOnReference(a, feeds(type)), y = runOnReference(b, feeds(type));
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) expectTensorNear(y[i].tensor, x[i].tensor, 0, 0);
}

TEST(FoldCastIntoQuantize, HalfInputsAreQuantizedDirectly) {
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
    SCOPED_TRACE(dataTypeName(type));
    const Network net = castThenQuantize(type);
    const Network out = folded(net);
    EXPECT_EQ(countOf(out, "Cast"), 0);
    ASSERT_EQ(countOf(out, "QuantizeLinear"), 1);
    EXPECT_EQ(out.graph.nodes.back().inputs[0], "x");
    expectSameOutputs(net, out, type);
  }
}

TEST(FoldCastIntoQuantize, ACastReadElsewhereStays) {
  const Network net = castThenQuantize(DataType::kFloat16, true);
  const Network out = folded(net);
  EXPECT_EQ(countOf(out, "Cast"), 1);
  for (const Node& n : out.graph.nodes)
    if (n.opType == "QuantizeLinear") EXPECT_EQ(n.inputs[0], "x");
  expectSameOutputs(net, out, DataType::kFloat16);
}

TEST(FoldCastIntoQuantize, ARoundingCastStays) {
  const Network net = castThenQuantize(DataType::kFloat64);
  const Network out = folded(net);
  EXPECT_EQ(countOf(out, "Cast"), 1);
}

TEST(FoldCastIntoQuantize, DisabledByName) {
  Network out = castThenQuantize(DataType::kFloat16);
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(out, 0, {"fold_cast_into_quantize"}, &applied).isOk());
  EXPECT_EQ(countOf(out, "Cast"), 1);
}

}  // namespace
}  // namespace kiln::test
