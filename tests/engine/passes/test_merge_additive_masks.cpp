// merge_additive_masks: attention with two additive masks (MPNet: a relative position bias
// [1, H, S, S], then the padding mask [B, 1, 1, S]) becomes one FusedAttention per layer, the
// layers sharing one Add of the two masks; outputs stay the CPU reference's on the original
// graph. A sum read by something besides the softmax, and scores that are no MatMul, stay.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "merge_additive_masks";
constexpr int64_t kB = 2, kH = 3, kS = 5, kD = 4;

// Per layer l: scores = MatMul(q_l, Transpose(k_l)) / 2, + position bias, + padding mask, softmax,
// MatMul with v_l. `maskFirst`: the padding mask is the inner Add.
Network twoMaskGraph(int layers, bool maskFirst = false, bool extraReader = false) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs.push_back({"pos", DataType::kFloat32, true, constantDims({1, kH, kS, kS})});
  g.inputs.push_back({"pad", DataType::kFloat32, true, constantDims({kB, 1, 1, kS})});
  g.initializers["two"] = Tensor::scalarFloat(2.f);
  for (int l = 0; l < layers; ++l) {
    const std::string n = std::to_string(l);
    g.inputs.push_back({"q" + n, DataType::kFloat32, true, constantDims({kB, kH, kS, kD})});
    g.inputs.push_back({"k" + n, DataType::kFloat32, true, constantDims({kB, kH, kS, kD})});
    g.inputs.push_back({"v" + n, DataType::kFloat32, true, constantDims({kB, kH, kS, kD})});
    g.nodes.push_back(withInts(makeNode("Transpose", {"k" + n}, {"kt" + n}), "perm", {0, 1, 3, 2}));
    g.nodes.push_back(makeNode("MatMul", {"q" + n, "kt" + n}, {"s" + n}));
    g.nodes.push_back(makeNode("Div", {"s" + n, "two"}, {"scaled" + n}));
    g.nodes.push_back(makeNode("Add", {"scaled" + n, maskFirst ? "pad" : "pos"}, {"a" + n}));
    g.nodes.push_back(makeNode("Add", {maskFirst ? "pos" : "pad", "a" + n}, {"b" + n}));
    g.nodes.push_back(withInt(makeNode("Softmax", {"b" + n}, {"p" + n}), "axis", -1));
    g.nodes.push_back(makeNode("MatMul", {"p" + n, "v" + n}, {"y" + n}));
    g.outputs.push_back({"y" + n, DataType::kFloat32, false, {}});
  }
  if (extraReader) g.outputs.push_back({"a0", DataType::kFloat32, false, {}});
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, randomFloatInputs(net));
}

TEST(MergeAdditiveMasks, TwoMasksFuseAsOneSharedByTheLayers) {
  for (bool maskFirst : {false, true}) {
    SCOPED_TRACE(maskFirst ? "padding mask first" : "position bias first");
    Network fused;
    // One Add of the two masks, one FusedAttention per layer.
    auto applied = fuseAndCompareOutputs(kPass, run, twoMaskGraph(2, maskFirst), 3, &fused);
    EXPECT_EQ(applied.size(), 2u);
    EXPECT_EQ(countOps(fused, "FusedAttention"), 2);
    EXPECT_EQ(countOps(fused, "Add"), 1);
    EXPECT_EQ(countOps(fused, "Softmax"), 0);
  }
}

TEST(MergeAdditiveMasks, SumsOthersReadStay) {
  // The inner sum is also a graph output: the pair stays, the attention unfused.
  Network fused;
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, twoMaskGraph(1, false, true), 6, &fused).empty());
  EXPECT_EQ(countOps(fused, "FusedAttention"), 0);
}

}  // namespace
}  // namespace kiln::test
