// split_parts_as_views: a Split along an axis with only dims of 1 before it becomes a
// StridedCopy a part (each a contiguous run of the input, which the CUDA runtime views); the CPU
// reference's outputs equal the original graph's on random non-zero data. A Split along an inner
// axis, parts off 128-element boundaries and a symbolic shape keep the Split.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "split_parts_as_views";

// x [dims] -> Split(axis, sizes) -> each part -> Relu -> out_i (the last part a graph output
// itself too).
Network splitNetwork(const std::vector<DimExpr>& dims, int64_t axis,
                     const std::vector<int64_t>& sizes) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, dims}};
  g.initializers["sizes"] = Tensor::int64Vector(sizes);
  std::vector<std::string> parts;
  for (size_t i = 0; i < sizes.size(); ++i) parts.push_back("part" + std::to_string(i));
  g.nodes.push_back(withInt(makeNode("Split", {"x", "sizes"}, parts), "axis", axis));
  for (const std::string& p : parts) {
    g.nodes.push_back(makeNode("Relu", {p}, {"out_" + p}));
    g.outputs.push_back({"out_" + p, DataType::kFloat32, false, {}});
  }
  g.outputs.push_back({parts.back(), DataType::kFloat32, false, {}});
  return net;
}

NetworkRunner runWith(const Shape& shape) {
  return [shape](const Network& net) {
    Tensor x = randomTensor(DataType::kFloat32, shape, 21, 0.5, 2.0);
    for (int64_t i = 0; i < x.numel(); i += 3) x.data<float>()[i] = -x.data<float>()[i];
    return runOnReference(net, {{"x", x}});
  };
}

TEST(SplitPartsAsViews, UnbindOfPackedHeadsIsACopyAPart) {
  // [3, B=2, H=2, S=4, D=16]: parts of 256 elements, Q / K / V as timm's unbind(0) cuts them.
  Network fused;
  const auto applied = fuseAndCompareOutputs(
      kPass, runWith({3, 2, 2, 4, 16}), splitNetwork({3, 2, 2, 4, 16}, 0, {1, 1, 1}), 6, &fused);
  EXPECT_EQ(applied.size(), 3u);
  EXPECT_EQ(countOps(fused, "Split"), 0);
  ASSERT_EQ(countOps(fused, "StridedCopy"), 3);
  int64_t expected = 0;
  for (const Node& n : fused.graph.nodes) {
    if (n.opType != "StridedCopy") continue;
    EXPECT_EQ(n.domain, kKilnDomain);
    EXPECT_EQ(n.attrInts("shape"), (std::vector<int64_t>{1, 2, 2, 4, 16}));
    EXPECT_EQ(n.attrInts("strides"), (std::vector<int64_t>{256, 128, 64, 16, 1}));
    EXPECT_EQ(n.attrInt("offset", -1), expected);
    expected += 256;
  }
  // Unequal parts behind a leading dim of 1, along a negative axis: offsets 0, 128, 384.
  fuseAndCompareOutputs(kPass, runWith({1, 5, 128}), splitNetwork({1, 5, 128}, -2, {1, 2, 2}), 6,
                        &fused);
  EXPECT_EQ(countOps(fused, "StridedCopy"), 3);
}

TEST(SplitPartsAsViews, SplitsThatAreNoRunsStay) {
  // Along an inner axis (a dim of 3 before it), parts off 128 elements, a symbolic batch.
  for (const Network& net : {splitNetwork({3, 4, 128}, 1, {2, 2}), splitNetwork({6, 10}, 0, {3, 3}),
                             splitNetwork({DimExpr::symbol("N"), 128}, 0, {1, 1})}) {
    Network copy = net;
    std::vector<PassApplication> records;
    ASSERT_TRUE(runPasses(copy, 1, {}, &records).isOk());
    for (const PassApplication& r : records) EXPECT_NE(r.pass, kPass);
    EXPECT_EQ(countOps(copy, "Split"), 1);
  }
}

}  // namespace
}  // namespace kiln::test
