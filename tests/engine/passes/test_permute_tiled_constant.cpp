// permute_tiled_constant: Transpose(Tile(c, reps), p) becomes Tile(c transposed, reps
// permuted): DeBERTa's tiled position keys. The outputs stay the CPU reference's; a Tile of a
// computed value keeps its Transpose.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "permute_tiled_constant";

// y = Relu(Transpose(Tile(k, [4, 1, 1]), perm)) with k [2, 192, 192] a weight (more elements
// than shape inference evaluates; tiled 1.1 MiB, more than fold_constants stores), or with
// `computed` k = Relu(k_in) of an input.
Network tiledKeys(const std::vector<int64_t>& perm, bool computed) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.initializers["reps"] = Tensor::int64Vector({4, 1, 1});
  if (computed) {
    g.inputs = {{"k_in", DataType::kFloat32, true, {DimExpr(2), DimExpr(192), DimExpr(192)}}};
    g.nodes.push_back(makeNode("Relu", {"k_in"}, {"k"}));
  } else {
    g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(1)}}};
    g.initializers["k"] = randomTensor(DataType::kFloat32, {2, 192, 192}, 11);
  }
  g.nodes.push_back(makeNode("Tile", {"k", "reps"}, {"tiled"}));
  g.nodes.push_back(withInts(makeNode("Transpose", {"tiled"}, {"t"}), "perm", perm));
  g.nodes.push_back(makeNode("Relu", {"t"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  if (net.graph.inputs[0].name == "x")
    return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {1}, 3)}});
  return runOnReference(net,
                        {{"k_in", randomTensor(DataType::kFloat32, {2, 192, 192}, 4, -1.0, 1.0)}});
}

int count(const Network& net, const char* op) {
  return static_cast<int>(std::count_if(net.graph.nodes.begin(), net.graph.nodes.end(),
                                        [&](const Node& n) { return n.opType == op; }));
}

TEST(PermuteTiledConstant, TransposeOfATiledWeightIsATileOfTheTransposedWeight) {
  for (const std::vector<int64_t>& perm :
       {std::vector<int64_t>{0, 2, 1}, std::vector<int64_t>{2, 0, 1}}) {
    SCOPED_TRACE(perm[0]);
    Network fused;
    const Network original = tiledKeys(perm, false);
    auto applied =
        fuseAndCompareOutputs(kPass, run, original, original.graph.nodes.size() - 1, &fused);
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_EQ(count(fused, "Tile"), 1);
    EXPECT_EQ(count(fused, "Transpose"), count(original, "Transpose") - 1);
  }
}

TEST(PermuteTiledConstant, TileOfAComputedValueKeepsItsTranspose) {
  const Network original = tiledKeys({0, 2, 1}, true);
  auto applied = fuseAndCompareOutputs(kPass, run, original, original.graph.nodes.size());
  EXPECT_TRUE(applied.empty());
}

}  // namespace
}  // namespace kiln::test
