// sum_stacked_branches: SKNet's selective kernel (two branches stacked on axis 1, their sum
// for the attention, the softmax-weighted sum after it) becomes 4-D sums and products with no
// Concat or ReduceSum left; the outputs stay the CPU reference's. ResNeSt's split attention
// (a Reshape splitting the channels into radix groups, their sum and their softmax-weighted
// sum) becomes slices of the channels summed. Sums that keep the axis, or that reduce an axis
// other than the stacking one, stay.
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
  bool weightsFirst = false;         // Mul(W, stack)
  int opset = 17;                    // 11: Unsqueeze's and ReduceSum's axes as attributes
  bool negativeAxes = false;         // the stacking axis written as -4
  bool tapProduct = false;           // the weighted sum's Mul is also a graph output
  std::vector<int64_t> weightShape;  // W's shape ({2, weightAxisDim, 3, 1, 1} when empty)
};

// x_i [2, 3, 4, 5] -> Unsqueeze(1) -> Concat(axis 1) -> s [2, k, 3, 4, 5];
// plain = ReduceSum(s, [sumAxis]); weighted = ReduceSum(Mul(s, Sigmoid(w)), [sumAxis]).
Network stack(const StackOptions& o) {
  Network net;
  net.opsets[""] = o.opset;
  Graph& g = net.graph;
  const int64_t axis = o.negativeAxes ? -4 : 1;
  const int64_t sumAxis = o.sumAxis == 1 ? axis : o.sumAxis;
  const bool attributes = o.opset < 13;
  g.initializers["axis1"] = Tensor::int64Vector({axis});
  g.initializers["sumAxes"] = Tensor::int64Vector({sumAxis});
  auto reduceSum = [&](const std::string& in, const std::string& out) {
    Node n = attributes ? withInts(makeNode("ReduceSum", {in}, {out}, o.opset), "axes", {sumAxis})
                        : makeNode("ReduceSum", {in, "sumAxes"}, {out}, o.opset);
    return withInt(n, "keepdims", o.keepDims);
  };
  std::vector<std::string> stacked;
  for (int64_t i = 0; i < o.branches; ++i) {
    const std::string x = "x" + std::to_string(i), u = "u" + std::to_string(i);
    g.inputs.push_back({x, DataType::kFloat32, true, constantDims({2, 3, 4, 5})});
    g.nodes.push_back(attributes
                          ? withInts(makeNode("Unsqueeze", {x}, {u}, o.opset), "axes", {axis})
                          : makeNode("Unsqueeze", {x, "axis1"}, {u}, o.opset));
    stacked.push_back(u);
  }
  g.nodes.push_back(withInt(makeNode("Concat", stacked, {"s"}, o.opset), "axis", axis));
  g.nodes.push_back(reduceSum("s", "plain"));
  g.outputs = {{"plain", DataType::kFloat32, false, {}}};
  if (o.weightAxisDim > 0) {
    const Shape w = o.weightShape.empty() ? Shape{2, o.weightAxisDim, 3, 1, 1} : o.weightShape;
    g.inputs.push_back({"w", DataType::kFloat32, true, constantDims(w)});
    g.nodes.push_back(makeNode("Sigmoid", {"w"}, {"attn"}, o.opset));
    g.nodes.push_back(makeNode("Mul",
                               o.weightsFirst ? std::vector<std::string>{"attn", "s"}
                                              : std::vector<std::string>{"s", "attn"},
                               {"weighted_terms"}, o.opset));
    g.nodes.push_back(reduceSum("weighted_terms", "weighted"));
    g.outputs.push_back({"weighted", DataType::kFloat32, false, {}});
    if (o.tapProduct) g.outputs.push_back({"weighted_terms", DataType::kFloat32, false, {}});
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
    // plain: one Add; weighted: the Sigmoid, two Gathers, two Muls, one Add.
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
  // plain: two Adds; weighted: Sigmoid, three Gathers, three Muls, two Adds.
  EXPECT_EQ(fuseAndCompareOutputs(kPass, run, stack(three), 11).size(), 2u);
  // W [2, 1, 3, 1, 1] weighs every branch alike: Gather index 0 for each (one Gather after
  // merge_duplicate_nodes).
  StackOptions shared;
  shared.weightAxisDim = 1;
  EXPECT_EQ(fuseAndCompareOutputs(kPass, run, stack(shared), 6).size(), 2u);
}

TEST(SumStackedBranches, AttributeAxesAndNegativeAxes) {
  // Opset 11: the axes of Unsqueeze and ReduceSum are attributes; and the axis written as -4.
  for (int opset : {11, 17}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    StackOptions o;
    o.opset = opset;
    o.negativeAxes = true;
    EXPECT_EQ(fuseAndCompareOutputs(kPass, run, stack(o), 7).size(), 2u);
  }
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
  // The weighted sum's product is also a graph output, or W has fewer dims than the stack
  // ([3, 1, 1]): the plain sum goes, the weighted one stays (Unsqueezes, Concat, Sigmoid,
  // Mul, ReduceSum and the plain sum's Add).
  StackOptions tapped;
  tapped.tapProduct = true;
  EXPECT_EQ(fuseAndCompareOutputs(kPass, run, stack(tapped), 7).size(), 1u);
  StackOptions shortWeight;
  shortWeight.weightShape = {3, 1, 1};
  EXPECT_EQ(fuseAndCompareOutputs(kPass, run, stack(shortWeight), 7).size(), 1u);
}

// ResNeSt's split attention: x [2, 6, 4, 5] viewed [2, 2, 3, 4, 5] (radix 2 groups of 3
// channels); gap = ReduceSum(view, [1]); out = ReduceSum(view * Reshape(Sigmoid(w), [2, 2, 3, 1,
// 1]), [1]). Both sums become x's two channel slices added (times their Gathered weights): no
// ReduceSum left, the Reshape of x gone. Opset 9 writes the Slices' and ReduceSum's axes as
// attributes. A Reshape that splits another axis than the summed one stays.
Network splitAttention(int opset, const std::vector<int64_t>& view, int64_t sumAxis) {
  Network net;
  net.opsets[""] = opset;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, constantDims({2, 6, 4, 5})},
              {"w", DataType::kFloat32, true, constantDims({2, 6, 1, 1})}};
  g.initializers["view"] = Tensor::int64Vector(view);
  g.initializers["weightView"] = Tensor::int64Vector({2, 2, 3, 1, 1});
  g.initializers["sumAxes"] = Tensor::int64Vector({sumAxis});
  auto reduceSum = [&](const std::string& in, const std::string& out) {
    Node n = opset < 13 ? withInts(makeNode("ReduceSum", {in}, {out}, opset), "axes", {sumAxis})
                        : makeNode("ReduceSum", {in, "sumAxes"}, {out}, opset);
    return withInt(n, "keepdims", 0);
  };
  g.nodes.push_back(makeNode("Relu", {"x"}, {"xr"}, opset));
  g.nodes.push_back(makeNode("Reshape", {"xr", "view"}, {"groups"}, opset));
  g.nodes.push_back(reduceSum("groups", "gap"));
  g.nodes.push_back(makeNode("Sigmoid", {"w"}, {"attn"}, opset));
  g.nodes.push_back(makeNode("Reshape", {"attn", "weightView"}, {"attn5"}, opset));
  if (view[2] == 3) {
    g.nodes.push_back(makeNode("Mul", {"groups", "attn5"}, {"terms"}, opset));
    g.nodes.push_back(reduceSum("terms", "out"));
    g.outputs = {{"gap", DataType::kFloat32, false, {}}, {"out", DataType::kFloat32, false, {}}};
  } else {
    g.outputs = {{"gap", DataType::kFloat32, false, {}}};
  }
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) g.nodes[i].index = i;
  return net;
}

TEST(SumStackedBranches, SplitAttentionGroupsBecomeChannelSlices) {
  for (int opset : {17, 9}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Network fused;
    // Relu, two Slices, their Add; Sigmoid, its Reshape, two Gathers, two Muls, one Add.
    const auto applied =
        fuseAndCompareOutputs(kPass, run, splitAttention(opset, {2, 2, 3, 4, 5}, 1), 11, &fused);
    EXPECT_EQ(applied.size(), 2u);
    EXPECT_EQ(countOps(fused, "ReduceSum"), 0);
    EXPECT_EQ(countOps(fused, "Slice"), 2);
    EXPECT_EQ(countOps(fused, "Reshape"), 1);  // the weights' view stays: Gather reads it
  }
  // x's channels viewed [2, 3, 2, 4, 5] summed over axis 2: the groups are not slices of one
  // axis of x along the summed axis (axis 2 of the view splits no axis of x): it stays (Relu,
  // Reshape, ReduceSum; the unread weights go as dead nodes).
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, splitAttention(17, {2, 3, 2, 4, 5}, 2), 3).empty());
}

}  // namespace
}  // namespace kiln::test
