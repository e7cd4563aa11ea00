// fold_expand_into_broadcast: torch's F.normalize (x / Expand(Clip(ReduceL2(x)), shape(x)))
// loses its Expand, the Div broadcasting the norms itself; the outputs stay the CPU
// reference's. An Expand whose reader would change shape without it (it grows the
// output, or the reader does not broadcast) stays; with one reader of each kind, only
// the broadcasting one is rewired. A GatherElements of expanded indices (DeBERTa's relative
// positions) reads them broadcast as BroadcastGatherElements; an Expand that changes the
// gathered axis, or a smaller indices box than the data's, stays.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fold_expand_into_broadcast";
const Shape kX = {2, 3, 4, 5};

// x [2, 3, 4, 5] -> ReduceL2(last axis, keepdims) -> Clip(min 1e-12) -> Expand(to) -> `op`.
// With `grow` the Expand target is [2, 2, 3, 4, 5] (the Expand adds an axis), else x's shape.
Network normalizeGraph(const std::string& op, bool grow = false, bool extraReader = false) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(3), DimExpr(4), DimExpr(5)}}};
  g.initializers["min"] = Tensor::scalarFloat(1e-12f);
  g.initializers["to"] = Tensor::int64Vector(grow ? std::vector<int64_t>{2, 2, 3, 4, 5}
                                                  : std::vector<int64_t>{2, 3, 4, 5});
  g.nodes.push_back(
      withInt(withInts(makeNode("ReduceL2", {"x"}, {"n"}), "axes", {-1}), "keepdims", 1));
  g.nodes.push_back(makeNode("Clip", {"n", "min"}, {"c"}));
  g.nodes.push_back(makeNode("Expand", {"c", "to"}, {"e"}));
  g.nodes.push_back(makeNode(op, {"x", "e"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  if (extraReader) {  // a Softmax reads the expanded norms too: it needs them full size
    g.nodes.push_back(withInt(makeNode("Softmax", {"e"}, {"s"}), "axis", -1));
    g.outputs.push_back({"s", DataType::kFloat32, false, {}});
  }
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, kX, 7)}});
}

TEST(FoldExpandIntoBroadcast, NormalizeDividesByTheNormsDirectly) {
  for (const char* op : {"Div", "Mul", "Sub", "Add"}) {
    SCOPED_TRACE(op);
    Network fused;
    auto applied = fuseAndCompareOutputs(kPass, run, normalizeGraph(op), 3, &fused);
    ASSERT_EQ(applied.size(), 1u);
    for (const Node& n : fused.graph.nodes) EXPECT_NE(n.opType, "Expand");
    EXPECT_EQ(fused.graph.nodes.back().inputs[1], "c");
  }
}

TEST(FoldExpandIntoBroadcast, WhereBroadcastsToo) {
  Network net = normalizeGraph("Div");
  Graph& g = net.graph;
  g.nodes.back() = makeNode("Greater", {"x", "e"}, {"above"});
  g.nodes.push_back(makeNode("Where", {"above", "x", "e"}, {"y"}));
  Network fused;
  auto applied = fuseAndCompareOutputs(kPass, run, net, 4, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes.size(), 3u);  // the Expand and its two readers
}

TEST(FoldExpandIntoBroadcast, ExpandsThatShapeTheOutputStay) {
  // The Expand adds an axis the Div's output has: without it the output would shrink.
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, normalizeGraph("Div", true), 4).empty());
  // A reader that does not broadcast keeps the Expand; the Div still reads the norms.
  Network fused;
  auto applied = fuseAndCompareOutputs(kPass, run, normalizeGraph("Div", false, true), 5, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"e", "y"}));
  int expands = 0;
  for (const Node& n : fused.graph.nodes) {
    expands += n.opType == "Expand";
    if (n.opType == "Div") EXPECT_EQ(n.inputs[1], "c");
  }
  EXPECT_EQ(expands, 1);
}

// data [4, 3, 6] and indices idx (both inputs: a constant Expand would fold) expanded to
// `to`, gathered along `axis`.
Network gatherGraph(const Shape& idxShape, const std::vector<int64_t>& to, int64_t axis) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  SymbolicShape idxDims;
  for (int64_t d : idxShape) idxDims.push_back(DimExpr(d));
  g.inputs = {{"data", DataType::kFloat32, true, {DimExpr(4), DimExpr(3), DimExpr(6)}},
              {"idx", DataType::kInt64, true, idxDims}};
  g.initializers["to"] = Tensor::int64Vector(to);
  g.nodes.push_back(makeNode("Expand", {"idx", "to"}, {"e"}));
  g.nodes.push_back(withInt(makeNode("GatherElements", {"data", "e"}, {"y"}), "axis", axis));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

// Indices in -1..2 (-1 counts from the end) of the graph's indices shape.
std::vector<NamedTensor> runGather(const Network& net) {
  Shape idxShape;
  for (const DimExpr& d : net.graph.inputs[1].shape) idxShape.push_back(d.constValue());
  std::vector<int64_t> idx(static_cast<size_t>(shapeNumel(idxShape)));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>((i * 5 + 2) % 4) - 1;
  return runOnReference(net, {{"data", randomTensor(DataType::kFloat32, {4, 3, 6}, 5)},
                              {"idx", Tensor::fromVector(DataType::kInt64, idxShape, idx)}});
}

TEST(FoldExpandIntoBroadcast, GatherElementsReadsExpandedIndicesBroadcast) {
  for (const Shape& idxShape : {Shape{1, 3, 2}, Shape{4, 1, 2}, Shape{1, 1, 2}}) {
    SCOPED_TRACE(std::to_string(idxShape[0]) + "x" + std::to_string(idxShape[1]));
    Network fused;
    auto applied =
        fuseAndCompareOutputs(kPass, runGather, gatherGraph(idxShape, {4, 3, 2}, -1), 1, &fused);
    ASSERT_EQ(applied.size(), 1u);
    const Node& gather = fused.graph.nodes[0];
    EXPECT_EQ(gather.opType, "BroadcastGatherElements");
    EXPECT_EQ(gather.domain, "ai.kiln");
    EXPECT_EQ(gather.inputs[1], "idx");
  }
  // Along axis 1 (the indices' 3 of data's 3), the batch dim broadcast.
  Network fused;
  ASSERT_EQ(fuseAndCompareOutputs(kPass, runGather, gatherGraph({1, 3, 6}, {4, 3, 6}, 1), 1, &fused)
                .size(),
            1u);
}

TEST(FoldExpandIntoBroadcast, GatherElementsOfAReshapingExpandStays) {
  // The Expand grows the gathered axis (1 -> 2), or leaves a box smaller than the data's
  // (ONNX GatherElements reads indices [2, 3, 2] of data [4, 3, 6]: not the data's dims).
  for (const auto& [idxShape, to] : {std::pair{Shape{4, 3, 1}, std::vector<int64_t>{4, 3, 2}},
                                     std::pair{Shape{1, 3, 2}, std::vector<int64_t>{2, 3, 2}}}) {
    auto applied = fuseAndCompareOutputs(kPass, runGather, gatherGraph(idxShape, to, -1), 2);
    EXPECT_TRUE(applied.empty());
  }
}

}  // namespace
}  // namespace kiln::test
