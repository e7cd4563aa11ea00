// fold_shift_into_matmul: a constant row added to a GEMM's input moves into its bias (the bias
// Add after it, or a new Add the GEMM fusion then takes); the graph computes what it did on
// random non-zero data (the CPU reference). A shift that is not one value per input feature,
// one that broadcasts the input up, or a sum read elsewhere keeps the Add.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fold_shift_into_matmul";

// x [xDims] -> Add(c) (c first when `shiftFirst`) -> MatMul(W [8, 6]) -> [Add(b [6])] -> "y".
Network shiftNetwork(const std::vector<DimExpr>& xDims, const Tensor& c, bool withBias,
                     bool shiftFirst = false) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, xDims}};
  g.initializers["c"] = c;
  g.initializers["w"] = randomTensor(DataType::kFloat32, {8, 6}, 31);
  g.initializers["b"] = randomTensor(DataType::kFloat32, {6}, 32);
  g.nodes.push_back(shiftFirst ? makeNode("Add", {"c", "x"}, {"shifted"})
                               : makeNode("Add", {"x", "c"}, {"shifted"}));
  g.nodes.push_back(makeNode("MatMul", {"shifted", "w"}, {withBias ? "mm" : "y"}));
  if (withBias) g.nodes.push_back(makeNode("Add", {"mm", "b"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

NetworkRunner runWith(const Shape& shape) {
  return [shape](const Network& net) {
    return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, shape, 33, -2.0, 2.0)}});
  };
}

std::vector<DimExpr> dims(const Shape& s) {
  std::vector<DimExpr> out;
  for (int64_t d : s) out.push_back(DimExpr(d));
  return out;
}

TEST(FoldShiftIntoMatMul, TheShiftBecomesTheBias) {
  // ResMLP's affine shift before fc1: [2, 5, 8] + beta [8], then Linear(8 -> 6) with its bias.
  Network fused;
  auto applied = fuseAndCompareOutputs(
      kPass, runWith({2, 5, 8}),
      shiftNetwork(dims({2, 5, 8}), randomTensor(DataType::kFloat32, {8}, 34), true), 1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(countOps(fused, "FusedMatMul"), 1);  // the GEMM with the shifted bias, nothing else
  // No bias of its own, the shift [1, 1, 8] first: a new bias Add, taken by the GEMM fusion.
  applied = fuseAndCompareOutputs(
      kPass, runWith({2, 5, 8}),
      shiftNetwork(dims({2, 5, 8}), randomTensor(DataType::kFloat32, {1, 1, 8}, 35), false, true),
      1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(countOps(fused, "Add"), 0);
}

TEST(FoldShiftIntoMatMul, ShiftsThatAreNoRowStay) {
  const std::vector<Network> nets = {
      // one value per row, not per feature
      shiftNetwork(dims({2, 5, 8}), randomTensor(DataType::kFloat32, {5, 1}, 36), true),
      // a shift that broadcasts the input up ([5, 8] + [2, 5, 8])
      shiftNetwork(dims({5, 8}), randomTensor(DataType::kFloat32, {2, 5, 8}, 37), true)};
  for (const Network& net : nets) {
    Network copy = net;
    std::vector<PassApplication> records;
    ASSERT_TRUE(runPasses(copy, 1, {}, &records).isOk());
    for (const PassApplication& r : records) EXPECT_NE(r.pass, kPass);
  }
  // The sum read elsewhere too (a graph output): it must still exist.
  Network shared = shiftNetwork(dims({2, 5, 8}), randomTensor(DataType::kFloat32, {8}, 38), true);
  shared.graph.outputs.push_back({"shifted", DataType::kFloat32, false, {}});
  std::vector<PassApplication> records;
  ASSERT_TRUE(runPasses(shared, 1, {}, &records).isOk());
  for (const PassApplication& r : records) EXPECT_NE(r.pass, kPass);
}

}  // namespace
}  // namespace kiln::test
