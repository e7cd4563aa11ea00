// batch_norm_as_scale_shift (level 2): a BatchNormalization no convolution took becomes
// X * s + t with [C, 1, 1] constants, which fuse_pointwise_chain joins with the ReLU
// after it into one PointwiseChain; outputs stay the CPU reference's (1e-5, random
// statistics with variances away from 0). A BN after a Conv still folds into it; a
// training-mode BN, one with computed statistics and level 1 stay BNs.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "ir/pointwise_program.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

// x [2, 6, 5, 5] -> [Conv 1x1 ->] BatchNormalization -> Relu -> y.
Network bnRelu(bool afterConv = false) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(6), DimExpr(5), DimExpr(5)}}};
  g.initializers["gamma"] = randomTensor(DataType::kFloat32, {6}, 1, 0.5, 1.5);
  g.initializers["beta"] = randomTensor(DataType::kFloat32, {6}, 2);
  g.initializers["mean"] = randomTensor(DataType::kFloat32, {6}, 3);
  g.initializers["var"] = randomTensor(DataType::kFloat32, {6}, 4, 0.2, 2.0);
  g.initializers["w"] = randomTensor(DataType::kFloat32, {6, 6, 1, 1}, 5);
  std::string in = "x";
  if (afterConv) {
    g.nodes.push_back(makeNode("Conv", {"x", "w"}, {"c"}));
    in = "c";
  }
  Node bn = makeNode("BatchNormalization", {in, "gamma", "beta", "mean", "var"}, {"n"});
  bn.name = "norm1";
  g.nodes.push_back(withFloat(bn, "epsilon", 1e-3f));
  g.nodes.push_back(makeNode("Relu", {"n"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 6, 5, 5}, 9, -2, 2)}});
}

// The level-`level` pipeline on a copy; outputs compared with the original's.
Network optimized(const Network& original, int level, std::vector<PassApplication>* applied) {
  Network net = original;
  EXPECT_TRUE(runPasses(net, level, {}, applied).isOk());
  const auto expected = run(original);
  const auto actual = run(net);
  EXPECT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i)
    expectTensorNear(actual[i].tensor, expected[i].tensor, 1e-5, 1e-5);
  return net;
}

int countOp(const Network& net, const std::string& op) {
  int n = 0;
  for (const Node& node : net.graph.nodes) n += node.opType == op;
  return n;
}

TEST(BatchNormAsScaleShift, BnReluBecomesOnePointwiseChain) {
  std::vector<PassApplication> applied;
  const Network net = optimized(bnRelu(), 2, &applied);
  ASSERT_EQ(net.graph.nodes.size(), 1u);
  EXPECT_EQ(net.graph.nodes[0].opType, kPointwiseChainOp);
  EXPECT_EQ(net.graph.nodes[0].name, "PWN(norm1, norm1 (shift), y)")
      << "the BN's name stays on its layer";
  int rewrites = 0;
  for (const PassApplication& a : applied) rewrites += a.pass == "batch_norm_as_scale_shift";
  EXPECT_EQ(rewrites, 1);
  // The chain's constants: s = gamma / sqrt(var + eps) as [6, 1, 1].
  const Tensor* scale = nullptr;
  for (const std::string& in : net.graph.nodes[0].inputs)
    if (in.find("_scale") != std::string::npos) scale = &net.graph.initializers.at(in);
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->shape(), (Shape{6, 1, 1}));
}

TEST(BatchNormAsScaleShift, FoldsFirstAndLeavesWhatIsNotAnAffineMap) {
  std::vector<PassApplication> applied;
  // After a Conv: fold_batch_norm takes it (no Mul, no chain of it).
  Network folded = optimized(bnRelu(/*afterConv=*/true), 2, &applied);
  EXPECT_EQ(countOp(folded, "BatchNormalization"), 0);
  EXPECT_EQ(countOp(folded, "Mul"), 0);
  EXPECT_EQ(countOp(folded, kPointwiseChainOp), 0);
  // Level 1: the BN stays one kernel.
  EXPECT_EQ(countOp(optimized(bnRelu(), 1, &applied), "BatchNormalization"), 1);
  // Statistics computed at run time: not constants, nothing to fold.
  Network computed = bnRelu();
  Node mean = withInts(makeNode("ReduceMean", {"x"}, {"mean2"}), "axes", {0, 2, 3});
  computed.graph.nodes.insert(computed.graph.nodes.begin(), withInt(mean, "keepdims", 0));
  computed.graph.nodes[1].inputs[3] = "mean2";
  EXPECT_EQ(countOp(optimized(computed, 2, &applied), "BatchNormalization"), 1);
}

}  // namespace
}  // namespace kiln::test
