// sum_stacked_branches: SKNet's selective kernel (two branches stacked on axis 1, their sum
// for the attention, the softmax-weighted sum after it) becomes 4-D sums and products with no
// Concat or ReduceSum left; the outputs stay the CPU reference's. Sums that keep the axis, or
// that reduce an axis other than the stacking one, stay.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "sum_stacked_branches";

struct StackOptions {
  int64_t branches = 2;
  int64_t weightAxisDim = 2;  // W [2, weightAxisDim, 3, 1, 1]; 0: no weighted sum
  int64_t sumAxis = 1;        // the ReduceSum's axis (the stack is on axis 1)
  int64_t keepDims = 0;
  bool weightsFirst = false;  // Mul(W, stack)
};

// x_i [2, 3, 4, 5] -> Unsqueeze(1) -> Concat(axis 1) -> s [2, k, 3, 4, 5];
// plain = ReduceSum(s, [sumAxis]); weighted = ReduceSum(Mul(s, Softmax(w, axis 1)), [sumAxis]).
Network stack(const StackOptions& o) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.initializers["axis1"] = Tensor::int64Vector({1});
  g.initializers["sumAxes"] = Tensor::int64Vector({o.sumAxis});
  std::vector<std::string> stacked;
  for (int64_t i = 0; i < o.branches; ++i) {
    const std::string x = "x" + std::to_string(i), u = "u" + std::to_string(i);
    g.inputs.push_back({x, DataType::kFloat32, true, constantDims({2, 3, 4, 5})});
    g.nodes.push_back(makeNode("Unsqueeze", {x, "axis1"}, {u}));
    stacked.push_back(u);
  }
  g.nodes.push_back(withInt(makeNode("Concat", stacked, {"s"}), "axis", 1));
  g.nodes.push_back(
      withInt(makeNode("ReduceSum", {"s", "sumAxes"}, {"plain"}), "keepdims", o.keepDims));
  g.outputs = {{"plain", DataType::kFloat32, false, {}}};
  if (o.weightAxisDim > 0) {
    g.inputs.push_back(
        {"w", DataType::kFloat32, true, constantDims({2, o.weightAxisDim, 3, 1, 1})});
    g.nodes.push_back(withInt(makeNode("Softmax", {"w"}, {"attn"}), "axis", 1));
    g.nodes.push_back(makeNode("Mul",
                               o.weightsFirst ? std::vector<std::string>{"attn", "s"}
                                              : std::vector<std::string>{"s", "attn"},
                               {"weighted_terms"}));
    g.nodes.push_back(withInt(makeNode("ReduceSum", {"weighted_terms", "sumAxes"}, {"weighted"}),
                              "keepdims", o.keepDims));
    g.outputs.push_back({"weighted", DataType::kFloat32, false, {}});
  }
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) g.nodes[i].index = i;
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, randomFloatInputs(net));
}

TEST(SumStackedBranches, SelectiveKernelSumsBecomeFourDimensional) {
  for (bool weightsFirst : {false, true}) {
    SCOPED_TRACE(weightsFirst ? "Mul(W, stack)" : "Mul(stack, W)");
    StackOptions o;
    o.weightsFirst = weightsFirst;
    Network fused;
    // plain: one Add; weighted: the Softmax, two Gathers, two Muls, one Add.
    auto applied = fuseAndCompareOutputs(kPass, run, stack(o), 7, &fused);
    EXPECT_EQ(applied.size(), 2u);
    EXPECT_EQ(countOps(fused, "Concat"), 0);
    EXPECT_EQ(countOps(fused, "ReduceSum"), 0);
    EXPECT_EQ(countOps(fused, "Unsqueeze"), 0);
  }
}

TEST(SumStackedBranches, ThreeBranchesAndOneSharedWeight) {
  StackOptions three;
  three.branches = 3;
  three.weightAxisDim = 3;
  // plain: two Adds; weighted: Softmax, three Gathers, three Muls, two Adds.
  EXPECT_EQ(fuseAndCompareOutputs(kPass, run, stack(three), 11).size(), 2u);
  // W [2, 1, 3, 1, 1] weighs every branch alike: Gather index 0 for each (one Gather after
  // merge_duplicate_nodes).
  StackOptions shared;
  shared.weightAxisDim = 1;
  EXPECT_EQ(fuseAndCompareOutputs(kPass, run, stack(shared), 6).size(), 2u);
}

TEST(SumStackedBranches, SumsThatMustStayStay) {
  // keepdims = 1: the axis stays (as 1); not the sum of the branches' shape.
  StackOptions keep;
  keep.keepDims = 1;
  keep.weightAxisDim = 0;
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, stack(keep), 4).empty());
  // A sum over another axis than the stacking one.
  StackOptions other;
  other.sumAxis = 2;
  other.weightAxisDim = 0;
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, stack(other), 4).empty());
}

}  // namespace
}  // namespace kiln::test
