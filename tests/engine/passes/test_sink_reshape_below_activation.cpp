// sink_reshape_below_activation: GPT-2's Conv1D (Gemm on rows, Reshape back to
// [batch, sequence, features], GELU) becomes one FusedMatMul with the GELU in it and a
// Reshape after; the outputs stay the CPU reference's. A Reshape whose input has other
// readers, or one not after a GEMM, stays where it is.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "sink_reshape_below_activation";

// x [6, 8] -> Gemm(W [8, 16], b [16]) -> Reshape [2, 3, 16] -> `activation` -> y, and
// with `tap` the Gemm's output is also a graph output.
Network conv1d(const std::string& activation, bool tap = false, bool gemm = true) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(6), DimExpr(8)}}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {8, 16}, 2);
  g.initializers["b"] = randomTensor(DataType::kFloat32, {16}, 3);
  g.initializers["shape"] = Tensor::int64Vector({2, 3, 16});
  if (gemm)
    g.nodes.push_back(makeNode("Gemm", {"x", "w", "b"}, {"rows"}));
  else
    g.nodes.push_back(makeNode("Sigmoid", {"x"}, {"rows"}));
  g.nodes.push_back(makeNode("Reshape", {"rows", gemm ? "shape" : "shape8"}, {"shaped"}));
  if (!gemm) g.initializers["shape8"] = Tensor::int64Vector({2, 3, 8});
  Node act = makeNode(activation, {"shaped"}, {"y"});
  if (activation == "Gelu") {  // what fuse_gelu makes of GPT-2's tanh chain below opset 20
    act = withString(act, "approximate", "tanh");
    act.domain = kKilnDomain;
    act.opset = 1;
  }
  g.nodes.push_back(act);
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) g.nodes[i].index = i;
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  if (tap) g.outputs.push_back({"rows", DataType::kFloat32, false, {}});
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {6, 8}, 1, -2.0, 2.0)}});
}

TEST(SinkReshapeBelowActivation, Gpt2Conv1dGeluBecomesOneFusedMatMul) {
  for (const char* activation : {"Gelu", "Relu", "Tanh"}) {
    SCOPED_TRACE(activation);
    Network fused;
    auto applied = fuseAndCompareOutputs(kPass, run, conv1d(activation), 2, &fused);
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"shaped", "y"}));
    ASSERT_EQ(fused.graph.nodes.size(), 2u);
    EXPECT_EQ(fused.graph.nodes[0].opType, "FusedMatMul");
    EXPECT_NE(fused.graph.nodes[0].name.find("PWN(y)"), std::string::npos)
        << fused.graph.nodes[0].name;
    EXPECT_EQ(fused.graph.nodes[1].opType, "Reshape");
    EXPECT_EQ(fused.graph.nodes[1].outputs[0], "y");
  }
}

TEST(SinkReshapeBelowActivation, ReshapesThatMustStayStay) {
  // The GEMM's output is also a graph output: the activation may not read it instead.
  auto tapped = fuseAndCompareOutputs(kPass, run, conv1d("Gelu", true), 3);
  EXPECT_TRUE(tapped.empty());
  // Not after a GEMM: nothing to fuse into, so nothing moves.
  auto plain = fuseAndCompareOutputs(kPass, run, conv1d("Relu", false, false), 3);
  EXPECT_TRUE(plain.empty());
}

}  // namespace
}  // namespace kiln::test
