// lift_flattened_head_attention: BLOOM's attention in code (the head split to [B, H, S, D], Q
// and V flattened to [B*H, S, D], K to [B*H, D, S]; scores = Q K^T * alpha + ALiBi [B*H, 1, S]
// * beta; viewed [B, H, S, S], the causal mask added, softmax; viewed [B*H, S, S] and
// multiplied by V; the heads merged) becomes one FusedAttention with the outputs of the
// original graph on the CPU reference. Without the bias (scale only) it fuses too; a context
// product whose probabilities another node also reads stays.
#include <gtest/gtest.h>

#include <string>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "lift_flattened_head_attention";
constexpr int64_t kB = 2, kH = 3, kS = 5, kD = 4;

struct Form {
  bool bias = true;          // the ALiBi term through baddbmm
  bool probsOutput = false;  // the probabilities are a graph output too
};

Network bloomAttention(const Form& f) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  // x [B, S, H, 3, D]: the fused QKV GEMM's output viewed per head.
  g.inputs = {{"x", DataType::kFloat32, true, constantDims({kB, kS, kH, 3, kD})},
              {"alibi", DataType::kFloat32, true, constantDims({kB * kH, 1, kS})},
              {"causal", DataType::kFloat32, true, constantDims({kB, 1, kS, kS})}};
  g.initializers["flat"] = Tensor::int64Vector({kB * kH, kS, kD});
  g.initializers["heads"] = Tensor::int64Vector({kB, kH, kS, kS});
  g.initializers["flat_scores"] = Tensor::int64Vector({kB * kH, kS, kS});
  g.initializers["context_heads"] = Tensor::int64Vector({kB, kH, kS, kD});
  g.initializers["merged"] = Tensor::int64Vector({kB, kS, kH * kD});
  g.initializers["alpha"] = Tensor::scalarFloat(0.5f);
  g.initializers["beta"] = Tensor::scalarFloat(1.f);
  const char* parts[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const std::string p = parts[i];
    g.initializers[p + "_index"] = Tensor::scalarInt64(i);
    g.nodes.push_back(withInt(makeNode("Gather", {"x", p + "_index"}, {p + "4"}), "axis", 3));
    g.nodes.push_back(withInts(makeNode("Transpose", {p + "4"}, {p + "h"}), "perm", {0, 2, 1, 3}));
    g.nodes.push_back(makeNode("Reshape", {p + "h", "flat"}, {p + "3"}));
  }
  g.nodes.push_back(withInts(makeNode("Transpose", {"k3"}, {"kt3"}), "perm", {0, 2, 1}));
  g.nodes.push_back(makeNode("MatMul", {"q3", "kt3"}, {"s3"}));
  g.nodes.push_back(makeNode("Mul", {"s3", "alpha"}, {"scaled3"}));
  std::string x3 = "scaled3";
  if (f.bias) {
    g.nodes.push_back(makeNode("Mul", {"alibi", "beta"}, {"bias3"}));
    g.nodes.push_back(makeNode("Add", {"scaled3", "bias3"}, {"biased3"}));
    x3 = "biased3";
  }
  g.nodes.push_back(makeNode("Reshape", {x3, "heads"}, {"l4"}));
  g.nodes.push_back(makeNode("Add", {"l4", "causal"}, {"masked4"}));
  g.nodes.push_back(withInt(makeNode("Softmax", {"masked4"}, {"p4"}), "axis", -1));
  g.nodes.push_back(makeNode("Reshape", {"p4", "flat_scores"}, {"p3"}));
  g.nodes.push_back(makeNode("MatMul", {"p3", "v3"}, {"c3"}));
  g.nodes.push_back(makeNode("Reshape", {"c3", "context_heads"}, {"c4"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"c4"}, {"ct"}), "perm", {0, 2, 1, 3}));
  g.nodes.push_back(makeNode("Reshape", {"ct", "merged"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  if (f.probsOutput) g.outputs.push_back({"p4", DataType::kFloat32, false, {}});
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, randomFloatInputs(net));
}

TEST(LiftFlattenedHeadAttention, BloomAttentionFuses) {
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias ? "ALiBi through baddbmm" : "scale only");
    Form form;
    form.bias = bias;
    Network fused;
    // The ALiBi view [B, H, 1, S] (its scale by 1 gone), the masks' sum, the attention (its
    // Q / K / V read through the packed head split's strides); the scale-only form: the
    // attention alone.
    const auto applied =
        fuseAndCompareOutputs(kPass, run, bloomAttention(form), bias ? 3 : 1, &fused);
    EXPECT_EQ(applied.size(), 1u);
    EXPECT_EQ(countOps(fused, "FusedAttention"), 1);
    EXPECT_EQ(countOps(fused, "Softmax"), 0);
  }
}

TEST(LiftFlattenedHeadAttention, ProbabilitiesReadElsewhereStay) {
  Form form;
  form.probsOutput = true;
  Network fused;
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, bloomAttention(form), 20, &fused).empty());
  EXPECT_EQ(countOps(fused, "FusedAttention"), 0);
}

}  // namespace
}  // namespace kiln::test
