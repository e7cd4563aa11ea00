// lift_transposed_attention: LeViT's conv-mode attention in code (q, k, v [B, H, d, N] splits
// of one tensor; scores = q^T k * scale + a per-head position bias [H, N, N]; softmax; y = v
// P^T [B, H, dv, N]) becomes one FusedAttention with the outputs of the original graph on the
// CPU reference (K's and V's transposes and Y's copies around it), at a query count apart from
// the key count (cross attention, LeViT's downsampling blocks) too. Probabilities another node
// also reads keep the block as it is, and so does a value product whose probabilities are not
// transposed (fuse_attention's own form, left to it).
#include <gtest/gtest.h>

#include <string>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "lift_transposed_attention";
constexpr int64_t kB = 2, kH = 3, kD = 4, kDv = 8;

struct Form {
  int64_t queries = 6, keys = 6;
  bool probsOutput = false;  // the probabilities are a graph output too
};

Network convModeAttention(const Form& f) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"q", DataType::kFloat32, true, constantDims({kB, kH, kD, f.queries})},
              {"k", DataType::kFloat32, true, constantDims({kB, kH, kD, f.keys})},
              {"v", DataType::kFloat32, true, constantDims({kB, kH, kDv, f.keys})},
              {"bias", DataType::kFloat32, true, constantDims({kH, f.queries, f.keys})}};
  g.initializers["scale"] = Tensor::scalarFloat(0.5f);
  g.nodes.push_back(withInts(makeNode("Transpose", {"q"}, {"qt"}), "perm", {0, 1, 3, 2}));
  g.nodes.push_back(makeNode("MatMul", {"qt", "k"}, {"s"}));
  g.nodes.push_back(makeNode("Mul", {"s", "scale"}, {"scaled"}));
  g.nodes.push_back(makeNode("Add", {"scaled", "bias"}, {"biased"}));
  g.nodes.push_back(withInt(makeNode("Softmax", {"biased"}, {"p"}), "axis", -1));
  g.nodes.push_back(withInts(makeNode("Transpose", {"p"}, {"pt"}), "perm", {0, 1, 3, 2}));
  g.nodes.push_back(makeNode("MatMul", {"v", "pt"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  if (f.probsOutput) g.outputs.push_back({"p", DataType::kFloat32, false, {}});
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, randomFloatInputs(net));
}

TEST(LiftTransposedAttention, ConvModeAttentionFuses) {
  for (int64_t queries : {6, 3}) {
    SCOPED_TRACE("queries " + std::to_string(queries));
    Form form;
    form.queries = queries;
    Network fused;
    // Q's, K's and V's transposes, the attention, Y's transpose.
    const auto applied = fuseAndCompareOutputs(kPass, run, convModeAttention(form), 5, &fused);
    EXPECT_EQ(applied.size(), 1u);
    EXPECT_EQ(countOps(fused, "FusedAttention"), 1);
    EXPECT_EQ(countOps(fused, "Softmax"), 0);
    EXPECT_EQ(countOps(fused, "MatMul"), 0);
  }
}

TEST(LiftTransposedAttention, ProbabilitiesReadElsewhereStay) {
  Form form;
  form.probsOutput = true;
  Network fused;
  // The scale, the bias and the softmax become one ScaledMaskedSoftmax; the products stay.
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, convModeAttention(form), 5, &fused).empty());
  EXPECT_EQ(countOps(fused, "MatMul"), 2);
  EXPECT_EQ(countOps(fused, "FusedAttention"), 0);
}

}  // namespace
}  // namespace kiln::test
