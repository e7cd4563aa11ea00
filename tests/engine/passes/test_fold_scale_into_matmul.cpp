// fold_scale_into_matmul: Whisper's `q_proj(x) * scaling` (MatMul, bias Add, scalar Mul)
// becomes one FusedMatMul with the scale in its weights and bias; Div by a scalar too;
// BEiT's layer scale `gamma * proj(x)` (one factor per output column) as well; the
// outputs stay the CPU reference's. A scale that varies along another axis or broadcasts
// the rank up, or a GEMM output read elsewhere, stays.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fold_scale_into_matmul";

// x [2, 5, 8] -> MatMul(W [8, 6]) [-> Add(b [6])] -> `op`(., c) -> y; with `tap` the
// MatMul's output is a graph output as well.
Network scaledLinear(const std::string& op, bool bias, const Shape& cShape = {}, bool tap = false) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(5), DimExpr(8)}}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {8, 6}, 1);
  g.initializers["b"] = randomTensor(DataType::kFloat32, {6}, 2);
  g.initializers["c"] = randomTensor(DataType::kFloat32, cShape, 3, 0.1, 0.2);
  g.nodes.push_back(makeNode("MatMul", {"x", "w"}, {"mm"}));
  std::string last = "mm";
  if (bias) {
    g.nodes.push_back(makeNode("Add", {"mm", "b"}, {"biased"}));
    last = "biased";
  }
  g.nodes.push_back(makeNode(op, {last, "c"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  if (tap) g.outputs.push_back({"mm", DataType::kFloat32, false, {}});
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 5, 8}, 4)}});
}

TEST(FoldScaleIntoMatMul, QueryScalingBecomesOneFusedMatMul) {
  for (const char* op : {"Mul", "Div"})
    for (bool bias : {true, false}) {
      SCOPED_TRACE(std::string(op) + (bias ? " after the bias" : " after the MatMul"));
      Network fused;
      auto applied = fuseAndCompareOutputs(kPass, run, scaledLinear(op, bias), 1, &fused);
      ASSERT_EQ(applied.size(), 1u);
      EXPECT_EQ(applied[0].nodes.size(), bias ? 3u : 2u);
      EXPECT_EQ(fused.graph.nodes[0].opType, bias ? "FusedMatMul" : "MatMul");
      EXPECT_EQ(fused.graph.nodes[0].outputs[0], "y");
    }
}

TEST(FoldScaleIntoMatMul, LayerScaleVectorsFoldPerColumn) {
  const Shape shapes[] = {{6}, {1, 6}, {1, 1, 6}};
  for (const char* op : {"Mul", "Div"})
    for (bool bias : {true, false})
      for (const Shape& c : shapes) {
        SCOPED_TRACE(std::string(op) + (bias ? " after the bias, c rank " : ", c rank ") +
                     std::to_string(c.size()));
        Network fused;
        auto applied = fuseAndCompareOutputs(kPass, run, scaledLinear(op, bias, c), 1, &fused);
        ASSERT_EQ(applied.size(), 1u);
        EXPECT_EQ(fused.graph.nodes[0].opType, bias ? "FusedMatMul" : "MatMul");
      }
}

TEST(FoldScaleIntoMatMul, OtherScalesAndSharedOutputsStay) {
  // A scale that varies along the rows too ([5, 6]) is no per-column factor.
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, scaledLinear("Mul", true, {5, 6}), 2).empty());
  // A per-column scale of rank 4 broadcasts the rank-3 output up: left alone.
  EXPECT_TRUE(
      fuseAndCompareOutputs(kPass, run, scaledLinear("Mul", true, {1, 1, 1, 6}), 2).empty());
  // A [1, 1, 1] scale broadcasts the rank up: left alone.
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, scaledLinear("Mul", false, {1, 1, 1}), 2).empty());
  // The MatMul's output is also a graph output: nothing fuses.
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, scaledLinear("Mul", true, {}, true), 3).empty());
}

}  // namespace
}  // namespace kiln::test
