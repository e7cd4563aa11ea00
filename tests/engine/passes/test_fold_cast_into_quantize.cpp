// fold_cast_into_quantize and fold_cast_into_int8_output (a strongly typed export's Casts at
// the edges of its INT8 regions). fold_cast_into_quantize: QuantizeLinear(Cast(x, to = float32))
// reads a float16/bfloat16 x itself, with the CPU reference's int8 outputs unchanged bit for bit; a
// Cast read elsewhere stays for that reader, and a Cast that rounds (float64 -> float32) stays.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "ir/quantized_layers.h"
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

namespace kiln::test {
namespace {

// A strongly typed INT8 GEMM between FP16 regions, as an opset-17 export writes it:
//   x f16 -> Cast f32 -> Q -> DQ -> MatMul(., DQ(w int8)) -> Add(bias) -> Cast f16 -> y
Network typedInt8Gemm() {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat16, true, {DimExpr(4), DimExpr(16)}}};
  g.initializers["s"] = Tensor::scalarFloat(0.03f);
  Tensor zero(DataType::kInt8, {});
  zero.data<int8_t>()[0] = 0;
  g.initializers["zero"] = zero;
  g.initializers["wq"] =
      castTensor(randomTensor(DataType::kInt64, {16, 8}, 3, -100, 100), DataType::kInt8);
  g.initializers["sw"] = Tensor::scalarFloat(0.01f);
  g.initializers["bias"] = randomTensor(DataType::kFloat32, {8}, 4, -1.0, 1.0);
  g.nodes = {withInt(makeNode("Cast", {"x"}, {"x32"}), "to", 1),
             makeNode("QuantizeLinear", {"x32", "s", "zero"}, {"q"}),
             makeNode("DequantizeLinear", {"q", "s", "zero"}, {"dq"}),
             makeNode("DequantizeLinear", {"wq", "sw"}, {"w"}),
             makeNode("MatMul", {"dq", "w"}, {"mm"}),
             makeNode("Add", {"mm", "bias"}, {"y32"}),
             withInt(makeNode("Cast", {"y32"}, {"y"}), "to", 10)};
  g.outputs = {{"y", DataType::kFloat16, false, {}}};
  return net;
}

TEST(FoldCastIntoInt8Output, TheInt8LayerWritesFloat16ItselfWithNoCastLeft) {
  const Network net = typedInt8Gemm();
  Network out = net;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(out, 2, {}, &applied).isOk());
  // Q (reading x itself) -> QuantizedMatMul (bias in its epilogue) writing y in float16.
  ASSERT_EQ(out.graph.nodes.size(), 2u);
  EXPECT_EQ(out.graph.nodes[0].opType, "QuantizeLinear");
  EXPECT_EQ(out.graph.nodes[0].inputs[0], "x");
  const Node& layer = out.graph.nodes[1];
  EXPECT_EQ(layer.opType, kQuantizedMatMulOp);
  EXPECT_EQ(layer.attrInt(kFloatOutputTypeAttribute, 0), static_cast<int64_t>(DataType::kFloat16));
  EXPECT_EQ(layer.inputs[kQuantX], out.graph.nodes[0].outputs[0]);
  EXPECT_EQ(layer.inputs[kQuantBias], "bias");
  EXPECT_EQ(layer.outputs[0], "y");
  const std::map<std::string, Tensor> feeds = {
      {"x",
       castTensor(randomTensor(DataType::kFloat32, {4, 16}, 9, -3.0, 3.0), DataType::kFloat16)}};
  const auto expected = runOnReference(net, feeds), actual = runOnReference(out, feeds);
  ASSERT_EQ(actual.size(), 1u);
  EXPECT_EQ(actual[0].tensor.type(), DataType::kFloat16);
  expectTensorNear(castTensor(actual[0].tensor, DataType::kFloat32),
                   castTensor(expected[0].tensor, DataType::kFloat32), 1e-3, 1e-3);
}

TEST(FoldCastIntoInt8Output, AFloatOutputReadElsewhereKeepsItsCast) {
  Network net = typedInt8Gemm();
  net.graph.outputs.push_back({"y32", DataType::kFloat32, false, {}});
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(net, 2, {}, &applied).isOk());
  int casts = 0;
  for (const Node& n : net.graph.nodes) {
    casts += n.opType == "Cast";
    if (n.opType == kQuantizedMatMulOp) EXPECT_FALSE(n.hasAttr(kFloatOutputTypeAttribute));
  }
  EXPECT_EQ(casts, 1);
}

}  // namespace
}  // namespace kiln::test
