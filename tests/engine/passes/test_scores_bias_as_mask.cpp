// scores_bias_as_mask: attention scores viewed [B, H, qh, qw, kh, kw], biased by MViTv2's
// decomposed relative positions (rel_h [.., kh, 1] and rel_w [.., 1, kw]) and viewed back become
// the scores plus one mask, which the attention fusion then takes (one FusedAttention); the
// outputs stay the CPU reference's. Biases whose sum leaves a dim of the view at 1, or a view
// read elsewhere too, stay.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "scores_bias_as_mask";

struct BiasCase {
  Shape relH{2, 2, 3, 4, 2, 1};  // [B, H, qh, qw, kh, 1]
  Shape relW{2, 2, 3, 4, 1, 3};  // [B, H, qh, qw, 1, kw]
  bool tapView = false;          // the biased view is a graph output too
};

// q [2, 2, 12, 8], k [2, 2, 6, 8], v [2, 2, 6, 8]: y = Softmax(Reshape(Reshape(q * s @ k^T,
// [2, 2, 3, 4, 2, 3]) + rel_h + rel_w, [2, 2, 12, 6])) @ v.
Network biasedAttention(const BiasCase& c) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"q", DataType::kFloat32, true, constantDims({2, 2, 12, 8})},
              {"k", DataType::kFloat32, true, constantDims({2, 2, 6, 8})},
              {"v", DataType::kFloat32, true, constantDims({2, 2, 6, 8})},
              {"rel_h", DataType::kFloat32, true, constantDims(c.relH)},
              {"rel_w", DataType::kFloat32, true, constantDims(c.relW)}};
  g.initializers["scale"] = floatTensor({}, {0.35f});
  g.initializers["view"] = int64Tensor({6}, {2, 2, 3, 4, 2, 3});
  g.initializers["back"] = int64Tensor({4}, {2, 2, 12, 6});
  g.nodes = {makeNode("Mul", {"q", "scale"}, {"qs"}),
             withInts(makeNode("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2}),
             makeNode("MatMul", {"qs", "kt"}, {"s"}),
             makeNode("Reshape", {"s", "view"}, {"s6"}),
             makeNode("Add", {"s6", "rel_h"}, {"b1"}),
             makeNode("Add", {"b1", "rel_w"}, {"b2"}),
             makeNode("Reshape", {"b2", "back"}, {"s4"}),
             withInt(makeNode("Softmax", {"s4"}, {"p"}), "axis", -1),
             makeNode("MatMul", {"p", "v"}, {"y"})};
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  if (c.tapView) g.outputs.push_back({"b1", DataType::kFloat32, false, {}});
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, randomFloatInputs(net));
}

TEST(ScoresBiasAsMask, DecomposedRelativePositionsBecomeOneMask) {
  Network fused;
  // The biases' Add, the mask's Reshape and one FusedAttention.
  auto applied = fuseAndCompareOutputs(kPass, run, biasedAttention({}), 3, &fused);
  EXPECT_EQ(applied.size(), 1u);
  EXPECT_EQ(countOps(fused, "FusedAttention"), 1);
  EXPECT_EQ(countOps(fused, "Softmax"), 0);
}

TEST(ScoresBiasAsMask, BiasesThatDoNotFillTheViewStay) {
  // rel_h alone twice ([.., kh, 1] both): their sum leaves kw at 1, not a mask of the scores.
  BiasCase narrow;
  narrow.relW = narrow.relH;
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, biasedAttention(narrow), 9).empty());
  // The first biased view is read elsewhere too.
  BiasCase tapped;
  tapped.tapView = true;
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, biasedAttention(tapped), 9).empty());
}

}  // namespace
}  // namespace kiln::test
