// fuse_matmul_residual: a residual LayerNormalization (or RMSNormalization) whose one term is
// a GEMM becomes FusedMatMul(A, W, b, R) and the normalization of its output; graphs run
// with and without the pass on the CPU reference give the same outputs. Also the
// FusedMatMul residual input on the reference kernel, by hand.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fuse_matmul_residual";

Node layerNorm(std::vector<std::string> in, std::vector<std::string> out = {"y"}) {
  Node n = withInt(makeNode("LayerNormalization", std::move(in), std::move(out)), "axis", -1);
  return withFloat(std::move(n), "epsilon", 1e-3f);
}

// x [2, 5, 8] and r [2, 5, 16] inputs, w [8, 16], bias [16], gamma/beta [16]; `nodes` end
// in "y".
Network block(const std::vector<Node>& nodes, int opset = 17) {
  Network net;
  net.opsets[""] = opset;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(5), DimExpr(8)}},
              {"r", DataType::kFloat32, true, {DimExpr(2), DimExpr(5), DimExpr(16)}}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {8, 16}, 3);
  g.initializers["w2"] = randomTensor(DataType::kFloat32, {16, 16}, 9);
  g.initializers["bias"] = randomTensor(DataType::kFloat32, {16}, 4);
  g.initializers["gamma"] = randomTensor(DataType::kFloat32, {16}, 5, 0.5, 1.5);
  g.initializers["beta"] = randomTensor(DataType::kFloat32, {16}, 6);
  g.nodes = nodes;
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 5, 8}, 1, -2.0, 2.0)},
                              {"r", randomTensor(DataType::kFloat32, {2, 5, 16}, 2, -3.0, 3.0)}});
}

std::vector<PassApplication> fuseAndCompare(const Network& original, size_t expectedNodes,
                                            Network* fusedOut = nullptr) {
  return fuseAndCompareOutputs(kPass, run, original, expectedNodes, fusedOut);
}

// y = LayerNorm(MatMul(x, w) + bias + r): MatMul + Add(bias) + Add(r) + LayerNorm.
std::vector<Node> postNormBlock() {
  return {makeNode("MatMul", {"x", "w"}, {"p"}), makeNode("Add", {"p", "bias"}, {"pb"}),
          makeNode("Add", {"pb", "r"}, {"sum"}), layerNorm({"sum", "gamma", "beta"})};
}

const Node* nodeOf(const Network& net, const std::string& op) {
  for (const Node& n : net.graph.nodes)
    if (n.opType == op) return &n;
  return nullptr;
}

TEST(FuseMatMulResidual, PostNormResidualRidesTheGemm) {
  Network fused;
  const auto applied = fuseAndCompare(block(postNormBlock()), 2, &fused);
  ASSERT_EQ(applied.size(), 1u);
  const Node* gemm = nodeOf(fused, "FusedMatMul");
  const Node* norm = nodeOf(fused, "LayerNormalization");
  ASSERT_TRUE(gemm && norm);
  EXPECT_EQ(gemm->inputs.size(), 4u);
  EXPECT_EQ(gemm->inputs[3], "r");
  EXPECT_EQ(norm->inputs[0], gemm->outputs[0]);
  EXPECT_TRUE(norm->domain.empty());  // opset 17 has LayerNormalization
  EXPECT_EQ(norm->inputs.size(), 3u);
  EXPECT_EQ(norm->attrString(kFusionPassAttribute, ""), kPass);
  EXPECT_FLOAT_EQ(norm->attrFloat("epsilon", 0.f), 1e-3f);
}

TEST(FuseMatMulResidual, SumReadElsewhereIsTheGemmOutput) {
  // Pre-norm: the sum is the residual stream, read again (here: a graph output).
  Network net = block(postNormBlock());
  net.graph.outputs.push_back({"sum", DataType::kFloat32, false, {}});
  Network fused;
  ASSERT_EQ(fuseAndCompare(net, 2, &fused).size(), 1u);
  const Node* gemm = nodeOf(fused, "FusedMatMul");
  ASSERT_TRUE(gemm);
  EXPECT_EQ(gemm->outputs, std::vector<std::string>{"sum"});
  EXPECT_EQ(nodeOf(fused, "LayerNormalization")->inputs[0], "sum");
}

TEST(FuseMatMulResidual, TwoGemmTermsTheLaterTakesTheOther) {
  // sum = (x w + b) + (r w2 + b): both GEMMs could take the other term; the later does.
  Network both =
      block({makeNode("MatMul", {"x", "w"}, {"p"}), makeNode("Add", {"p", "bias"}, {"pb"}),
             makeNode("MatMul", {"r", "w2"}, {"q"}), makeNode("Add", {"q", "bias"}, {"qb"}),
             makeNode("Add", {"pb", "qb"}, {"sum"}), layerNorm({"sum", "gamma", "beta"})});
  Network fused;
  ASSERT_EQ(fuseAndCompare(both, 3, &fused).size(), 1u);
  ASSERT_EQ(fused.graph.nodes[1].opType, "FusedMatMul");
  EXPECT_EQ(fused.graph.nodes[0].inputs.size(), 3u);
  ASSERT_EQ(fused.graph.nodes[1].inputs.size(), 4u);
  EXPECT_EQ(fused.graph.nodes[1].inputs[0], "r");
  EXPECT_EQ(fused.graph.nodes[1].inputs[3], "pb");
  // h = x w + b read twice (a Relu and the sum): only the GEMM after the Relu takes a residual.
  Network shared =
      block({makeNode("MatMul", {"x", "w"}, {"p"}), makeNode("Add", {"p", "bias"}, {"h"}),
             makeNode("Relu", {"h"}, {"hr"}), makeNode("MatMul", {"hr", "w2"}, {"q"}),
             makeNode("Add", {"q", "bias"}, {"qb"}), makeNode("Add", {"qb", "h"}, {"sum"}),
             layerNorm({"sum", "gamma", "beta"})});
  ASSERT_EQ(fuseAndCompare(shared, 4, &fused).size(), 1u);
  int withResidual = 0;
  for (const Node& n : fused.graph.nodes)
    if (n.opType == "FusedMatMul" && n.inputs.size() == 4) {
      ++withResidual;
      EXPECT_EQ(n.inputs[0], "hr");
      EXPECT_EQ(n.inputs[3], "h");
    }
  EXPECT_EQ(withResidual, 1);
}

TEST(FuseMatMulResidual, RmsNormalizationKeepsRms) {
  Node rms = withInt(makeNode("RMSNormalization", {"sum", "gamma"}, {"y"}, 23), "axis", -1);
  rms = withFloat(std::move(rms), "epsilon", 1e-3f);
  Network net =
      block({makeNode("MatMul", {"x", "w"}, {"p"}, 23), makeNode("Add", {"p", "bias"}, {"pb"}, 23),
             makeNode("Add", {"r", "pb"}, {"sum"}, 23), rms},
            23);
  Network fused;
  ASSERT_EQ(fuseAndCompare(net, 2, &fused).size(), 1u);
  const Node* norm = nodeOf(fused, "RMSNormalization");
  ASSERT_TRUE(norm);
  EXPECT_EQ(norm->inputs.size(), 2u);
  EXPECT_EQ(nodeOf(fused, "FusedMatMul")->inputs[3], "r");
}

TEST(FuseMatMulResidual, OlderOpsetNormalizationIsKilns) {
  Network fused;
  ASSERT_EQ(fuseAndCompare(block(postNormBlock(), 13), 2, &fused).size(), 1u);
  EXPECT_EQ(nodeOf(fused, "LayerNormalization")->domain, kKilnDomain);
}

TEST(FuseMatMulResidual, WhatStaysAsItWas) {
  // An activation on the GEMM: the add is after it, not before.
  EXPECT_TRUE(
      fuseAndCompare(
          block({makeNode("MatMul", {"x", "w"}, {"p"}), makeNode("Add", {"p", "bias"}, {"pb"}),
                 makeNode("Relu", {"pb"}, {"a"}), makeNode("Add", {"a", "r"}, {"sum"}),
                 layerNorm({"sum", "gamma", "beta"})}),
          2)
          .empty());
  // The GEMM's output read elsewhere too (a graph output).
  Network shared = block(postNormBlock());
  shared.graph.outputs.push_back({"pb", DataType::kFloat32, false, {}});
  EXPECT_TRUE(fuseAndCompare(shared, 2).empty());
  // A broadcast term (a row of 16): no residual of Y's shape.
  Network row =
      block({makeNode("MatMul", {"x", "w"}, {"p"}), makeNode("Add", {"p", "bias"}, {"pb"}),
             makeNode("Add", {"pb", "gamma"}, {"sum"}), layerNorm({"sum", "gamma", "beta"})});
  EXPECT_TRUE(fuseAndCompare(row, 2).empty());
  // No GEMM term.
  EXPECT_TRUE(
      fuseAndCompare(
          block({makeNode("Add", {"r", "r"}, {"sum"}), layerNorm({"sum", "gamma", "beta"})}), 1)
          .empty());
}

// The reference kernel: Y = A B + bias + residual, before the activation.
TEST(FusedMatMulResidualOp, AddsTheResidualBeforeTheActivation) {
  auto out = OpTest("FusedMatMul", 1, kKilnDomain)
                 .attr("activation", std::string("relu"))
                 .input(floatTensor({2, 2}, {1.f, 2.f, 3.f, 4.f}))
                 .input(floatTensor({2, 2}, {1.f, 0.f, 0.f, 1.f}))
                 .input(floatTensor({2}, {0.5f, -1.f}))
                 .input(floatTensor({2, 2}, {-2.f, 10.f, 1.f, -4.f}))
                 .run();
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  // A B = A; + bias = [1.5, 1; 3.5, 3]; + residual = [-0.5, 11; 4.5, -1]; relu.
  expectTensorNear(out.value()[0], floatTensor({2, 2}, {0.f, 11.f, 4.5f, 0.f}), 0, 0);
  auto bad = OpTest("FusedMatMul", 1, kKilnDomain)
                 .input(floatTensor({2, 2}, {1.f, 2.f, 3.f, 4.f}))
                 .input(floatTensor({2, 2}, {1.f, 0.f, 0.f, 1.f}))
                 .input(floatTensor({2}, {0.5f, -1.f}))
                 .input(floatTensor({2}, {1.f, 1.f}))
                 .run();
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("residual"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace kiln::test
