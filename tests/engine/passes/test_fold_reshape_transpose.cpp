// fold_reshape_transpose: Reshape -> Transpose -> Reshape that is a transpose of the
// input's axes (the dynamo exporter's K^T, also with batch 1) becomes one Transpose with
// the same outputs; a chain whose second Reshape regroups the axes differently stays.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fold_reshape_transpose";

// x [shape] -> Reshape(merged) -> Transpose(perm) -> Reshape(split) -> Relu -> y.
Network chain(const Shape& shape, const std::vector<int64_t>& merged,
              const std::vector<int64_t>& perm, const std::vector<int64_t>& split) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  SymbolicShape dims;
  for (int64_t d : shape) dims.push_back(DimExpr(d));
  g.inputs = {{"x", DataType::kFloat32, true, dims}};
  g.initializers["merged"] = int64Tensor({static_cast<int64_t>(merged.size())}, merged);
  g.initializers["split"] = int64Tensor({static_cast<int64_t>(split.size())}, split);
  g.nodes.push_back(makeNode("Reshape", {"x", "merged"}, {"m"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"m"}, {"t"}), "perm", perm));
  g.nodes.push_back(makeNode("Reshape", {"t", "split"}, {"s"}));
  g.nodes.push_back(makeNode("Relu", {"s"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

NetworkRunner runner(const Shape& x) {
  return [x](const Network& net) {
    return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, x, 3)}});
  };
}

TEST(FoldReshapeTranspose, DynamoKeyTransposeIsOneTranspose) {
  for (int64_t batch : {2, 1}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const Shape x = {batch, 3, 5, 4};  // [B, H, S, D] -> [B*H, S, D] -> (0,2,1) -> [B, H, D, S]
    Network fused;
    auto applied = fuseAndCompareOutputs(
        kPass, runner(x), chain(x, {batch * 3, 5, 4}, {0, 2, 1}, {batch, 3, 4, 5}), 2, &fused);
    ASSERT_EQ(applied.size(), 1u);
    ASSERT_EQ(fused.graph.nodes[0].opType, "Transpose");
    EXPECT_EQ(fused.graph.nodes[0].attrInts("perm"), (std::vector<int64_t>{0, 1, 3, 2}));
  }
}

TEST(FoldReshapeTranspose, GroupsMovedWhole) {
  // [2, 3, 4, 5] -> [6, 20] -> (1, 0) -> [20, 6] -> [4, 5, 2, 3]: P = (2, 3, 0, 1).
  Network fused;
  auto applied = fuseAndCompareOutputs(
      kPass, runner({2, 3, 4, 5}), chain({2, 3, 4, 5}, {6, 20}, {1, 0}, {4, 5, 2, 3}), 2, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(fused.graph.nodes[0].attrInts("perm"), (std::vector<int64_t>{2, 3, 0, 1}));
}

TEST(FoldReshapeTranspose, OtherRegroupingsStay) {
  // The second Reshape splits [20, 6] as [2, 10, 6]: not x's axes, and rank 3.
  auto applied = fuseAndCompareOutputs(kPass, runner({2, 3, 4, 5}),
                                       chain({2, 3, 4, 5}, {6, 20}, {1, 0}, {2, 10, 6}), 4);
  EXPECT_TRUE(applied.empty());
  // Same rank, but [20, 6] split as [5, 4, 3, 2]: the group (4, 5) would have to reverse.
  applied = fuseAndCompareOutputs(kPass, runner({2, 3, 4, 5}),
                                  chain({2, 3, 4, 5}, {6, 20}, {1, 0}, {5, 4, 3, 2}), 4);
  EXPECT_TRUE(applied.empty());
}

}  // namespace
}  // namespace kiln::test
