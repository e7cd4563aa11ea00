// sink_reshape_below_norm: OPT's pre-norm block (the residual sum viewed as rows before the
// LayerNorm, the view also read by the next residual Add) becomes one AddLayerNorm that also
// writes the sum, with the Reshapes as views after it; the outputs stay the CPU reference's.
// Reshapes that change the normalized row, that read no Add, or that an RMSNormalization's scale
// broadcasts across stay where they are.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "sink_reshape_below_norm";

struct BlockOptions {
  std::vector<int64_t> from = {2, 3, 8};  // x, r and their sum
  std::vector<int64_t> to = {6, 8};       // the Reshape's target
  bool residualReadsView = true;          // the next residual Add reads the Reshape too
  bool sumOfAdd = true;                   // the Reshape reads an Add (else a Relu)
  int64_t axis = -1;                      // the norm's axis attribute
  bool rms = false;                       // RMSNormalization (opset 23) instead
  std::vector<int64_t> gammaShape;        // the scale's shape ({n} when empty)
};

// x, r -> Add -> s -> Reshape(to) -> v -> Norm(gamma, beta) -> y; with residualReadsView,
// also z = Add(v, y) (the next residual), a second output.
Network block(const BlockOptions& o) {
  Network net;
  const int opset = o.rms ? 23 : 17;
  net.opsets[""] = opset;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, constantDims(Shape(o.from))},
              {"r", DataType::kFloat32, true, constantDims(Shape(o.from))}};
  const int64_t n = o.to.back();
  const Shape gammaShape = o.gammaShape.empty() ? Shape{n} : Shape(o.gammaShape);
  g.initializers["gamma"] = randomTensor(DataType::kFloat32, gammaShape, 3, 0.5, 1.5);
  g.initializers["beta"] = randomTensor(DataType::kFloat32, {n}, 4);
  g.initializers["target"] = Tensor::int64Vector(o.to);
  g.nodes.push_back(o.sumOfAdd ? makeNode("Add", {"x", "r"}, {"s"}, opset)
                               : makeNode("Relu", {"x"}, {"s"}, opset));
  g.nodes.push_back(makeNode("Reshape", {"s", "target"}, {"v"}, opset));
  Node norm = o.rms ? makeNode("RMSNormalization", {"v", "gamma"}, {"y"}, opset)
                    : makeNode("LayerNormalization", {"v", "gamma", "beta"}, {"y"}, opset);
  g.nodes.push_back(withFloat(withInt(norm, "axis", o.axis), "epsilon", 1e-5f));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  if (o.residualReadsView) {
    g.nodes.push_back(makeNode("Add", {"v", "y"}, {"z"}, opset));
    g.outputs.push_back({"z", DataType::kFloat32, false, {}});
  }
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) g.nodes[i].index = i;
  return net;
}

NetworkRunner runner(const std::vector<int64_t>& from) {
  return [from](const Network& net) {
    return runOnReference(net,
                          {{"x", randomTensor(DataType::kFloat32, Shape(from), 1, -2.0, 2.0)},
                           {"r", randomTensor(DataType::kFloat32, Shape(from), 2, -2.0, 2.0)}});
  };
}

TEST(SinkReshapeBelowNorm, OptPreNormBlockBecomesAddLayerNormWritingTheSum) {
  BlockOptions o;
  Network fused;
  // Add -> AddLayerNorm (y and s), the kept Reshape of s, the new Reshape of y, the residual.
  auto applied = fuseAndCompareOutputs(kPass, runner(o.from), block(o), 4, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"v", "y"}));
  EXPECT_EQ(countOps(fused, "AddLayerNorm"), 1);
  EXPECT_EQ(countOps(fused, "LayerNormalization"), 0);
  EXPECT_EQ(countOps(fused, "Reshape"), 2);
  for (const Node& node : fused.graph.nodes)
    if (node.opType == "AddLayerNorm") EXPECT_EQ(node.outputs.size(), 2u) << "the sum is read";
}

TEST(SinkReshapeBelowNorm, RowsBackToTokensAndRmsNorm) {
  // fc2's residual: rows [6, 8] viewed back [2, 3, 8] before the next block's norm, whose
  // axis is written as a positive index; and the same with RMSNormalization.
  for (bool rms : {false, true}) {
    SCOPED_TRACE(rms ? "RMSNormalization" : "LayerNormalization");
    BlockOptions o;
    o.from = {6, 8};
    o.to = {2, 3, 8};
    o.axis = 2;
    o.rms = rms;
    Network fused;
    auto applied = fuseAndCompareOutputs(kPass, runner(o.from), block(o), 4, &fused);
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_EQ(countOps(fused, "AddLayerNorm"), 1);
  }
}

TEST(SinkReshapeBelowNorm, AReshapeOnlyTheNormReadGoes) {
  BlockOptions o;
  o.residualReadsView = false;
  Network fused;
  // AddLayerNorm (y only: nothing else reads the sum) and the Reshape of y.
  auto applied = fuseAndCompareOutputs(kPass, runner(o.from), block(o), 2, &fused);
  ASSERT_EQ(applied.size(), 1u);
  ASSERT_EQ(fused.graph.nodes.size(), 2u);
  EXPECT_EQ(fused.graph.nodes[0].opType, "AddLayerNorm");
  EXPECT_EQ(fused.graph.nodes[0].outputs.size(), 1u);
  EXPECT_EQ(fused.graph.nodes[1].opType, "Reshape");
  EXPECT_EQ(fused.graph.nodes[1].outputs[0], "y");
}

TEST(SinkReshapeBelowNorm, ReshapesThatMustStayStay) {
  // The Reshape changes the row: [2, 3, 8] -> [2, 24] normalizes 24 values, not 8.
  BlockOptions wider;
  wider.to = {2, 24};
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, runner(wider.from), block(wider), 4).empty());
  // The norm's axis is not the last one: its rows are not the Reshape's input's rows.
  BlockOptions inner;
  inner.to = {2, 3, 8};
  inner.from = {6, 8};
  inner.axis = 1;
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, runner(inner.from), block(inner), 4).empty());
  // An RMSNormalization scale [2, 1, 8] broadcasts over the rows of [2, 3, 8] (its first dim is
  // the Reshape's output's first dim, not the sum's [6, 8]'s): it stays.
  BlockOptions scaled;
  scaled.from = {6, 8};
  scaled.to = {2, 3, 8};
  scaled.rms = true;
  scaled.gammaShape = {2, 1, 8};
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, runner(scaled.from), block(scaled), 4).empty());
  // No Add before the Reshape: nothing would fuse, so nothing moves.
  BlockOptions relu;
  relu.sumOfAdd = false;
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, runner(relu.from), block(relu), 4).empty());
}

}  // namespace
}  // namespace kiln::test
