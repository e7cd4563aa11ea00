// split_parts_as_views: a Split along an axis with only dims of 1 before it becomes a
// StridedCopy a part (each a contiguous run of the input, which the CUDA runtime views); the CPU
// reference's outputs equal the original graph's on random non-zero data. A Split along an inner
// axis, parts off 128-element boundaries and a symbolic shape keep the Split. A Split of a
// Transpose whose read parts hold at most 3/4 of it reads each part from the Transpose's input
// (the permutation in the strides) and the Transpose goes; read whole, or read by another node,
// the Transpose stays. A Gather of one constant index with only dims of 1 before its axis
// (CaiT's `qkv[0]`) is one StridedCopy of its run; other Gathers stay.
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

// x [dims] -> Transpose(perm) -> Split(axis, sizes) -> the parts in `read` -> Relu -> out_i
// (the other parts read by nothing), plus Relu(Transpose) -> t when `transposeReadElsewhere`.
Network transposedSplitNetwork(const Shape& dims, const std::vector<int64_t>& perm, int64_t axis,
                               const std::vector<int64_t>& sizes, const std::vector<bool>& read,
                               bool transposeReadElsewhere = false) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, std::vector<DimExpr>(dims.begin(), dims.end())}};
  g.initializers["sizes"] = Tensor::int64Vector(sizes);
  Node transpose = makeNode("Transpose", {"x"}, {"xt"});
  transpose.attributes["perm"] = Attribute{.kind = Attribute::Kind::kInts, .ints = perm};
  g.nodes.push_back(transpose);
  std::vector<std::string> parts;
  for (size_t i = 0; i < sizes.size(); ++i) parts.push_back("part" + std::to_string(i));
  g.nodes.push_back(withInt(makeNode("Split", {"xt", "sizes"}, parts), "axis", axis));
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!read[i]) continue;
    g.nodes.push_back(makeNode("Relu", {parts[i]}, {"out_" + parts[i]}));
    g.outputs.push_back({"out_" + parts[i], DataType::kFloat32, false, {}});
  }
  if (transposeReadElsewhere) {
    g.nodes.push_back(makeNode("Relu", {"xt"}, {"t"}));
    g.outputs.push_back({"t", DataType::kFloat32, false, {}});
  }
  return net;
}

// The StridedCopy nodes of `net`, in graph order.
std::vector<const Node*> stridedCopies(const Network& net) {
  std::vector<const Node*> copies;
  for (const Node& n : net.graph.nodes)
    if (n.opType == "StridedCopy") copies.push_back(&n);
  return copies;
}

TEST(SplitPartsAsViews, PermutedPackedHeadsCopyOnlyTheReadParts) {
  // SwinV2's Q and K: [B=2, N=5, 3, H=2, D=8] permuted to [3, B, H, N, D], V unread.
  Network fused;
  const Shape dims{2, 5, 3, 2, 8};
  const auto applied = fuseAndCompareOutputs(
      kPass, runWith(dims),
      transposedSplitNetwork(dims, {2, 0, 3, 1, 4}, 0, {1, 1, 1}, {true, true, false}), 4, &fused);
  EXPECT_EQ(applied.size(), 2u);
  EXPECT_EQ(countOps(fused, "Transpose"), 0);
  EXPECT_EQ(countOps(fused, "Split"), 0);
  const std::vector<const Node*> copies = stridedCopies(fused);
  ASSERT_EQ(copies.size(), 2u);
  for (size_t i = 0; i < copies.size(); ++i) {
    EXPECT_EQ(copies[i]->inputs[0], "x");
    EXPECT_EQ(copies[i]->attrInts("shape"), (std::vector<int64_t>{1, 2, 2, 5, 8}));
    // x's strides [240, 48, 16, 8, 1] in the permuted order.
    EXPECT_EQ(copies[i]->attrInts("strides"), (std::vector<int64_t>{16, 240, 8, 48, 1}));
    EXPECT_EQ(copies[i]->attrInt("offset", -1), static_cast<int64_t>(16 * i));
  }
  // Along an inner axis of the permuted tensor (no dims of 1 before it), one part of 2 in 6 read.
  const Shape inner{4, 6, 32};
  fuseAndCompareOutputs(kPass, runWith(inner),
                        transposedSplitNetwork(inner, {0, 2, 1}, 2, {2, 4}, {true, false}), 2,
                        &fused);
  ASSERT_EQ(stridedCopies(fused).size(), 1u);
  EXPECT_EQ(stridedCopies(fused)[0]->attrInts("strides"), (std::vector<int64_t>{192, 1, 32}));
}

TEST(SplitPartsAsViews, TransposeReadWholeOrElsewhereStays) {
  const Shape dims{2, 8, 3, 2, 8};
  // Every part read: the Transpose moves it all once and the parts are views of it.
  Network fused;
  fuseAndCompareOutputs(
      kPass, runWith(dims),
      transposedSplitNetwork(dims, {2, 0, 3, 1, 4}, 0, {1, 1, 1}, {true, true, true}), 7, &fused);
  EXPECT_EQ(countOps(fused, "Transpose"), 1);
  for (const Node* copy : stridedCopies(fused)) EXPECT_EQ(copy->inputs[0], "xt");
  // The Transpose's output read by another node too: the parts stay views of it.
  fuseAndCompareOutputs(
      kPass, runWith(dims),
      transposedSplitNetwork(dims, {2, 0, 3, 1, 4}, 0, {1, 1, 1}, {true, false, false}, true), 4,
      &fused);
  EXPECT_EQ(countOps(fused, "Transpose"), 1);
  ASSERT_EQ(stridedCopies(fused).size(), 1u);
  EXPECT_EQ(stridedCopies(fused)[0]->inputs[0], "xt");
}

// x [dims] -> Gather(x, index; axis) -> Relu -> "y" (the Gather's output a graph output too).
Network gatherNetwork(const std::vector<DimExpr>& dims, int64_t axis, const Tensor& index) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, dims}};
  g.initializers["index"] = index;
  g.nodes.push_back(withInt(makeNode("Gather", {"x", "index"}, {"picked"}), "axis", axis));
  g.nodes.push_back(makeNode("Relu", {"picked"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}, {"picked", DataType::kFloat32, false, {}}};
  return net;
}

Tensor scalarIndex(int64_t i) {
  Tensor t(DataType::kInt64, Shape{});
  t.data<int64_t>()[0] = i;
  return t;
}

TEST(SplitPartsAsViews, GatherOfOneIndexIsARun) {
  // CaiT's qkv[1] of [3, B=2, H=2, S=4, D=16]: shape [2, 2, 4, 16] at offset 256.
  Network fused;
  fuseAndCompareOutputs(kPass, runWith({3, 2, 2, 4, 16}),
                        gatherNetwork({3, 2, 2, 4, 16}, 0, scalarIndex(1)), 2, &fused);
  ASSERT_EQ(countOps(fused, "StridedCopy"), 1);
  const Node& copy = fused.graph.nodes[0];
  EXPECT_EQ(copy.attrInts("shape"), (std::vector<int64_t>{2, 2, 4, 16}));
  EXPECT_EQ(copy.attrInts("strides"), (std::vector<int64_t>{128, 64, 16, 1}));
  EXPECT_EQ(copy.attrInt("offset", -1), 256);
  // A negative index, an index of shape [1] (the axis kept), an axis behind a dim of 1.
  fuseAndCompareOutputs(kPass, runWith({3, 2, 2, 4, 16}),
                        gatherNetwork({3, 2, 2, 4, 16}, 0, scalarIndex(-1)), 2, &fused);
  EXPECT_EQ(fused.graph.nodes[0].attrInt("offset", -1), 512);
  fuseAndCompareOutputs(kPass, runWith({3, 2, 2, 4, 16}),
                        gatherNetwork({3, 2, 2, 4, 16}, 0, Tensor::int64Vector({2})), 2, &fused);
  EXPECT_EQ(fused.graph.nodes[0].attrInts("shape"), (std::vector<int64_t>{1, 2, 2, 4, 16}));
  fuseAndCompareOutputs(kPass, runWith({1, 3, 8, 16}),
                        gatherNetwork({1, 3, 8, 16}, 1, scalarIndex(2)), 2, &fused);
  EXPECT_EQ(fused.graph.nodes[0].attrInts("shape"), (std::vector<int64_t>{1, 8, 16}));
  EXPECT_EQ(fused.graph.nodes[0].attrInt("offset", -1), 256);
}

TEST(SplitPartsAsViews, GathersThatAreNoRunsStay) {
  // A dim of 2 before the axis, a run off 128 elements, two indices, a symbolic shape.
  const std::vector<Network> nets = {gatherNetwork({2, 3, 128}, 1, scalarIndex(1)),
                                     gatherNetwork({3, 100}, 0, scalarIndex(1)),
                                     gatherNetwork({3, 128}, 0, Tensor::int64Vector({0, 1})),
                                     gatherNetwork({DimExpr::symbol("N"), 128}, 0, scalarIndex(0))};
  // A Gather of a Shape's output (int64, one element): a Gather still, whose shape rule keeps
  // the symbolic batch for what reads it.
  Network shapeOf = gatherNetwork({DimExpr::symbol("N"), 128}, 0, scalarIndex(0));
  shapeOf.graph.nodes.insert(shapeOf.graph.nodes.begin(), makeNode("Shape", {"x"}, {"dims"}));
  shapeOf.graph.nodes[1].inputs[0] = "dims";
  shapeOf.graph.nodes.pop_back();  // the Relu
  shapeOf.graph.outputs = {{"picked", DataType::kInt64, false, {}}};
  std::vector<Network> all = nets;
  all.push_back(shapeOf);
  for (const Network& net : all) {
    Network copy = net;
    std::vector<PassApplication> records;
    ASSERT_TRUE(runPasses(copy, 1, {}, &records).isOk());
    // (Other passes may still rewrite the Gather: a strided one is fold_view_chains'.)
    for (const PassApplication& r : records) EXPECT_NE(r.pass, kPass);
  }
}

}  // namespace
}  // namespace kiln::test
