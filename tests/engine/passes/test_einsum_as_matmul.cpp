// einsum_as_matmul: a two-input Einsum becomes Transposes / Reshapes around one batched MatMul
// (MViTv2's relative positions, attention written as an einsum, an outer product, an ellipsis
// batch, an output in another order); the outputs stay the CPU reference's Einsum. An equation
// that sums a label within one input, repeats a label in a term or broadcasts a size-1 label
// stays an Einsum.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "einsum_as_matmul";

// y = Einsum(a, b) with a a graph input and b an input too or (constantB) a weight.
Network einsum(const std::string& equation, const Shape& a, const Shape& b, bool constantB) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"a", DataType::kFloat32, true, constantDims(a)}};
  if (constantB)
    g.initializers["b"] = randomTensor(DataType::kFloat32, b, 21);
  else
    g.inputs.push_back({"b", DataType::kFloat32, true, constantDims(b)});
  g.nodes.push_back(withString(makeNode("Einsum", {"a", "b"}, {"y"}), "equation", equation));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, randomFloatInputs(net));
}

struct Rewritten {
  const char* equation;
  Shape a, b;
  bool constantB;
  size_t nodes;  // after the level-1 pipeline
  int transposes;
};

TEST(EinsumAsMatMul, BecomesOneBatchedMatMul) {
  const Rewritten cases[] = {
      // MViTv2: batch h, A's own b, y, w, contracted c, B's own k. A -> [h, b, y, w, c] ->
      // [h, 30, 6]; the constant B is stored as [h, c, k]; the product viewed
      // [h, b, y, w, k] and moved back to b, y, h, w, k.
      {"byhwc,hkc->byhwk", {2, 3, 4, 5, 6}, {4, 7, 6}, true, 5, 2},
      // attention scores: batch b, h; K^T the only copy; no Reshape at all.
      {"bhid,bhjd->bhij", {2, 3, 5, 8}, {2, 3, 7, 8}, false, 2, 1},
      // the value product: nothing to move.
      {"bhij,bhjd->bhid", {2, 3, 5, 7}, {2, 3, 7, 8}, false, 1, 0},
      // an outer product: [i, 1] x [1, j].
      {"i,j->ij", {5}, {7}, false, 3, 0},
      // the output in another order: one Transpose after the MatMul.
      {"ij,jk->ki", {5, 6}, {6, 7}, false, 2, 1},
      // a dot product: a scalar output, [1, 5] x [5, 1] viewed [].
      {"i,i->", {5}, {5}, false, 4, 0},
      // "..." in A alone: its dims are A's rows, viewed [24, 5] and back.
      {"...ij,jk->...ik", {2, 3, 4, 5}, {5, 6}, false, 3, 0},
      // an ellipsis batch of two dims and two contracted labels.
      {"...icd,...jcd->...ij", {2, 3, 4, 5, 6}, {2, 3, 7, 5, 6}, false, 4, 1},
  };
  for (const Rewritten& c : cases) {
    SCOPED_TRACE(c.equation);
    Network fused;
    auto applied = fuseAndCompareOutputs(kPass, run, einsum(c.equation, c.a, c.b, c.constantB),
                                         c.nodes, &fused);
    EXPECT_EQ(applied.size(), 1u);
    EXPECT_EQ(countOps(fused, "Einsum"), 0);
    EXPECT_EQ(countOps(fused, "MatMul"), 1);
    EXPECT_EQ(countOps(fused, "Transpose"), c.transposes);
  }
}

TEST(EinsumAsMatMul, EquationsItCannotWriteStay) {
  struct Kept {
    const char* equation;
    Shape a, b;
  };
  const Kept cases[] = {
      {"ij,jk->i", {5, 6}, {6, 7}},            // k summed within B alone
      {"ii,ij->ij", {5, 5}, {5, 7}},           // a repeated label (A's diagonal)
      {"bij,bjk->bik", {1, 5, 6}, {3, 6, 7}},  // b broadcast from size 1
  };
  for (const Kept& c : cases) {
    SCOPED_TRACE(c.equation);
    EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, einsum(c.equation, c.a, c.b, false), 1).empty());
  }
  // A symbolic batch (no fixed profile): the views' sizes are unknown. Only the pipeline runs.
  Network symbolic = einsum("bij,bjk->bik", {2, 5, 6}, {2, 6, 7}, false);
  for (ValueInfo& in : symbolic.graph.inputs) in.shape[0] = DimExpr::symbol("batch");
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(symbolic, 1, {}, &applied).isOk());
  EXPECT_EQ(countOps(symbolic, "Einsum"), 1);
}

}  // namespace
}  // namespace kiln::test
