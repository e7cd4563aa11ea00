// fuse_matmul_residual: a residual Add after a GEMM becomes the FusedMatMul's residual
// input, and the graph computes what it did (random non-zero data, the reference on both);
// the Adds it must leave alone stay. fuse_prenorm_residual: the same where a norm and
// another node read the sum, before fuse_add_layer_norm would take the Add.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

// x [2, 5, 8] -> MatMul(W [8, 8]) -> Add(b [8]) -> "mm_b"; then `tail`; output "y".
// Extra graph inputs: "z" [2, 5, 8] and "zrow" [1, 5, 8].
Network residualNetwork(const std::vector<Node>& tail) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  const std::vector<DimExpr> full = {DimExpr(2), DimExpr(5), DimExpr(8)};
  g.inputs = {{"x", DataType::kFloat32, true, full},
              {"z", DataType::kFloat32, true, full},
              {"zrow", DataType::kFloat32, true, {DimExpr(1), DimExpr(5), DimExpr(8)}}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {8, 8}, 11);
  g.initializers["b"] = randomTensor(DataType::kFloat32, {8}, 12);
  g.initializers["gamma"] = randomTensor(DataType::kFloat32, {8}, 13);
  g.initializers["beta"] = randomTensor(DataType::kFloat32, {8}, 14);
  g.nodes = {makeNode("MatMul", {"x", "w"}, {"mm"}), makeNode("Add", {"mm", "b"}, {"mm_b"})};
  for (const Node& n : tail) g.nodes.push_back(n);
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::map<std::string, Tensor> feeds() {
  return {{"x", randomTensor(DataType::kFloat32, {2, 5, 8}, 21)},
          {"z", randomTensor(DataType::kFloat32, {2, 5, 8}, 22)},
          {"zrow", randomTensor(DataType::kFloat32, {1, 5, 8}, 23)}};
}

Tensor run(const Network& net) {
  std::vector<NamedTensor> out;
  Status s = ReferenceBackend(net).run(feeds(), &out);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return out.empty() ? Tensor() : out[0].tensor;
}

// The pipeline at level 1 (no pointwise grouping); checks the outputs against the original
// graph and returns the rewritten network.
Network fuseAndCompare(const Network& original) {
  Network fused = original;
  std::vector<PassApplication> applied;
  Status s = runPasses(fused, 1, {}, &applied);
  EXPECT_TRUE(s.isOk()) << s.toString();
  expectTensorNear(run(fused), run(original), 1e-5, 1e-5);
  return fused;
}

TEST(FuseMatMulResidual, TheAddAfterTheGemmIsItsResidualInEitherOrder) {
  for (bool productFirst : {true, false}) {
    SCOPED_TRACE(productFirst);
    const Node add = productFirst ? makeNode("Add", {"mm_b", "z"}, {"y"})
                                  : makeNode("Add", {"z", "mm_b"}, {"y"});
    const Network fused = fuseAndCompare(residualNetwork({add}));
    ASSERT_EQ(fused.graph.nodes.size(), 1u);
    const Node& gemm = fused.graph.nodes[0];
    EXPECT_EQ(gemm.opType, "FusedMatMul");
    EXPECT_EQ(gemm.inputs.size(), 4u);
    EXPECT_EQ(gemm.inputs[3], "z");
    EXPECT_EQ(gemm.outputs, (std::vector<std::string>{"y"}));
    EXPECT_EQ(gemm.attrString(kFusionPassAttribute, ""), "fuse_matmul_residual");
  }
}

TEST(FuseMatMulResidual, AResidualOfTheInputItselfAsInATransformerBlock) {
  // y = x + (x W + b): Z is the GEMM's own input A.
  const Network fused = fuseAndCompare(residualNetwork({makeNode("Add", {"x", "mm_b"}, {"y"})}));
  ASSERT_EQ(fused.graph.nodes.size(), 1u);
  EXPECT_EQ(fused.graph.nodes[0].inputs[3], "x");
}

TEST(FuseMatMulResidual, LeavesTheAddsItMustNotTake) {
  // A broadcast residual ([1, 5, 8] over [2, 5, 8]): cuBLASLt's C has D's shape.
  Network broadcast = fuseAndCompare(residualNetwork({makeNode("Add", {"mm_b", "zrow"}, {"y"})}));
  EXPECT_EQ(countOps(broadcast, "Add"), 1);
  // An activation between the GEMM and the Add: the residual would go inside it.
  Network activated = fuseAndCompare(
      residualNetwork({makeNode("Relu", {"mm_b"}, {"r"}), makeNode("Add", {"r", "z"}, {"y"})}));
  EXPECT_EQ(countOps(activated, "Add"), 1);
  // The product read elsewhere too: it must still exist.
  Network shared = fuseAndCompare(residualNetwork(
      {makeNode("Add", {"mm_b", "z"}, {"s"}), makeNode("Mul", {"mm_b", "s"}, {"y"})}));
  EXPECT_EQ(countOps(shared, "Add"), 1);
  // A LayerNormalization after the Add: fuse_add_layer_norm takes the Add.
  const Node norm = makeNode("LayerNormalization", {"s", "gamma", "beta"}, {"y"});  // axis -1
  Network normed = fuseAndCompare(residualNetwork({makeNode("Add", {"mm_b", "z"}, {"s"}), norm}));
  EXPECT_EQ(countOps(normed, "AddLayerNorm"), 1);
  EXPECT_EQ(countOps(normed, "FusedMatMul"), 1);
  for (const Node& node : normed.graph.nodes)
    if (node.opType == "FusedMatMul") EXPECT_EQ(node.inputs.size(), 3u);
}

TEST(FusePrenormResidual, ASumTheNormAndTheNextResidualReadComesFromTheGemm) {
  // s = (x W + b) + z; y = s + Relu(LayerNorm(s)): the pre-norm stream, a block's branch
  // (here a Relu) between the norm and the next residual Add.
  const Node norm = makeNode("LayerNormalization", {"s", "gamma", "beta"}, {"n"});
  const Network fused = fuseAndCompare(
      residualNetwork({makeNode("Add", {"mm_b", "z"}, {"s"}), norm, makeNode("Relu", {"n"}, {"r"}),
                       makeNode("Add", {"s", "r"}, {"y"})}));
  EXPECT_EQ(countOps(fused, "AddLayerNorm"), 0);
  EXPECT_EQ(countOps(fused, "LayerNormalization"), 1);
  ASSERT_EQ(countOps(fused, "FusedMatMul"), 1);
  for (const Node& node : fused.graph.nodes) {
    if (node.opType != "FusedMatMul") continue;
    ASSERT_EQ(node.inputs.size(), 4u);
    EXPECT_EQ(node.inputs[3], "z");
    EXPECT_EQ(node.attrString(kFusionPassAttribute, ""), "fuse_prenorm_residual");
  }
  // The sum a graph output as well as the norm's input: the same.
  Network asOutput =
      residualNetwork({makeNode("Add", {"mm_b", "z"}, {"y"}),
                       makeNode("LayerNormalization", {"y", "gamma", "beta"}, {"n"})});
  asOutput.graph.outputs.push_back({"n", DataType::kFloat32, false, {}});
  EXPECT_EQ(countOps(fuseAndCompare(asOutput), "AddLayerNorm"), 0);
}

TEST(FusePrenormResidual, LeavesAPostNormSumAndQuantizedResidualsToAddLayerNorm) {
  // The norm alone reads the sum (BERT's post-norm): AddLayerNorm takes it as before.
  const Network postNorm = fuseAndCompare(
      residualNetwork({makeNode("Add", {"mm_b", "z"}, {"s"}),
                       makeNode("LayerNormalization", {"s", "gamma", "beta"}, {"y"})}));
  EXPECT_EQ(countOps(postNorm, "AddLayerNorm"), 1);
  // A residual from a DequantizeLinear: left as the export wrote it, for fold_qdq.
  Network quantized =
      residualNetwork({makeNode("DequantizeLinear", {"zq", "zscale"}, {"zdq"}),
                       makeNode("Add", {"mm_b", "zdq"}, {"s"}),
                       makeNode("LayerNormalization", {"s", "gamma", "beta"}, {"n"}),
                       makeNode("Relu", {"n"}, {"r"}), makeNode("Add", {"s", "r"}, {"y"})});
  quantized.graph.initializers["zq"] = randomTensor(DataType::kInt8, {2, 5, 8}, 15);
  quantized.graph.initializers["zscale"] = Tensor::scalarFloat(0.05f);
  EXPECT_EQ(countOps(fuseAndCompare(quantized), "AddLayerNorm"), 1);
}

}  // namespace
}  // namespace kiln::test
