// narrow_gathered_matmul: a GEMM read only by a gather of its columns at constant indices
// computes just the columns they reach (DeBERTa's relative-position scores): the right side a
// weight or a Tile of one, negative indices counted from the end. The outputs stay the CPU
// reference's; a window wider than 3/4 of the columns (25 columns of 40 widen to 32), or a GEMM
// output read elsewhere too, stays as it is.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "narrow_gathered_matmul";

struct Case {
  bool tiled = false;        // B = Tile(c [2, 64, 1024], [3, 1, 1]), else B = c [8, 40]
  int64_t lo = 0, hi = 0;    // the indices' range (the least written as lo - columns)
  bool extraReader = false;  // the GEMM output is a graph output too
};

// y = GatherElements(MatMul(a, B), idx, axis -1), idx constant in [lo, hi].
Network gatheredScores(const Case& c) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  const int64_t batch = c.tiled ? 6 : 2, k = c.tiled ? 64 : 8, n = c.tiled ? 1024 : 40;
  g.inputs = {{"a", DataType::kFloat32, true, {DimExpr(batch), DimExpr(4), DimExpr(k)}}};
  std::string b = "b";
  if (c.tiled) {
    g.initializers["c"] = randomTensor(DataType::kFloat32, {2, k, n}, 21);
    g.initializers["reps"] = Tensor::int64Vector({3, 1, 1});
    g.nodes.push_back(makeNode("Tile", {"c", "reps"}, {"b"}));
  } else {
    g.initializers["b"] = randomTensor(DataType::kFloat32, {k, n}, 21);
  }
  g.nodes.push_back(makeNode("MatMul", {"a", b}, {"scores"}));
  const Shape idxShape = {batch, 4, 6};
  std::vector<int64_t> idx(static_cast<size_t>(shapeNumel(idxShape)));
  for (size_t i = 0; i < idx.size(); ++i)
    idx[i] = c.lo + static_cast<int64_t>(i * 7) % (c.hi - c.lo + 1);
  idx[0] = c.lo - n;  // the least index, from the end
  idx[1] = c.hi;
  g.initializers["idx"] = Tensor::fromVector(DataType::kInt64, idxShape, idx);
  g.nodes.push_back(withInt(makeNode("GatherElements", {"scores", "idx"}, {"y"}), "axis", -1));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  if (c.extraReader) g.outputs.push_back({"scores", DataType::kFloat32, false, {}});
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  const SymbolicShape& s = net.graph.inputs[0].shape;
  return runOnReference(
      net, {{"a", randomTensor(DataType::kFloat32, {s[0].constValue(), 4, s[2].constValue()}, 3)}});
}

// The columns of the GEMM's right side (a weight, or the Tile's constant input) after the passes.
int64_t rightSideColumns(const Network& net) {
  for (const Node& n : net.graph.nodes) {
    const std::string& in = n.opType == "Tile"    ? n.inputs[0]
                            : n.inputs.size() > 1 ? n.inputs[1]
                                                  : "";
    auto it = net.graph.initializers.find(in);
    if ((n.opType == "Tile" || n.opType == "MatMul" || n.opType == "FusedMatMul") &&
        it != net.graph.initializers.end())
      return it->second.shape().back();
  }
  return -1;
}

TEST(NarrowGatheredMatMul, GemmComputesTheGatheredColumnsOnly) {
  // Windows of 11, 21 and 5 columns, widened to 16, 24 and 8 (the last moved back to fit).
  for (const Case& c : {Case{false, 10, 20}, Case{true, 500, 520}, Case{false, 35, 39}}) {
    SCOPED_TRACE(c.tiled);
    Network fused;
    const Network original = gatheredScores(c);
    auto applied = fuseAndCompareOutputs(kPass, run, original, original.graph.nodes.size(), &fused);
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_EQ(rightSideColumns(fused), (c.hi - c.lo + 8) / 8 * 8);
    EXPECT_EQ(fused.graph.initializers.count(c.tiled ? "c" : "b"), 0u);  // the full weight went
  }
}

TEST(NarrowGatheredMatMul, WideWindowsAndSharedOutputsStay) {
  for (const Case& c : {Case{false, 2, 37}, Case{false, 4, 28}, Case{false, 10, 20, true}}) {
    const Network original = gatheredScores(c);
    auto applied = fuseAndCompareOutputs(kPass, run, original, original.graph.nodes.size());
    EXPECT_TRUE(applied.empty());
  }
}

}  // namespace
}  // namespace kiln::test
