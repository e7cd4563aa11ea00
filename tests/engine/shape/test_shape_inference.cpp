#include <gtest/gtest.h>

#include <map>
#include <string>

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
  // Past it, ops whose op-table row has a generic form keep a type too: Softmax (its
  // input's) and Less (bool).
  Node softmax = expand;
  softmax.opType = "Softmax";
  softmax.inputs = {"y"};
  softmax.outputs = {"soft"};
  Node less = expand;
  less.opType = "Less";
  less.inputs = {"soft", "y"};
  less.outputs = {"lt"};
  // And ops with rules of their own whose output keeps input 0's type: MatMul.
  Node matmul = expand;
  matmul.opType = "MatMul";
  matmul.inputs = {"soft", "w"};
  matmul.outputs = {"proj"};
  g.initializers["w"] = Tensor(DataType::kFloat16, {4, 4});
  g.nodes = {expand, add, softmax, less, matmul};
  g.outputs = {{"lt", DataType::kUndefined, false, {}}, {"proj", DataType::kUndefined, false, {}}};
  auto shapes = inferShapes(net);
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  EXPECT_FALSE(shapes->values.at("wide").hasShape);
  EXPECT_EQ(shapes->values.at("wide").type, DataType::kFloat16);
  EXPECT_EQ(shapes->values.at("y").type, DataType::kFloat16);
  EXPECT_FALSE(shapes->values.at("soft").hasShape);
  EXPECT_EQ(shapes->values.at("soft").type, DataType::kFloat16);
  EXPECT_EQ(shapes->values.at("lt").type, DataType::kBool);
  EXPECT_EQ(shapes->values.at("proj").type, DataType::kFloat16);
  EXPECT_FALSE(shapes->unresolved.empty());
}

// RMSNormalization's Y takes the scale's type (V), which may differ from X's (T): a Cast of
// it back to X's type is then no no-op.
TEST(ShapeInference, RmsNormalizationTakesTheScalesType) {
  Network net;
  net.opsets[""] = 23;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(8)}}};
  g.initializers["scale16"] = Tensor(DataType::kFloat16, {8});
  g.initializers["scale32"] = Tensor(DataType::kFloat32, {8});
  Node mixed;
  mixed.opType = "RMSNormalization";
  mixed.opset = 23;
  mixed.inputs = {"x", "scale16"};
  mixed.outputs = {"y16"};
  Node same = mixed;
  same.inputs = {"x", "scale32"};
  same.outputs = {"y32"};
  g.nodes = {mixed, same};
  g.outputs = {{"y16", DataType::kUndefined, false, {}}, {"y32", DataType::kUndefined, false, {}}};
  auto shapes = inferShapes(net);
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  EXPECT_EQ(shapes->values.at("y16").type, DataType::kFloat16);
  EXPECT_EQ(shapes->values.at("y32").type, DataType::kFloat32);
  EXPECT_EQ(shapes->values.at("y16").shape.size(), 2u);
}

// BERT's SDPA mask (transformers' export): ConstantOfShape(bool) And Cast(to bool), Expanded
// to a run-time shape, selects in a Where; IsNaN of the scores. Every type is known
// without the shapes: the strongly typed export then keeps none of them float32.
TEST(ShapeInference, MaskTypesAreKnownWithoutShapes) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"mask", DataType::kInt64, true, {DimExpr(2), DimExpr(4)}},
              {"target", DataType::kInt64, true, {DimExpr(4)}},
              {"scores", DataType::kFloat16, true, {DimExpr(2), DimExpr(4)}}};
  g.initializers["dims"] = Tensor::int64Vector({2, 4});
  auto node = [](const char* op, std::vector<std::string> in, const char* out) {
    Node n;
    n.opType = op;
    n.opset = 17;
    n.inputs = std::move(in);
    n.outputs = {out};
    n.name = out;
    return n;
  };
  Node ones = node("ConstantOfShape", {"dims"}, "ones");
  Attribute value;
  value.kind = Attribute::Kind::kTensor;
  value.t = Tensor(DataType::kBool, {1});
  ones.attributes["value"] = value;
  Node cast = node("Cast", {"mask"}, "maskBool");
  Attribute to;
  to.i = 9;
  cast.attributes["to"] = to;
  g.nodes = {ones,
             cast,
             node("And", {"ones", "maskBool"}, "both"),
             node("Expand", {"both", "target"}, "wide"),
             node("IsNaN", {"scores"}, "nan"),
             node("Where", {"wide", "scores", "scores"}, "y")};
  g.outputs = {{"y", DataType::kUndefined, false, {}}, {"nan", DataType::kUndefined, false, {}}};
  auto shapes = inferShapes(net);
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  EXPECT_FALSE(shapes->values.at("wide").hasShape);
  EXPECT_EQ(shapes->values.at("wide").type, DataType::kBool);
  EXPECT_EQ(shapes->values.at("nan").type, DataType::kBool);
  EXPECT_EQ(shapes->values.at("y").type, DataType::kFloat16);
}

// The float32 output "y" of `net` has the shape `expected` (as "2x3", symbolic dims by
// name), or none when `expected` is "".
void expectOutputShape(const Network& net, const std::string& expected) {
  auto shapes = inferShapes(net);
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  const InferredValue& y = shapes->values.at("y");
  if (expected.empty()) {
    EXPECT_FALSE(y.hasShape) << symbolicShapeToString(y.shape);
    return;
  }
  ASSERT_TRUE(y.hasShape);
  EXPECT_EQ(symbolicShapeToString(y.shape), expected);
  EXPECT_EQ(y.type, DataType::kFloat32);
}

// Einsum (Funnel Transformer's relative attention, "binh,tnh->bnit"): the output dims are
// the labels' dims, symbolic ones included, with "..." broadcast and implicit outputs; a
// label of two different sizes, or a term of the wrong rank, leaves the shape unknown.
TEST(ShapeInference, EinsumTakesEachOutputLabelsDim) {
  struct Case {
    std::string equation;
    std::vector<std::vector<DimExpr>> inputs;
    std::string expected;  // "" = no shape
  };
  const DimExpr b = DimExpr::symbol("batch");
  const std::vector<Case> cases = {
      {"binh,tnh->bnit", {{b, 128, 8, 64}, {256, 8, 64}}, "batchx8x128x256"},
      {"ij,jk", {{3, 4}, {4, 5}}, "3x5"},                                // implicit: i, k
      {"...ij,...jk->...ik", {{b, 1, 3, 4}, {6, 4, 5}}, "batchx6x3x5"},  // "..." broadcasts
      {"ii->i", {{4, 4}}, "4"},                                          // a diagonal
      {"ij,jk->ik", {{3, 4}, {5, 6}}, ""},                               // j is 4 and 5
      {"ijk,jk->ik", {{3, 4}, {4, 5}}, ""},  // rank 2 for a 3-letter term
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.equation);
    Network net;
    net.opsets[""] = 17;
    Graph& g = net.graph;
    Node einsum;
    einsum.name = "einsum";
    einsum.opType = "Einsum";
    einsum.opset = 17;
    einsum.attributes["equation"].kind = Attribute::Kind::kString;
    einsum.attributes["equation"].s = c.equation;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const std::string name = "x" + std::to_string(i);
      g.inputs.push_back({name, DataType::kFloat32, true, c.inputs[i]});
      einsum.inputs.push_back(name);
    }
    einsum.outputs = {"y"};
    g.nodes.push_back(einsum);
    g.outputs = {{"y", DataType::kFloat32, false, {}}};
    expectOutputShape(net, c.expected);
  }
}

// RNN, GRU and LSTM (Sequencer2D's bidirectional LSTMs): Y [seq, dirs, batch, hidden], Y_h and
// Y_c [dirs, batch, hidden]; layout 1 puts the batch first; hidden from R when the attribute is
// absent; a symbolic batch kept. X of another rank leaves the shapes unknown.
TEST(ShapeInference, RecurrentLayersGiveSequenceAndStateShapes) {
  struct Case {
    const char* op;
    std::string direction;
    int64_t layout, hiddenAttr;
    std::vector<DimExpr> x;
    std::vector<std::string> expected;  // Y, Y_h (, Y_c); "" = no shape
    int opset = 14;  // layout exists from opset 14: before, a layout attribute is ignored
  };
  const DimExpr b = DimExpr::symbol("batch");
  const std::vector<Case> cases = {
      {"LSTM", "bidirectional", 0, 48, {56, b, 192}, {"56x2xbatchx48", "2xbatchx48", "2xbatchx48"}},
      {"LSTM", "forward", 1, 48, {b, 56, 192}, {"batchx56x1x48", "batchx1x48", "batchx1x48"}},
      {"GRU", "reverse", 0, 0, {7, 3, 192}, {"7x1x3x48", "1x3x48"}},       // hidden from R
      {"RNN", "forward", 0, 48, {7, 3}, {"", ""}},                         // X of rank 2
      {"GRU", "forward", 1, 48, {7, 3, 192}, {"7x1x3x48", "1x3x48"}, 13},  // layout ignored
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.op) + " " + c.direction);
    Network net;
    net.opsets[""] = c.opset;
    Graph& g = net.graph;
    const int64_t gates = std::string(c.op) == "LSTM" ? 4 : std::string(c.op) == "GRU" ? 3 : 1;
    const int64_t dirs = c.direction == "bidirectional" ? 2 : 1;
    g.inputs = {{"x", DataType::kFloat32, true, c.x},
                {"w", DataType::kFloat32, true, {dirs, gates * 48, 192}},
                {"r", DataType::kFloat32, true, {dirs, gates * 48, 48}}};
    Node rnn;
    rnn.name = "rnn";
    rnn.opType = c.op;
    rnn.opset = c.opset;
    rnn.inputs = {"x", "w", "r"};
    rnn.outputs = {"y", "y_h"};
    if (gates == 4) rnn.outputs.push_back("y_c");
    rnn.attributes["direction"].kind = Attribute::Kind::kString;
    rnn.attributes["direction"].s = c.direction;
    rnn.attributes["layout"].kind = Attribute::Kind::kInt;
    rnn.attributes["layout"].i = c.layout;
    if (c.hiddenAttr > 0) {
      rnn.attributes["hidden_size"].kind = Attribute::Kind::kInt;
      rnn.attributes["hidden_size"].i = c.hiddenAttr;
    }
    g.nodes.push_back(rnn);
    for (const std::string& out : rnn.outputs)
      g.outputs.push_back({out, DataType::kFloat32, false, {}});
    auto shapes = inferShapes(net);
    ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
    for (size_t i = 0; i < rnn.outputs.size(); ++i) {
      const InferredValue& v = shapes->values.at(rnn.outputs[i]);
      if (c.expected[i].empty()) {
        EXPECT_FALSE(v.hasShape) << rnn.outputs[i];
        continue;
      }
      ASSERT_TRUE(v.hasShape) << rnn.outputs[i];
      EXPECT_EQ(symbolicShapeToString(v.shape), c.expected[i]) << rnn.outputs[i];
    }
  }
}

// Col2Im (VOLO's outlook attention, F.fold at opset 18): [N, C * prod(block), L] with constant
// image_shape and block_shape is [N, C, image...], a symbolic batch kept; a run-time
// image_shape, or a block_shape of another rank, leaves the shape unknown.
TEST(ShapeInference, Col2ImTakesItsImageShape) {
  struct Case {
    std::vector<int64_t> image, block;
    bool constantImage;
    std::string expected;  // "" = no shape
  };
  const std::vector<Case> cases = {
      {{14, 14}, {3, 3}, true, "batchx192x14x14"},
      {{7, 9}, {2, 3}, true, "batchx288x7x9"},
      {{14, 14}, {3, 3}, false, ""},
      {{14, 14}, {3}, true, ""},
  };
  for (const Case& c : cases) {
    Network net;
    net.opsets[""] = 18;
    Graph& g = net.graph;
    g.inputs = {
        {"x", DataType::kFloat32, true, {DimExpr::symbol("batch"), DimExpr(1728), DimExpr(196)}}};
    if (c.constantImage)
      g.initializers["image"] = Tensor::int64Vector(c.image);
    else
      g.inputs.push_back({"image", DataType::kInt64, true, {DimExpr(2)}});
    g.initializers["block"] = Tensor::int64Vector(c.block);
    Node col2im;
    col2im.name = "col2im";
    col2im.opType = "Col2Im";
    col2im.opset = 18;
    col2im.inputs = {"x", "image", "block"};
    col2im.outputs = {"y"};
    g.nodes = {col2im};
    g.outputs = {{"y", DataType::kFloat32, false, {}}};
    expectOutputShape(net, c.expected);
  }
}

// Small constant inputs that broadcast or expand into a large value (MViTv2's relative-position
// indices, batch x heads x tokens of them) are not evaluated on the host: the shape rule gives
// the value's shape, and no folded tensor past 2^22 elements is kept (every pass would fold it
// again); the same ops at small sizes still fold.
TEST(ShapeInference, FoldsNoLargeValueFromSmallConstants) {
  for (bool large : {false, true}) {
    SCOPED_TRACE(large ? "past 2^22 elements" : "small");
    const int64_t rows = large ? 1025 : 4, n = large ? 2049 : 4;
    Network net;
    net.opsets[""] = 17;
    Graph& g = net.graph;
    auto iota = [](Shape shape) {
      Tensor t(DataType::kInt64, shape);
      for (int64_t k = 0; k < t.numel(); ++k) t.data<int64_t>()[k] = k % 7;
      return t;
    };
    g.initializers["index"] = iota({1, 64, 1});
    g.initializers["target"] = Tensor::int64Vector({rows, 64, 64});
    g.initializers["a"] = iota({1, n, 1});
    g.initializers["b"] = iota({1, 1, 2048});
    Node expand;
    expand.opType = "Expand";
    expand.opset = 17;
    expand.inputs = {"index", "target"};  // [rows, 64, 64]
    expand.outputs = {"wide"};
    Node add = expand;
    add.opType = "Add";
    add.inputs = {"a", "b"};  // [1, n, 2048]
    add.outputs = {"sum"};
    g.nodes = {expand, add};
    g.outputs = {{"wide", DataType::kUndefined, false, {}},
                 {"sum", DataType::kUndefined, false, {}}};
    auto shapes = inferShapes(net);
    ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
    const std::map<std::string, std::string> expected = {
        {"wide", std::to_string(rows) + "x64x64"}, {"sum", "1x" + std::to_string(n) + "x2048"}};
    for (const auto& [value, shape] : expected) {
      SCOPED_TRACE(value);
      ASSERT_TRUE(shapes->values.at(value).hasShape);
      EXPECT_EQ(symbolicShapeToString(shapes->values.at(value).shape), shape);
      EXPECT_EQ(shapes->values.at(value).type, DataType::kInt64);
      EXPECT_EQ(shapes->folded.count(value), large ? 0u : 1u);
    }
    // sum[0, 1, 2] = a[0, 1, 0] + b[0, 0, 2] = 1 + 2.
    if (!large) EXPECT_EQ(shapes->folded.at("sum").data<int64_t>()[2048 + 2], 3);
  }
}

}  // namespace
}  // namespace kiln
