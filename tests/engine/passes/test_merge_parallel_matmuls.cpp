// merge_parallel_matmuls: Q, K and V projections of one input (biases on either side,
// one missing) become one GEMM with the concatenated weights and a Split, with the CPU
// reference's outputs unchanged. A projection read by an activation, a dynamic shape and
// a single GEMM stay.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "merge_parallel_matmuls";

struct ProjectionCase {
  bool symbolicBatch = false;
  bool activationOnV = false;  // V's projection read by a Relu instead of a head split
  int projections = 3;
};

// x [2, 5, 8] -> q = MatMul(x, Wq [8, 6]) + bq, k = MatMul(x, Wk [8, 6]) (no bias),
// v = bv + MatMul(x, Wv [8, 4]); each split into 2 heads ([2, 5, 2, D]) and transposed to
// [2, 2, 5, D], the graph's outputs.
Network projections(const ProjectionCase& c) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  const DimExpr batch = c.symbolicBatch ? DimExpr::symbol("N") : DimExpr(2);
  g.inputs = {{"x", DataType::kFloat32, true, {batch, DimExpr(5), DimExpr(8)}}};
  const char* names[] = {"q", "k", "v"};
  const int64_t widths[] = {6, 6, 4};
  for (int i = 0; i < c.projections; ++i) {
    const std::string p = names[i];
    g.initializers["w" + p] = randomTensor(DataType::kFloat32, {8, widths[i]}, 1 + i);
    g.initializers["b" + p] = randomTensor(DataType::kFloat32, {widths[i]}, 5 + i);
    g.initializers["heads" + p] = Tensor::int64Vector({0, 5, 2, widths[i] / 2});
    g.nodes.push_back(makeNode("MatMul", {"x", "w" + p}, {p + "_mm"}));
    std::string result = p + "_mm";
    if (p == "q") g.nodes.push_back(makeNode("Add", {result, "b" + p}, {p + "_biased"}));
    if (p == "v") g.nodes.push_back(makeNode("Add", {"b" + p, result}, {p + "_biased"}));
    if (p != "k") result = p + "_biased";
    if (p == "v" && c.activationOnV) {
      g.nodes.push_back(makeNode("Relu", {result}, {p + "_out"}));
    } else {
      g.nodes.push_back(makeNode("Reshape", {result, "heads" + p}, {p + "_heads"}));
      g.nodes.push_back(
          withInts(makeNode("Transpose", {p + "_heads"}, {p + "_out"}), "perm", {0, 2, 1, 3}));
    }
    g.outputs.push_back({p + "_out", DataType::kFloat32, false, {}});
  }
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 5, 8}, 9)}});
}

TEST(MergeParallelMatMuls, QkvProjectionsBecomeOneGemmAndASplit) {
  Network fused;
  // FusedMatMul (the merged GEMM with its bias), Split, and each head split's Reshape
  // and Transpose.
  auto applied = fuseAndCompareOutputs(kPass, run, projections({}), 8, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"q_mm", "k_mm", "v_mm"}));
  const Graph& g = fused.graph;
  ASSERT_EQ(g.nodes[0].opType, "FusedMatMul");
  EXPECT_EQ(g.initializers.at(g.nodes[0].inputs[1]).shape(), (Shape{8, 16}));
  ASSERT_EQ(g.nodes[1].opType, "Split");
  EXPECT_EQ(g.nodes[1].outputs, (std::vector<std::string>{"q_biased", "k_mm", "v_biased"}));
  EXPECT_EQ(g.initializers.at(g.nodes[1].inputs[1]).toInt64Vector(),
            (std::vector<int64_t>{6, 6, 4}));
  // The merged bias: K's part is zeros.
  const Tensor& bias = g.initializers.at(g.nodes[0].inputs[2]);
  ASSERT_EQ(bias.numel(), 16);
  for (int i = 6; i < 12; ++i) EXPECT_EQ(bias.data<float>()[i], 0.0f) << i;
  EXPECT_EQ(bias.data<float>()[0], g.initializers.at("bq").data<float>()[0]);
}

TEST(MergeParallelMatMuls, ActivationsDynamicShapesAndLoneGemmsStay) {
  ProjectionCase activation;  // Q and K still merge; V keeps its own GEMM for the Relu
  activation.activationOnV = true;
  auto applied = fuseAndCompareOutputs(kPass, run, projections(activation), 7);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"q_mm", "k_mm"}));

  ProjectionCase dynamic;
  dynamic.symbolicBatch = true;
  ProjectionCase lone;
  lone.projections = 1;
  for (const ProjectionCase& c : {dynamic, lone}) {
    Network net = projections(c);
    std::vector<PassApplication> records;
    ASSERT_TRUE(runPasses(net, 1, {}, &records).isOk());
    for (const PassApplication& a : records) EXPECT_NE(a.pass, kPass);
  }
}

}  // namespace
}  // namespace kiln::test
