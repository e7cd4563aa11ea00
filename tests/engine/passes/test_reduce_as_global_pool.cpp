// reduce_as_global_pool: timm's squeeze-excitation pool `x.mean((2, 3), keepdim=True)`
// (ReduceMean over every spatial axis, axes as an attribute before opset 18 and as an
// input since) becomes GlobalAveragePool, ReduceMax GlobalMaxPool; the outputs stay the
// CPU reference's; a mean that drops the axes becomes the pool and a Flatten. Means that
// skip an axis, include the channels, or reduce the last axis of a 3-D tensor (a
// LayerNorm's statistics) stay.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "reduce_as_global_pool";

// x of `shape` -> `op`(axes, keepdims) -> Mul(x, .) -> y (the SE scale reads the pool);
// with keepdims 0 the reduction's output is the graph's.
Network reduceGraph(const std::string& op, const Shape& shape, std::vector<int64_t> axes,
                    int keepdims = 1, int opset = 17) {
  Network net;
  net.opsets[""] = opset;
  Graph& g = net.graph;
  SymbolicShape dims;
  for (int64_t d : shape) dims.push_back(DimExpr(d));
  g.inputs = {{"x", DataType::kFloat32, true, dims}};
  Node reduce = withInt(makeNode(op, {"x"}, {"p"}, opset), "keepdims", keepdims);
  if (opset < 18) {
    reduce = withInts(reduce, "axes", axes);
  } else {
    g.initializers["axes"] = Tensor::int64Vector(axes);
    reduce.inputs.push_back("axes");
  }
  g.nodes.push_back(reduce);
  if (keepdims == 0) {
    g.outputs = {{"p", DataType::kFloat32, false, {}}};
    return net;
  }
  g.nodes.push_back(makeNode("Mul", {"x", "p"}, {"y"}, opset));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

NetworkRunner runner(const Shape& shape) {
  return [shape](const Network& net) {
    return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, shape, 11)}});
  };
}

TEST(ReduceAsGlobalPool, SpatialMeansAndMaximaBecomeGlobalPools) {
  struct Case {
    const char* op;
    Shape shape;
    std::vector<int64_t> axes;
    int opset;
    const char* pool;
  };
  const Case cases[] = {
      {"ReduceMean", {2, 3, 4, 5}, {2, 3}, 17, "GlobalAveragePool"},
      {"ReduceMean", {2, 3, 4, 5}, {-1, -2}, 18, "GlobalAveragePool"},
      {"ReduceMax", {2, 3, 4, 5}, {3, 2}, 17, "GlobalMaxPool"},
      {"ReduceMax", {2, 3, 4, 5}, {-2, 3}, 18, "GlobalMaxPool"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.op) + " opset " + std::to_string(c.opset) + " rank " +
                 std::to_string(c.shape.size()));
    Network fused;
    auto applied = fuseAndCompareOutputs(kPass, runner(c.shape),
                                         reduceGraph(c.op, c.shape, c.axes, 1, c.opset), 2, &fused);
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_EQ(fused.graph.nodes[0].opType, c.pool);
    EXPECT_EQ(fused.graph.nodes[0].inputs.size(), 1u);
    EXPECT_TRUE(fused.graph.nodes[0].attributes.empty());
  }
}

TEST(ReduceAsGlobalPool, DroppedDimsBecomeAFlattenOfThePool) {
  // keepdims 0 (a classifier head's `x.mean((2, 3))`): GlobalAveragePool, then Flatten.
  const Shape s = {2, 3, 4, 5};
  for (int opset : {17, 18}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Network fused;
    auto applied = fuseAndCompareOutputs(kPass, runner(s),
                                         reduceGraph("ReduceMean", s, {2, 3}, 0, opset), 2, &fused);
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_EQ(fused.graph.nodes[0].opType, "GlobalAveragePool");
    EXPECT_EQ(fused.graph.nodes[1].opType, "Flatten");
    EXPECT_EQ(fused.graph.nodes[1].outputs[0], "p");
  }
}

TEST(ReduceAsGlobalPool, OtherReductionsStay) {
  const Shape s = {2, 3, 4, 5};
  // One spatial axis of two, or the channels with them.
  EXPECT_TRUE(
      fuseAndCompareOutputs(kPass, runner(s), reduceGraph("ReduceMean", s, {3}), 2).empty());
  EXPECT_TRUE(
      fuseAndCompareOutputs(kPass, runner(s), reduceGraph("ReduceMean", s, {1, 2, 3}), 2).empty());
  // The last axis of a 3-D tensor: a LayerNorm's mean as often as a pool.
  const Shape s3 = {2, 3, 7};
  EXPECT_TRUE(
      fuseAndCompareOutputs(kPass, runner(s3), reduceGraph("ReduceMean", s3, {2}), 2).empty());
  // A sum is no pool.
  EXPECT_TRUE(
      fuseAndCompareOutputs(kPass, runner(s), reduceGraph("ReduceSum", s, {2, 3}), 2).empty());
}

}  // namespace
}  // namespace kiln::test
