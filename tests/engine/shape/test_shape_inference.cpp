#include <gtest/gtest.h>

#include "kiln/onnx_import.h"
#include "kiln/shape_inference.h"

namespace kiln {
namespace {

std::string fixture(const std::string& name) {
  return std::string(KILN_TEST_DATA_DIR) + "/" + name;
}

TEST(ShapeInference, FollowsShapeSubgraphSymbolically) {
  auto net = importOnnxFile(fixture("shape_subgraph.onnx"));
  ASSERT_TRUE(net.isOk()) << net.status().toString();
  auto shapes = inferShapes(net.value());
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  const InferredValue& y = shapes->values.at("y");
  ASSERT_TRUE(y.hasShape);
  EXPECT_EQ(symbolicShapeToString(y.shape), "batchx20");
}

TEST(ShapeInference, EvaluatesShapeSubgraphOnceInputsAreBound) {
  auto net = importOnnxFile(fixture("shape_subgraph.onnx"));
  ASSERT_TRUE(net.isOk());
  auto shapes = inferShapes(net.value(), {{"x", {6, 4, 5}}});
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  EXPECT_EQ(symbolicShapeToString(shapes->values.at("y").shape), "6x20");
  // The Reshape target was computed, not guessed.
  ASSERT_EQ(shapes->folded.count("target"), 1u);
  EXPECT_EQ(shapes->folded.at("target").toInt64Vector(), (std::vector<int64_t>{6, -1}));
}

TEST(ShapeInference, BroadcastsSymbolicDims) {
  auto net = importOnnxFile(fixture("add.onnx"));
  ASSERT_TRUE(net.isOk());
  auto shapes = inferShapes(net.value());
  ASSERT_TRUE(shapes.isOk());
  EXPECT_EQ(symbolicShapeToString(shapes->values.at("y").shape), "batchx3");
  EXPECT_EQ(shapes->values.at("y").type, DataType::kFloat32);
}

TEST(ShapeInference, RejectsBindingThatContradictsDeclaredShape) {
  auto net = importOnnxFile(fixture("add.onnx"));
  ASSERT_TRUE(net.isOk());
  auto shapes = inferShapes(net.value(), {{"x", {2, 4}}});
  ASSERT_FALSE(shapes.isOk());
  EXPECT_NE(shapes.status().message().find("input 'x'"), std::string::npos);
  EXPECT_FALSE(inferShapes(net.value(), {{"nope", {1}}}).isOk());
}

// An Expand to a shape only known at run time (a graph input): no shape, but its output
// and the Add reading it keep the data's type (what the strongly typed export reads).
TEST(ShapeInference, AnUnresolvedNodeKeepsItsDataType) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat16, true, {DimExpr(1), DimExpr(4)}},
              {"target", DataType::kInt64, true, {DimExpr(2)}}};
  Node expand;
  expand.opType = "Expand";
  expand.opset = 17;
  expand.inputs = {"x", "target"};
  expand.outputs = {"wide"};
  Node add = expand;
  add.opType = "Add";
  add.inputs = {"wide", "wide"};
  add.outputs = {"y"};
  g.nodes = {expand, add};
  g.outputs = {{"y", DataType::kUndefined, false, {}}};
  auto shapes = inferShapes(net);
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  EXPECT_FALSE(shapes->values.at("wide").hasShape);
  EXPECT_EQ(shapes->values.at("wide").type, DataType::kFloat16);
  EXPECT_EQ(shapes->values.at("y").type, DataType::kFloat16);
  EXPECT_FALSE(shapes->unresolved.empty());
}

}  // namespace
}  // namespace kiln
