// Exporter tests on Networks built in code, for what the fixture models do not hold:
// every attribute kind, string and sub-byte tensors, symbolic expressions and anonymous
// dims, a custom domain known only from its node, IR version 0, and exportOnnxFile.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "kiln/onnx_export.h"
#include "kiln/onnx_import.h"
#include "kiln/reference_backend.h"
#include "network_compare.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

Tensor bytesTensor(DataType type, const Shape& shape, const std::vector<uint8_t>& bytes) {
  return Tensor::fromVector(type, shape, bytes);
}

Attribute attr(Attribute::Kind kind) {
  Attribute a;
  a.kind = kind;
  return a;
}

Node makeNode(const std::string& opType, std::vector<std::string> inputs,
              std::vector<std::string> outputs, const std::string& name = "") {
  Node node;
  node.name = name;
  node.opType = opType;
  node.opset = 17;
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  return node;
}

// A subgraph y_<name> = Identity(x_<name>) of two floats.
std::shared_ptr<Graph> identityGraph(const std::string& name) {
  auto g = std::make_shared<Graph>();
  g->name = name;
  g->inputs.push_back({"x_" + name, DataType::kFloat32, true, {DimExpr(2)}});
  g->outputs.push_back({"y_" + name, DataType::kFloat32, true, {DimExpr(2)}});
  g->nodes.push_back(makeNode("Identity", {"x_" + name}, {"y_" + name}));
  return g;
}

std::map<std::string, Attribute> everyAttributeKind() {
  using K = Attribute::Kind;
  std::map<std::string, Attribute> attrs;
  attrs["f"] = attr(K::kFloat);
  attrs["f"].f = -0.f;
  attrs["i"] = attr(K::kInt);
  attrs["i"].i = -(int64_t{1} << 40);
  attrs["s"] = attr(K::kString);
  attrs["s"].s = std::string("nul\0inside", 10);
  attrs["floats"] = attr(K::kFloats);
  attrs["floats"].floats = {1.5f, -2.25f, 1e-30f};
  attrs["ints"] = attr(K::kInts);
  attrs["ints"].ints = {1, -2, 3};
  attrs["no_ints"] = attr(K::kInts);  // an empty list keeps its kind
  attrs["strings"] = attr(K::kStrings);
  attrs["strings"].strings = {"a", "", "c"};
  attrs["t"] = attr(K::kTensor);
  attrs["t"].t = Tensor::fromVector(DataType::kFloat32, {2, 2}, std::vector<float>{1, 2, 3, 4});
  attrs["tensors"] = attr(K::kTensors);
  attrs["tensors"].tensors = {Tensor::int64Vector({7, 8}), stringTensor({1}, {"word"})};
  attrs["g"] = attr(K::kGraph);
  attrs["g"].g = identityGraph("body");
  attrs["graphs"] = attr(K::kGraphs);
  attrs["graphs"].graphs = {identityGraph("g0"), identityGraph("g1")};
  return attrs;
}

// A custom node with every attribute kind, values of unusual types and shapes.
Network builtNetwork() {
  Network net;
  net.opsets = {{"", 17}};  // com.kiln.test is known only from its node
  net.producerName = "kiln-tests";
  Graph& g = net.graph;
  g.name = "built";
  const DimExpr batch = DimExpr::symbol("batch");
  g.inputs = {{"x", DataType::kFloat32, true, {batch, DimExpr(3)}},
              {"scalar", DataType::kInt64, true, {}},
              {"open", DataType::kUndefined, false, {}}};
  g.outputs = {{"y",
                DataType::kFloat32,
                true,
                {batch * DimExpr(2), DimExpr::unknown(), DimExpr::floorDiv(batch, 2) + DimExpr(1)}},
               {"z", DataType::kString, false, {}}};
  g.valueInfo["mid"] = {
      "mid", DataType::kFloat16, true, {DimExpr::max(batch, DimExpr::symbol("seq")), DimExpr(0)}};
  g.initializers["names"] = stringTensor({2}, {"alpha", "b\xc3\xa9ta"});
  g.initializers["half"] = bytesTensor(DataType::kFloat16, {2}, {0x00, 0x3c, 0x00, 0xc0});
  g.initializers["nibbles"] = bytesTensor(DataType::kInt4, {3}, {0xf8, 0x07, 0xff});
  g.initializers["flags"] = bytesTensor(DataType::kBool, {2, 1}, {1, 0});
  g.initializers["empty"] = Tensor(DataType::kFloat32, {0, 4});
  Node custom = makeNode("Mystery", {"x", "", "names", "half", "nibbles"}, {"y", "z"}, "custom0");
  custom.domain = "com.kiln.test";
  custom.opset = 2;
  custom.attributes = everyAttributeKind();
  g.nodes.push_back(custom);
  return net;
}

TEST(ExportBuilt, EveryAttributeKindTypeAndDimSurvives) {
  const Network original = builtNetwork();
  Result<std::string> bytes = exportOnnxBytes(original);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
  ImportOptions options;
  options.checkSupport = false;  // Mystery runs nowhere; only the structure matters here
  Result<Network> back = importOnnxBytes(bytes.value(), "", "built.onnx", options);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  expectSameGraph(back->graph, original.graph);
  const std::map<std::string, int> opsets = {{"", 17}, {"com.kiln.test", 2}};
  EXPECT_EQ(back->opsets, opsets);
  EXPECT_EQ(back->irVersion, 8);  // opset 17 shipped with IR 8
  EXPECT_EQ(back->producerName, "kiln-tests");
  // The expression dims print the same after the trip; the anonymous one is anonymous.
  const SymbolicShape& y = back->graph.outputs[0].shape;
  EXPECT_EQ(y[0].toString(), (DimExpr::symbol("batch") * DimExpr(2)).toString());
  EXPECT_NE(y[1].toString(), original.graph.outputs[0].shape[1].toString());
}

TEST(ExportBuilt, AnOldIrVersionListsInitializersAsInputs) {
  Network network = builtNetwork();
  network.irVersion = 3;
  ImportOptions options;
  options.checkSupport = false;
  Result<std::string> bytes = exportOnnxBytes(network);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
  Result<Network> back = importOnnxBytes(bytes.value(), "", "ir3.onnx", options);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  expectSameGraph(back->graph, network.graph);  // the importer drops them from the inputs again
  EXPECT_EQ(back->irVersion, 3);
}

// Strings have no raw bytes: they stay inline even when every weight goes to the sink.
TEST(ExportBuilt, StringTensorsStayInlineAndRun) {
  Network net;
  net.opsets = {{"", 17}};
  net.graph.initializers["words"] = stringTensor({3}, {"kiln", "", "f\xc3\xbcr"});
  net.graph.initializers["w"] =
      Tensor::fromVector(DataType::kFloat32, {2}, std::vector<float>{1, 2});
  net.graph.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2)}}};
  Node constant = makeNode("Constant", {}, {"c"}, "const");
  constant.attributes["value"] = attr(Attribute::Kind::kTensor);
  constant.attributes["value"].t = stringTensor({2}, {"one", "two"});
  net.graph.nodes = {makeNode("Identity", {"words"}, {"y"}), constant,
                     makeNode("Mul", {"x", "w"}, {"m"})};
  net.graph.outputs = {{"y", DataType::kString, true, {DimExpr(3)}},
                       {"c", DataType::kString, true, {DimExpr(2)}},
                       {"m", DataType::kFloat32, true, {DimExpr(2)}}};
  std::vector<std::string> sunk;
  std::string blob;
  ExportOptions options;
  options.weightSink = [&](const std::string& name, const Tensor&,
                           const std::string& raw) -> Result<int64_t> {
    sunk.push_back(name);
    blob += raw;
    return int64_t{0};
  };
  Result<std::string> bytes = exportOnnxBytes(net, options);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
  EXPECT_EQ(sunk, std::vector<std::string>{"w"});
  ImportOptions importOptions;
  importOptions.externalData = [&](const std::string&, int64_t offset,
                                   int64_t length) -> Result<std::string> {
    return blob.substr(offset, length);
  };
  Result<Network> back = importOnnxBytes(bytes.value(), "", "strings.onnx", importOptions);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  expectSameGraph(back->graph, net.graph);

  const std::map<std::string, Tensor> inputs = {
      {"x", Tensor::fromVector(DataType::kFloat32, {2}, std::vector<float>{3, -4})}};
  ReferenceBackend before(net), after(back.value());
  std::vector<NamedTensor> want, got;
  ASSERT_TRUE(before.run(inputs, &want).isOk());
  ASSERT_TRUE(after.run(inputs, &got).isOk());
  expectSameOutputs(got, want);
  EXPECT_EQ(got[0].tensor.strings()[2], "f\xc3\xbcr");
  EXPECT_EQ(got[1].tensor.strings()[1], "two");
  EXPECT_FLOAT_EQ(got[2].tensor.data<float>()[1], -8.f);
}

TEST(ExportBuilt, FileRoundTripAndUnwritablePath) {
  const Network original = builtNetwork();
  const std::string path = ::testing::TempDir() + "/kiln_export_built.onnx";
  ASSERT_TRUE(exportOnnxFile(original, path).isOk());
  ImportOptions options;
  options.checkSupport = false;
  Result<Network> back = importOnnxFile(path, options);
  std::filesystem::remove(path);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  expectSameGraph(back->graph, original.graph);

  const std::string bad = ::testing::TempDir() + "/no_such_folder/x.onnx";
  Status status = exportOnnxFile(original, bad);
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  EXPECT_NE(status.message().find(bad), std::string::npos) << status.toString();
}

}  // namespace
}  // namespace kiln::test
