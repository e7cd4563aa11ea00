// drop_softmax_invariant_add: a constant that is the same along a softmax's axes, added to its
// input, is removed; the graph computes what it did (random non-zero data on the CPU
// reference), in either input order, before a Softmax or a LogSoftmax, through Transposes, and
// over the several axes an old-opset softmax normalizes. A constant that varies along the
// softmax's axes, a non-finite or a large one, and an Add read elsewhere keep the Add.
#include <gtest/gtest.h>

#include <limits>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "drop_softmax_invariant_add";

// x [2, 5, 6, 4] -> Add(c) (c first when `constantFirst`) -> Transpose(perm) (when given) ->
// `op`(axis) -> "y".
Network softmaxNetwork(const Tensor& c, const std::vector<int64_t>& perm, int64_t axis,
                       int opset = 17, const char* op = "Softmax", bool constantFirst = false) {
  Network net;
  net.opsets[""] = opset;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(5), DimExpr(6), DimExpr(4)}}};
  g.initializers["c"] = c;
  g.nodes.push_back(constantFirst ? makeNode("Add", {"c", "x"}, {"s"})
                                  : makeNode("Add", {"x", "c"}, {"s"}));
  std::string in = "s";
  if (!perm.empty()) {
    g.nodes.push_back(withInts(makeNode("Transpose", {"s"}, {"t"}), "perm", perm));
    in = "t";
  }
  g.nodes.push_back(withInt(makeNode(op, {in}, {"y"}), "axis", axis));
  for (Node& n : g.nodes) n.opset = opset;
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

NetworkRunner runner() {
  return [](const Network& net) {
    return runOnReference(net,
                          {{"x", randomTensor(DataType::kFloat32, {2, 5, 6, 4}, 7, -3.0, 3.0)}});
  };
}

TEST(DropSoftmaxInvariantAdd, CaitsHeadBiasBeforeTheSoftmaxGoes) {
  // Scores [B, N, N, H] with a bias per head, moved to [B, H, N, N] and normalized over the keys.
  Network fused;
  const auto applied = fuseAndCompareOutputs(
      kPass, runner(), softmaxNetwork(randomTensor(DataType::kFloat32, {4}, 3), {0, 3, 1, 2}, -1),
      2, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(countOps(fused, "Add"), 0);
  // No Transpose: a constant per row [5, 6, 1] along the last axis.
  fuseAndCompareOutputs(kPass, runner(),
                        softmaxNetwork(randomTensor(DataType::kFloat32, {5, 6, 1}, 4), {}, 3), 1,
                        &fused);
  EXPECT_EQ(countOps(fused, "Add"), 0);
  // The constant first, before a LogSoftmax.
  fuseAndCompareOutputs(kPass, runner(),
                        softmaxNetwork(randomTensor(DataType::kFloat32, {4}, 8), {0, 3, 1, 2}, -1,
                                       17, "LogSoftmax", true),
                        2, &fused);
  EXPECT_EQ(countOps(fused, "Add"), 0);
  // Opset 11: the softmax at axis 2 normalizes axes 2 and 3; a constant per [.., 5, 1, 1].
  fuseAndCompareOutputs(kPass, runner(),
                        softmaxNetwork(randomTensor(DataType::kFloat32, {5, 1, 1}, 9), {}, 2, 11),
                        1, &fused);
  EXPECT_EQ(countOps(fused, "Add"), 0);
}

TEST(DropSoftmaxInvariantAdd, AddsThatChangeTheSoftmaxStay) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<Network> nets = {
      // varies along the softmax's axis (the last of [B, H, N, N] is the Add's axis 2)
      softmaxNetwork(randomTensor(DataType::kFloat32, {6, 1}, 5), {0, 3, 1, 2}, -1),
      // a non-finite constant
      softmaxNetwork(floatTensor({1}, {inf}), {}, -1),
      // a constant so large that x + c rounds x away (a row masked with -1e4)
      softmaxNetwork(floatTensor({1}, {-1e4f}), {}, -1),
      // opset 11: the softmax normalizes axes 2 and 3; the constant varies along axis 3 only
      softmaxNetwork(randomTensor(DataType::kFloat32, {1, 4}, 6), {}, 2, 11)};
  for (const Network& net : nets) {
    Network copy = net;
    std::vector<PassApplication> records;
    ASSERT_TRUE(runPasses(copy, 1, {}, &records).isOk());
    // (fuse_softmax_scale_mask may still take the Add as the softmax's mask.)
    for (const PassApplication& r : records) EXPECT_NE(r.pass, kPass);
  }
  // The sum read elsewhere too (a graph output): it must still exist.
  Network shared = softmaxNetwork(randomTensor(DataType::kFloat32, {4}, 3), {0, 3, 1, 2}, -1);
  shared.graph.outputs.push_back({"s", DataType::kFloat32, false, {}});
  std::vector<PassApplication> records;
  ASSERT_TRUE(runPasses(shared, 1, {}, &records).isOk());
  EXPECT_EQ(countOps(shared, "Add"), 1);
}

}  // namespace
}  // namespace kiln::test
