// The strongly typed export's rewrite rules on graphs built in code: Casts at region
// boundaries, sources stored in the type their readers want, ops that keep float32,
// values a subgraph reads, clamped fp16 weights, unnamed nodes, keep-io-types, and the
// decisions taken from a plan record and a constraints file. The exported bytes are
// imported back and typed by Kiln's shape inference. (ONNX Runtime and onnx.checker
// run on exports in tests/cli/test_typed_export.sh.)
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "kiln/calibration.h"
#include "kiln/onnx_export.h"
#include "kiln/onnx_import.h"
#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"
#include "kiln/typed_onnx_export.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

using test::makeNode;

Tensor filled(Shape shape, float first) {
  Tensor t(DataType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = first + 0.25f * static_cast<float>(i);
  return t;
}

ValueInfo floatValue(const std::string& name, Shape shape) {
  ValueInfo v{name, DataType::kFloat32, true, {}};
  for (int64_t d : shape) v.shape.push_back(DimExpr(d));
  return v;
}

// Input x [2, 4], initializers w [4, 3] and bias [3]; no nodes yet.
Network linearInputs() {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {floatValue("x", {2, 4})};
  g.initializers["w"] = filled({4, 3}, 0.5f);
  g.initializers["bias"] = filled({3}, 1.0f);
  return net;
}

// x -> MatMul(w) -> a -> Relu (unnamed) -> r -> Add(bias) -> s -> Cast(int32) -> y_int
//                                                               \-> Mul(k) -> y
Network chain() {
  Network net = linearInputs();
  Graph& g = net.graph;
  g.initializers["k"] = filled({3}, 1e6f);  // past fp16's range: clamped when stored fp16
  g.nodes.push_back(makeNode("MatMul", {"x", "w"}, {"a"}));
  g.nodes.push_back(makeNode("Relu", {"a"}, {"r"}));
  g.nodes.back().name = "";  // unnamed: exported as "Relu_1"
  g.nodes.push_back(makeNode("Add", {"r", "bias"}, {"s"}));
  g.nodes.push_back(test::withInt(makeNode("Cast", {"s"}, {"y_int"}), "to", 6));
  g.nodes.push_back(makeNode("Mul", {"s", "k"}, {"y"}));
  g.outputs = {floatValue("y", {2, 3}), ValueInfo{"y_int", DataType::kInt32, false, {}}};
  for (size_t i = 0; i < g.nodes.size(); ++i) g.nodes[i].index = static_cast<int>(i);
  return net;
}

class TypedExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir =
        std::filesystem::temp_directory_path() /
        ("kiln_typed_export_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(m_dir);
  }
  void TearDown() override { std::filesystem::remove_all(m_dir); }

  std::string save(const Network& net) {
    const std::string path = (m_dir / "model.onnx").string();
    EXPECT_TRUE(exportOnnxFile(net, path).isOk());
    return path;
  }

  // Exports and imports the result back: the network and its inferred value types.
  Network roundTrip(const std::string& path, const NodePrecisions& p, TypedExportResult* result,
                    bool keepIo = false) {
    TypedExportOptions options;
    options.keepIoTypes = keepIo;
    auto exported = exportStronglyTypedOnnx(path, p, options);
    EXPECT_TRUE(exported.isOk()) << exported.status().message();
    *result = *exported;
    ImportOptions importOptions;
    importOptions.checkSupport = false;
    auto back = importOnnxBytes(exported->bytes, "", "export", importOptions);
    EXPECT_TRUE(back.isOk()) << back.status().message();
    auto types = inferShapes(*back);
    EXPECT_TRUE(types.isOk()) << types.status().message();
    m_types.clear();
    for (const auto& [name, v] : types->values) m_types[name] = v.type;
    return *back;
  }

  static const Node& nodeNamed(const Network& net, const std::string& name) {
    for (const Node& n : net.graph.nodes)
      if (n.displayName() == name) return n;
    ADD_FAILURE() << "no node " << name;
    return net.graph.nodes[0];
  }

  std::filesystem::path m_dir;
  std::map<std::string, DataType> m_types;
};

TEST_F(TypedExportTest, Fp16RegionWithFp32IslandGetsCastsAtBoundaries) {
  const std::string path = save(chain());
  NodePrecisions p;
  p.byNode = {{"a", DataType::kFloat16},
              {"Relu_1", DataType::kFloat32},
              {"s", DataType::kFloat16},
              {"y_int", DataType::kFloat16},
              {"y", DataType::kFloat16}};
  p.source = "test";
  TypedExportResult r;
  Network back = roundTrip(path, p, &r);
  // MatMul reads fp16 (x and w stored fp16: only reduced readers); Relu reads a cast to fp32.
  const Node& mm = nodeNamed(back, "a");
  EXPECT_EQ(m_types[mm.inputs[0]], DataType::kFloat16);
  EXPECT_EQ(back.graph.initializers.at("w").type(), DataType::kFloat16);
  EXPECT_EQ(back.graph.inputs[0].type, DataType::kFloat16);
  const Node& relu = nodeNamed(back, "Relu_1");  // the unnamed node got its display name
  EXPECT_EQ(relu.name, "Relu_1");
  EXPECT_EQ(m_types[relu.inputs[0]], DataType::kFloat32);
  EXPECT_EQ(m_types[relu.outputs[0]], DataType::kFloat32);
  // Add back in fp16; the Cast node keeps its float32 input; k clamped to fp16's max.
  const Node& add = nodeNamed(back, "s");
  EXPECT_EQ(m_types[add.inputs[0]], DataType::kFloat16);
  EXPECT_EQ(back.graph.initializers.at("bias").type(), DataType::kFloat16);
  const Node& cast = nodeNamed(back, "y_int");
  EXPECT_EQ(m_types[cast.inputs[0]], DataType::kFloat32);
  EXPECT_EQ(m_types["y_int"], DataType::kInt32);
  EXPECT_EQ(m_types["y"], DataType::kFloat16);
  const Tensor& k = back.graph.initializers.at("k");
  EXPECT_FLOAT_EQ(halfToFloat(k.data<uint16_t>()[0]), 65504.0f);
  EXPECT_EQ(r.clampedWeights, 3);
  EXPECT_EQ(r.reducedNodes, 3);
  EXPECT_EQ(r.castsInserted, 3);  // a->fp32 (Relu), r->fp16 (Add), s->fp32 (Cast)
  ASSERT_EQ(r.keptFloat32.size(), 1u);
  EXPECT_NE(r.keptFloat32[0].find("Cast"), std::string::npos);
}

TEST_F(TypedExportTest, KeepIoTypesKeepsFloat32InterfaceUnderTheOriginalNames) {
  const std::string path = save(chain());
  NodePrecisions p;
  for (const char* n : {"a", "Relu_1", "s", "y"}) p.byNode[n] = DataType::kFloat16;
  TypedExportResult r;
  Network back = roundTrip(path, p, &r, /*keepIo=*/true);
  EXPECT_EQ(back.graph.inputs[0].type, DataType::kFloat32);
  EXPECT_EQ(m_types["x"], DataType::kFloat32);
  EXPECT_EQ(m_types["y"], DataType::kFloat32);  // a Cast writes the output's own name
  EXPECT_EQ(m_types[nodeNamed(back, "y").outputs[0]], DataType::kFloat16);
  EXPECT_EQ(m_types[nodeNamed(back, "a").inputs[0]], DataType::kFloat16);
}

TEST_F(TypedExportTest, UndecidedNodesFollowTheirInputs) {
  const std::string path = save(chain());
  NodePrecisions p;
  p.byNode["a"] = DataType::kBFloat16;  // the rest follow MatMul's output
  TypedExportResult r;
  Network back = roundTrip(path, p, &r);
  EXPECT_EQ(m_types[nodeNamed(back, "Relu_1").inputs[0]], DataType::kBFloat16);
  EXPECT_EQ(m_types["y"], DataType::kBFloat16);
  EXPECT_EQ(back.graph.initializers.at("k").type(), DataType::kBFloat16);
  EXPECT_EQ(r.clampedWeights, 0);  // bf16 holds 1e6
}

// The TorchScript exporter's weight plumbing: b_copy = Identity(bias) read by the bias Add
// in front of the MatMul's output, Add(b_copy, a), as BERT's dense layers are written. Only
// the MatMul has a decision (a plan folds the Identity and records no precision for it):
// the Add follows the MatMul, not the copy of the weight, and the Identity takes the type
// its reader wants, so bias is stored fp16 and no Cast is written.
TEST_F(TypedExportTest, WeightPlumbingFollowsItsReadersAndTheAddFollowsTheMatMul) {
  Network net = linearInputs();
  Graph& g = net.graph;
  g.nodes.push_back(makeNode("Identity", {"bias"}, {"b_copy"}));
  g.nodes.push_back(makeNode("MatMul", {"x", "w"}, {"a"}));
  g.nodes.push_back(makeNode("Add", {"b_copy", "a"}, {"y"}));
  g.outputs = {floatValue("y", {2, 3})};
  for (size_t i = 0; i < g.nodes.size(); ++i) g.nodes[i].index = static_cast<int>(i);
  const std::string path = save(net);
  NodePrecisions p;
  p.byNode["a"] = DataType::kFloat16;
  TypedExportResult r;
  Network back = roundTrip(path, p, &r);
  EXPECT_EQ(r.castsInserted, 0);
  EXPECT_EQ(r.float32Nodes, 0);
  EXPECT_EQ(r.reducedNodes, 3);
  EXPECT_EQ(back.graph.initializers.at("bias").type(), DataType::kFloat16);
  EXPECT_EQ(m_types["b_copy"], DataType::kFloat16);
  EXPECT_EQ(m_types["y"], DataType::kFloat16);
}

TEST_F(TypedExportTest, ConstraintsRulesBindNodesAndFreeNodesTakeTheReducedType) {
  Network net = chain();
  PrecisionConstraints c;
  c.layerPrecisions = {{"*", DataType::kFloat16}, {"s", DataType::kFloat32}};
  NodePrecisions p = nodePrecisionsFromConstraints(c, net, "c.json", DataType::kUndefined);
  EXPECT_EQ(p.byNode.at("a"), DataType::kFloat16);
  EXPECT_EQ(p.byNode.at("s"), DataType::kFloat32);
  EXPECT_EQ(p.source, "constraints 'c.json'");
  NodePrecisions bf = nodePrecisionsFromConstraints(c, net, "c.json", DataType::kBFloat16);
  EXPECT_EQ(bf.byNode.at("a"), DataType::kBFloat16);
  c.mode = ConstraintMode::kNone;
  NodePrecisions none = nodePrecisionsFromConstraints(c, net, "c.json", DataType::kUndefined);
  EXPECT_EQ(none.byNode.at("s"), DataType::kFloat16);
  EXPECT_EQ(none.warnings.size(), 1u);
}

TEST_F(TypedExportTest, PlanLayersGiveTheirPrecisionToEveryFusedNode) {
  Network net = chain();
  BuildRecord record;
  record.config.fp16 = true;
  LayerRecord fused;
  fused.name = "a + Relu_1";
  fused.sourceNodes = {"a", "Relu_1"};
  fused.precision = DataType::kFloat32;
  LayerRecord add;
  add.name = "s";
  add.sourceNodes = {"s"};
  add.precision = DataType::kFloat16;
  LayerRecord q;
  q.name = "y";
  q.sourceNodes = {"y"};
  q.precision = DataType::kInt8;
  record.layers = {fused, add, q};
  auto p = nodePrecisionsFromPlan(record, net, "p.kiln", DataType::kUndefined);
  ASSERT_TRUE(p.isOk()) << p.status().message();
  EXPECT_EQ(p->byNode.at("a"), DataType::kFloat32);
  EXPECT_EQ(p->byNode.at("Relu_1"), DataType::kFloat32);
  EXPECT_EQ(p->byNode.at("s"), DataType::kFloat16);
  EXPECT_EQ(p->byNode.at("y"), DataType::kFloat16);  // INT8 written in the build's fp16
  EXPECT_EQ(p->warnings.size(), 1u);
  record.layers = {};
  EXPECT_FALSE(nodePrecisionsFromPlan(record, net, "p.kiln", DataType::kUndefined).isOk());
  LayerRecord other;
  other.sourceNodes = {"elsewhere"};
  record.layers = {other};
  auto foreign = nodePrecisionsFromPlan(record, net, "p.kiln", DataType::kUndefined);
  ASSERT_FALSE(foreign.isOk());
  EXPECT_NE(foreign.status().message().find("another model"), std::string::npos);
}

// --layer-output-types: Relu computes in fp32 and stores its output in fp16 (a Cast after
// it, under the value's own name); the fp16 Add reads that directly, the fp32 Mul through
// a Cast back. From a constraints file's rule and from a plan layer's output type alike.
TEST_F(TypedExportTest, OutputTypeOfItsOwnIsACastAfterTheNode) {
  Network net = chain();
  const std::string path = save(net);
  PrecisionConstraints c;
  c.layerPrecisions = {
      {"*", DataType::kFloat16}, {"Relu_1", DataType::kFloat32}, {"y", DataType::kFloat32}};
  c.layerOutputTypes = {{"Relu_1", DataType::kFloat16}};
  NodePrecisions p = nodePrecisionsFromConstraints(c, net, "c.json", DataType::kUndefined);
  ASSERT_EQ(p.storedTypes.size(), 1u);
  EXPECT_EQ(p.storedTypes.at("r"), DataType::kFloat16);
  TypedExportResult r;
  Network back = roundTrip(path, p, &r);
  const Node& relu = nodeNamed(back, "Relu_1");
  EXPECT_EQ(m_types[relu.inputs[0]], DataType::kFloat32);
  ASSERT_NE(relu.outputs[0], "r");  // the node writes a renamed float32 value
  EXPECT_EQ(m_types[relu.outputs[0]], DataType::kFloat32);
  EXPECT_EQ(m_types["r"], DataType::kFloat16);  // stored fp16 by the Cast after it
  const Node& add = nodeNamed(back, "s");
  EXPECT_EQ(add.inputs[0], "r");
  const Node& mul = nodeNamed(back, "y");
  EXPECT_EQ(m_types[mul.inputs[0]], DataType::kFloat32);
  int castsOfRelu = 0;
  for (const Node& n : back.graph.nodes)
    if (n.opType == "Cast" && n.inputs[0] == relu.outputs[0]) ++castsOfRelu;
  EXPECT_EQ(castsOfRelu, 1);
  // Without the output type, Relu writes "r" in float32 itself.
  p.storedTypes.clear();
  Network plain = roundTrip(path, p, &r);
  EXPECT_EQ(nodeNamed(plain, "Relu_1").outputs[0], "r");
  EXPECT_EQ(m_types["r"], DataType::kFloat32);

  BuildRecord record;
  record.config.fp16 = true;
  LayerRecord relu32;
  relu32.name = "Relu_1";
  relu32.sourceNodes = {"Relu_1"};
  relu32.precision = DataType::kFloat32;
  relu32.outputType = DataType::kFloat16;
  TensorRecord out;
  out.name = "r";
  relu32.outputs = {out};
  LayerRecord add16 = relu32;
  add16.name = add16.sourceNodes[0] = "s";
  add16.precision = add16.outputType = DataType::kFloat16;
  record.layers = {relu32, add16};
  auto fromPlan = nodePrecisionsFromPlan(record, net, "p.kiln", DataType::kUndefined);
  ASSERT_TRUE(fromPlan.isOk()) << fromPlan.status().message();
  EXPECT_EQ(fromPlan->storedTypes, (std::map<std::string, DataType>{{"r", DataType::kFloat16}}));
  auto asBf16 = nodePrecisionsFromPlan(record, net, "p.kiln", DataType::kBFloat16);
  ASSERT_TRUE(asBf16.isOk());
  EXPECT_EQ(asBf16->storedTypes.at("r"), DataType::kBFloat16);
}

TEST_F(TypedExportTest, ValuesASubgraphReadsKeepFloat32UnderTheirName) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {floatValue("x", {3}), ValueInfo{"cond", DataType::kBool, true, {}}};
  g.nodes.push_back(makeNode("Relu", {"x"}, {"r"}));
  auto branch = [](const std::string& op) {
    auto body = std::make_shared<Graph>();
    body->nodes.push_back(makeNode(op, {"r"}, {op + "_out"}));
    body->outputs = {floatValue(op + "_out", {3})};
    return body;
  };
  Node ifNode = makeNode("If", {"cond"}, {"y"});
  ifNode.attributes["then_branch"].kind = Attribute::Kind::kGraph;
  ifNode.attributes["then_branch"].g = branch("Neg");
  ifNode.attributes["else_branch"].kind = Attribute::Kind::kGraph;
  ifNode.attributes["else_branch"].g = branch("Abs");
  g.nodes.push_back(ifNode);
  g.outputs = {floatValue("y", {3})};
  for (size_t i = 0; i < g.nodes.size(); ++i) g.nodes[i].index = static_cast<int>(i);
  const std::string path = save(net);
  NodePrecisions p;
  p.byNode = {{"r", DataType::kFloat16}, {"y", DataType::kFloat16}};
  TypedExportResult r;
  Network back = roundTrip(path, p, &r);
  EXPECT_EQ(m_types["r"], DataType::kFloat32);  // the bodies read "r": a Cast writes it
  EXPECT_EQ(m_types[nodeNamed(back, "r").outputs[0]], DataType::kFloat16);
  EXPECT_EQ(m_types["y"], DataType::kFloat32);
  EXPECT_EQ(r.keptFloat32.size(), 1u);  // the If
}

TEST_F(TypedExportTest, Bf16NeedsOpset13) {
  Network net = chain();
  net.opsets[""] = 11;
  const std::string path = save(net);
  NodePrecisions p;
  p.byNode["a"] = DataType::kBFloat16;
  auto exported = exportStronglyTypedOnnx(path, p);
  ASSERT_FALSE(exported.isOk());
  EXPECT_NE(exported.status().message().find("opset 13"), std::string::npos);
  EXPECT_NE(exported.status().message().find("model.onnx"), std::string::npos);
}

TEST_F(TypedExportTest, QdqExportQuantizesWeightsPerOutputChannel) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {floatValue("x", {2, 4})};
  g.initializers["w"] = filled({4, 3}, -1.0f);  // -1 .. 1.75 by 0.25, row-major [K=4, N=3]
  g.nodes.push_back(makeNode("MatMul", {"x", "w"}, {"y"}));
  g.nodes.push_back(makeNode("Relu", {"y"}, {"z"}));
  g.outputs = {floatValue("z", {2, 3})};
  const std::string path = save(net);
  CalibrationTable table;
  table.method = "minmax";
  table.tensors["x"].amax = 2.54;
  auto exported = exportQdqOnnx(path, table, "c.cache");
  ASSERT_TRUE(exported.isOk()) << exported.status().message();
  EXPECT_EQ(exported->activationPairs, 1);
  EXPECT_EQ(exported->weightDequantizers, 1);
  ImportOptions options;
  options.checkSupport = false;
  auto back = importOnnxBytes(exported->bytes, "", "export", options);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  const Graph& b = back->graph;
  EXPECT_FALSE(b.initializers.count("w"));  // the float weight is no longer read
  EXPECT_FLOAT_EQ(b.initializers.at("x_int8_scale").data<float>()[0], 0.02f);
  // Column n holds w[k][n] = -1 + 0.25 * (3k + n): max |w| is 1.25 (n=0), 1.5, 1.75.
  const Tensor& scales = b.initializers.at("w_scale");
  ASSERT_EQ(scales.numel(), 3);
  EXPECT_FLOAT_EQ(scales.data<float>()[0], 1.25f / 127);
  EXPECT_FLOAT_EQ(scales.data<float>()[1], 1.5f / 127);
  EXPECT_FLOAT_EQ(scales.data<float>()[2], 1.75f / 127);
  const Tensor& q = b.initializers.at("w_int8");
  ASSERT_EQ(q.type(), DataType::kInt8);
  EXPECT_EQ(q.data<int8_t>()[0], -102);  // -1 / (1.25/127) = -101.6
  EXPECT_EQ(q.data<int8_t>()[4], 0);
  EXPECT_EQ(q.data<int8_t>()[7], 64);    // 0.75 / (1.5/127) = 63.5, rounded to even: 64
  EXPECT_EQ(q.data<int8_t>()[9], 127);   // 1.25 at k=3, n=0: the channel's max
  EXPECT_EQ(q.data<int8_t>()[11], 127);  // 1.75 / (1.75/127)
  const Node& dq = nodeNamed(*back, "y_weight_DQ");
  EXPECT_EQ(dq.attrInt("axis", -1), 1);  // MatMul's output channels are columns
  EXPECT_EQ(nodeNamed(*back, "y").inputs[1], dq.outputs[0]);
}

// FP8 E4M3 from the same calibration cache: the MatMul's input pair and its weights in
// float8e4m3fn with per-tensor scales (amax/448), the convolution left float (listed);
// the export runs on the CPU reference within FP8's error of the float model. Models
// below opset 19 are refused.
TEST_F(TypedExportTest, Fp8QdqExportForGemmsOnly) {
  Network net;
  net.opsets[""] = 19;
  Graph& g = net.graph;
  g.inputs = {floatValue("x", {2, 4}), floatValue("c", {1, 4, 5, 5})};
  g.initializers["w"] = filled({4, 3}, -1.0f);  // -1 .. 1.75: max |w| 1.75
  g.initializers["wc"] = filled({2, 4, 3, 3}, -4.0f);
  g.nodes.push_back(makeNode("MatMul", {"x", "w"}, {"y"}));
  g.nodes.push_back(makeNode("Relu", {"y"}, {"z"}));
  g.nodes.push_back(makeNode("Conv", {"c", "wc"}, {"co"}));
  g.outputs = {floatValue("z", {2, 3}), floatValue("co", {1, 2, 3, 3})};
  for (size_t i = 0; i < g.nodes.size(); ++i) g.nodes[i].index = static_cast<int>(i);
  const std::string path = save(net);
  CalibrationTable table;
  table.method = "minmax";
  table.tensors["x"].amax = 2.24;
  table.tensors["c"].amax = 3.0;
  auto exported = exportQdqOnnx(path, table, "c.cache", QdqFormat::kFp8);
  ASSERT_TRUE(exported.isOk()) << exported.status().message();
  EXPECT_EQ(exported->activationPairs, 1);
  EXPECT_EQ(exported->weightDequantizers, 1);
  ASSERT_EQ(exported->floatLayers.size(), 1u);
  EXPECT_NE(exported->floatLayers[0].find("co: FP8 Q/DQ is written for MatMul/Gemm"),
            std::string::npos)
      << exported->floatLayers[0];
  ImportOptions options;
  options.checkSupport = false;
  auto back = importOnnxBytes(exported->bytes, "", "export", options);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  const Graph& b = back->graph;
  int quantizers = 0;
  for (const Node& n : b.nodes) {
    if (n.opType != "QuantizeLinear" && n.opType != "DequantizeLinear") continue;
    quantizers += n.opType == "QuantizeLinear";
    ASSERT_EQ(n.inputs.size(), 3u) << n.describe();
    EXPECT_EQ(b.initializers.at(n.inputs[2]).type(), DataType::kFp8E4M3) << n.describe();
    if (n.inputs[0] == "x")
      EXPECT_FLOAT_EQ(b.initializers.at(n.inputs[1]).data<float>()[0], 2.24f / 448);
  }
  EXPECT_EQ(quantizers, 1);  // x's; the convolution reads c in float
  EXPECT_EQ(nodeNamed(*back, "co").inputs[0], "c");
  const Tensor& wq = b.initializers.at("w_fp8");
  ASSERT_EQ(wq.type(), DataType::kFp8E4M3);
  EXPECT_FLOAT_EQ(b.initializers.at("w_fp8_scale").data<float>()[0], 1.75f / 448);
  const Tensor decoded = castTensor(wq, DataType::kFloat32);
  EXPECT_FLOAT_EQ(decoded.data<float>()[0], -256.0f);  // -1 / (1.75/448), exact in E4M3
  EXPECT_FLOAT_EQ(decoded.data<float>()[11], 448.0f);  // 1.75: the tensor's max
  // The export computes what the float model does, within FP8's error.
  std::map<std::string, Tensor> inputs = {{"x", filled({2, 4}, -1.1f)},
                                          {"c", filled({1, 4, 5, 5}, -3.0f)}};
  for (int64_t i = 0; i < inputs["c"].numel(); ++i) inputs["c"].data<float>()[i] *= 0.03f;
  std::vector<NamedTensor> want, got;
  ASSERT_TRUE(ReferenceBackend(net).run(inputs, &want).isOk());
  Status ran = ReferenceBackend(*back).run(inputs, &got);
  ASSERT_TRUE(ran.isOk()) << ran.message();
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < want.size(); ++o) {
    float maxRef = 0, maxErr = 0;
    for (int64_t i = 0; i < want[o].tensor.numel(); ++i) {
      const float r = want[o].tensor.data<float>()[i], v = got[o].tensor.data<float>()[i];
      maxRef = std::max(maxRef, std::fabs(r));
      maxErr = std::max(maxErr, std::fabs(r - v));
    }
    EXPECT_GT(maxRef, 0.1f) << want[o].name;
    EXPECT_LT(maxErr, 0.08f * maxRef) << want[o].name;  // E4M3: 3 mantissa bits
    if (want[o].name == "co") EXPECT_EQ(maxErr, 0.f);   // left float
  }
  net.opsets[""] = 17;
  const std::string old = save(net);
  auto refused = exportQdqOnnx(old, table, "c.cache", QdqFormat::kFp8);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("opset 19"), std::string::npos);
}

// --from PLAN --calib-cache C: an `--int8 --fp16` plan in one strongly typed model. The
// INT8 layer (MatMul + Relu) stays float32 between its Q/DQ pairs (no Cast between the
// DequantizeLinear and the MatMul, where it would keep TensorRT from fusing them), the
// FP16 layer (the second MatMul: the cache has a range for its input, but the plan ran it
// in fp16, so calibrationFollowingPlan pins it) computes in fp16 behind a Cast, and no
// INT8 warning is given.
TEST_F(TypedExportTest, QdqPairsWithThePlansFp16Layers) {
  Network net = linearInputs();
  Graph& g = net.graph;
  g.initializers["w2"] = filled({3, 2}, -0.5f);
  g.nodes.push_back(makeNode("MatMul", {"x", "w"}, {"y"}));
  g.nodes.push_back(makeNode("Relu", {"y"}, {"z"}));
  g.nodes.push_back(makeNode("MatMul", {"z", "w2"}, {"u"}));
  g.outputs = {floatValue("u", {2, 2})};
  for (size_t i = 0; i < g.nodes.size(); ++i) g.nodes[i].index = static_cast<int>(i);
  const std::string path = save(net);
  BuildRecord record;
  record.config.fp16 = true;
  record.config.int8 = true;
  LayerRecord int8Layer;
  int8Layer.name = "y + z";
  int8Layer.sourceNodes = {"y", "z"};
  int8Layer.precision = DataType::kInt8;
  LayerRecord fp16Layer;
  fp16Layer.name = "u";
  fp16Layer.sourceNodes = {"u"};
  fp16Layer.precision = DataType::kFloat16;
  record.layers = {int8Layer, fp16Layer};
  auto p = nodePrecisionsFromPlan(record, net, "p.kiln", DataType::kUndefined,
                                  QuantizedLayers::kAsQdqFloat32);
  ASSERT_TRUE(p.isOk()) << p.status().message();
  EXPECT_TRUE(p->warnings.empty());
  EXPECT_EQ(p->byNode.at("y"), DataType::kFloat32);
  EXPECT_EQ(p->byNode.at("z"), DataType::kFloat32);
  EXPECT_EQ(p->byNode.at("u"), DataType::kFloat16);
  CalibrationTable table;
  table.method = "minmax";
  table.tensors["x"].amax = 2.54;
  table.tensors["z"].amax = 3.0;  // a range for u's input too: the plan ran u in fp16
  EXPECT_EQ(exportQdqOnnx(path, table, "c.cache")->activationPairs, 2);
  const CalibrationTable followed = calibrationFollowingPlan(table, record, net);
  EXPECT_EQ(followed.tensors.at("z").pinned, DataType::kFloat32);
  EXPECT_EQ(followed.tensors.at("x").pinned, DataType::kUndefined);
  auto qdq = exportQdqOnnx(path, followed, "c.cache");
  ASSERT_TRUE(qdq.isOk()) << qdq.status().message();
  EXPECT_EQ(qdq->activationPairs, 1);  // x's only: the pair on z would make u INT8
  auto typed = exportStronglyTypedOnnxBytes(qdq->bytes, path, *p);
  ASSERT_TRUE(typed.isOk()) << typed.status().message();
  EXPECT_EQ(typed->reducedNodes, 1);
  ImportOptions options;
  options.checkSupport = false;
  auto back = importOnnxBytes(typed->bytes, "", "export", options);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  auto types = inferShapes(*back);
  ASSERT_TRUE(types.isOk()) << types.status().message();
  auto typeOf = [&](const std::string& value) { return types->values.at(value).type; };
  auto producer = [&](const std::string& value) -> std::string {
    for (const Node& n : back->graph.nodes)
      for (const std::string& o : n.outputs)
        if (o == value) return n.opType;
    return "";
  };
  const Node& y = nodeNamed(*back, "y");
  EXPECT_EQ(producer(y.inputs[0]), "DequantizeLinear");
  EXPECT_EQ(producer(y.inputs[1]), "DequantizeLinear");
  EXPECT_EQ(typeOf(y.outputs[0]), DataType::kFloat32);
  EXPECT_EQ(typeOf(nodeNamed(*back, "z").outputs[0]), DataType::kFloat32);
  const Node& u = nodeNamed(*back, "u");
  EXPECT_EQ(producer(u.inputs[0]), "Cast");
  EXPECT_EQ(typeOf(u.inputs[0]), DataType::kFloat16);
  EXPECT_EQ(typeOf(u.inputs[1]), DataType::kFloat16);  // w2 stored fp16
  // The export still computes the model within INT8's and FP16's error.
  std::map<std::string, Tensor> inputs = {{"x", filled({2, 4}, -1.0f)}};
  std::vector<NamedTensor> want, got;
  ASSERT_TRUE(ReferenceBackend(net).run(inputs, &want).isOk());
  Status ran = ReferenceBackend(*back).run(inputs, &got);
  ASSERT_TRUE(ran.isOk()) << ran.message();
  const Tensor out = castTensor(got[0].tensor, DataType::kFloat32);
  float maxRef = 0, maxErr = 0;
  for (int64_t i = 0; i < want[0].tensor.numel(); ++i) {
    const float r = want[0].tensor.data<float>()[i], v = out.data<float>()[i];
    maxRef = std::max(maxRef, std::fabs(r));
    maxErr = std::max(maxErr, std::fabs(r - v));
  }
  EXPECT_GT(maxRef, 0.1f);
  EXPECT_LT(maxErr, 0.05f * maxRef);
}

}  // namespace
}  // namespace kiln
