// Plugins end to end on the CPU: loading libraries, static registration, ONNX
// mapping (attributes -> fields, versions, namespaces), the reference backend,
// symbolic shapes, INT8 scales, the channels-last format, faults that must become
// errors naming the plugin, and the builder's profile configuration and plan
// round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/plugin/static_test_plugins.h"
#include "kiln/builder.h"
#include "kiln/onnx_export.h"
#include "kiln/onnx_import.h"
#include "kiln/plugin_registry.h"
#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

const std::string kModels = KILN_EXAMPLE_MODELS_DIR;

class PluginTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(loadPluginLibrary(KILN_EXAMPLE_PLUGINS).isOk());
    ASSERT_TRUE(loadPluginLibrary(KILN_TEST_PLUGINS).isOk());
  }
};

ValueInfo floatInput(const std::string& name, const SymbolicShape& shape) {
  return {name, DataType::kFloat32, true, shape};
}

Attribute text(const std::string& s) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = s;
  return a;
}

// One plugin node reading `inputs` (graph inputs) and writing `outputs` (graph outputs).
Network pluginNetwork(const std::string& opType, const std::string& domain,
                      std::vector<ValueInfo> inputs, std::vector<std::string> outputs,
                      std::map<std::string, Attribute> attributes = {}) {
  Network net;
  net.irVersion = 8;
  net.opsets[""] = 17;
  if (!domain.empty()) net.opsets[domain] = 1;
  Node node;
  node.name = "plugin_node";
  node.opType = opType;
  node.domain = domain;
  node.opset = 1;
  for (const ValueInfo& in : inputs) node.inputs.push_back(in.name);
  node.outputs = outputs;
  node.attributes = std::move(attributes);
  net.graph.inputs = std::move(inputs);
  for (const std::string& out : outputs) net.graph.outputs.push_back({out, DataType::kFloat32});
  net.graph.nodes.push_back(node);
  return net;
}

Result<std::vector<NamedTensor>> runOnCpu(const Network& net,
                                          const std::map<std::string, Tensor>& inputs,
                                          const std::vector<LayerImplementation>& layers = {}) {
  ReferenceBackend backend(net);
  std::vector<NamedTensor> outputs;
  ReferenceRunOptions options;
  options.layerImplementations = layers;
  KILN_RETURN_IF_ERROR(backend.run(inputs, &outputs, options));
  return outputs;
}

Network faulty(const std::string& fault, SymbolicShape shape = {DimExpr(3), DimExpr(4)}) {
  return pluginNetwork("Faulty", "kiln.test", {floatInput("x", shape)}, {"y"},
                       {{"fault", text(fault)}});
}

std::string runError(const Network& net) {
  auto out = runOnCpu(net, {{"x", randomTensor(DataType::kFloat32, {3, 4}, 7)}});
  return out.isOk() ? "(ran)" : out.status().message();
}

TEST_F(PluginTest, LibrariesRegisterTheirCreatorsWithTypedFields) {
  const size_t libraries = loadedPluginLibraries().size();
  ASSERT_TRUE(loadPluginLibrary(KILN_EXAMPLE_PLUGINS).isOk());  // a second load is a no-op
  EXPECT_EQ(loadedPluginLibraries().size(), libraries);
  bool sawPool = false, sawStatic = false;
  for (const PluginCreatorInfo& c : registeredPlugins()) {
    if (c.name == "QuantizedPool") {
      sawPool = true;
      EXPECT_EQ(c.pluginNamespace, "kiln.examples");
      EXPECT_NE(c.library.find("libkiln_example_plugins"), std::string::npos);
      ASSERT_EQ(c.fields.size(), 3u);
      EXPECT_EQ(c.fields[0].name, "kernel_shape");
      EXPECT_EQ(c.fields[0].type, "int64");
      EXPECT_EQ(c.fields[0].length, 2);
      EXPECT_EQ(c.fields[2].type, "string");
    }
    if (c.name == "RangeProbe") {
      sawStatic = true;  // KILN_REGISTER_PLUGIN_CREATOR ran before main()
      EXPECT_TRUE(c.library.empty());
      EXPECT_EQ(c.pluginNamespace, "kiln.test.static");
    }
  }
  EXPECT_TRUE(sawPool);
  EXPECT_TRUE(sawStatic);
}

TEST_F(PluginTest, FilesThatAreNotPluginLibrariesAreRefusedByName) {
  Status missing = loadPluginLibrary("/no/such/libplugin.so");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("/no/such/libplugin.so"), std::string::npos);
  const std::string garbage =
      (std::filesystem::temp_directory_path() / "kiln_not_a_library.so").string();
  std::ofstream(garbage) << "not an ELF file";
  Status bad = loadPluginLibrary(garbage);
  EXPECT_NE(bad.message().find("cannot load plugin library"), std::string::npos) << bad.message();
  const std::string libm = "/lib/x86_64-linux-gnu/libm.so.6";
  if (std::filesystem::exists(libm)) {
    Status notPlugin = loadPluginLibrary(libm);
    EXPECT_NE(notPlugin.message().find("not a Kiln plugin library"), std::string::npos)
        << notPlugin.message();
  }
}

TEST_F(PluginTest, ExampleModelsImportWithTheirNodesMappedToPlugins) {
  for (const char* name : {"copy_concat", "quantized_pool_max", "quantized_pool_average"}) {
    auto net = importOnnxFile(kModels + "/" + name + "/model.onnx");
    ASSERT_TRUE(net.isOk()) << net.status().message();
    int plugins = 0;
    for (const Node& node : net->graph.nodes) plugins += isPluginNode(node) ? 1 : 0;
    EXPECT_EQ(plugins, 1) << name;
  }
  // The Q/DQ neighbours' scales became the plugin's INT8 scales (input, then output).
  auto pool = importOnnxFile(kModels + "/quantized_pool_average/model.onnx");
  ASSERT_TRUE(pool.isOk());
  const Node& node = pool->graph.nodes[1];
  EXPECT_EQ(node.attrFloats(kPluginScalesAttribute), (std::vector<float>{0.02f, 0.01f}));
}

// Builds a QuantizedPool model with the given attributes and imports it.
Status importPool(std::map<std::string, Attribute> attributes) {
  Network net = pluginNetwork("QuantizedPool", "kiln.examples",
                              {floatInput("x", {DimExpr(1), DimExpr(2), DimExpr(4), DimExpr(4)})},
                              {"y"}, std::move(attributes));
  auto bytes = exportOnnxBytes(net);
  if (!bytes.isOk()) return bytes.status();
  return importOnnxBytes(*bytes, "", "pool.onnx").status();
}

TEST_F(PluginTest, AttributesBecomeFieldsAndMismatchesNameTheAttribute) {
  Attribute kernel;
  kernel.kind = Attribute::Kind::kInts;
  kernel.ints = {2, 2};
  EXPECT_TRUE(importPool({{"kernel_shape", kernel}, {"mode", text("max")}}).isOk());

  Status unknown = importPool({{"kernel_shape", kernel}, {"padding", kernel}});
  EXPECT_NE(unknown.message().find("attribute 'padding'"), std::string::npos) << unknown.message();
  EXPECT_NE(unknown.message().find("kernel_shape (int64)"), std::string::npos);

  Attribute floats;
  floats.kind = Attribute::Kind::kFloats;
  floats.floats = {2.f, 2.f};
  Status wrongType = importPool({{"kernel_shape", floats}});
  EXPECT_NE(wrongType.message().find("is float32, the plugin declares int64"), std::string::npos)
      << wrongType.message();

  kernel.ints = {2, 2, 2};
  Status wrongLength = importPool({{"kernel_shape", kernel}});
  EXPECT_NE(wrongLength.message().find("has 3 elements, the plugin declares 2"), std::string::npos)
      << wrongLength.message();

  Status refused = importPool({{"mode", text("max")}});  // the creator needs kernel_shape
  EXPECT_NE(refused.message().find("could not be created: QuantizedPool needs kernel_shape"),
            std::string::npos)
      << refused.message();
}

TEST_F(PluginTest, VersionAndNamespaceAttributesSelectTheCreator) {
  SymbolicShape shape = {DimExpr(2), DimExpr(4)};
  std::vector<ValueInfo> ins = {floatInput("a", shape), floatInput("b", shape)};
  // Default domain: any namespace (kiln.examples is the only one with CopyConcat).
  Network anyNamespace = pluginNetwork("CopyConcat", "", ins, {"c", "d"});
  EXPECT_TRUE(resolvePlugin(anyNamespace.graph.nodes[0]).isOk());

  Network wrongVersion = pluginNetwork("CopyConcat", "kiln.examples", ins, {"c", "d"},
                                       {{"plugin_version", text("2")}});
  auto missing = resolvePlugin(wrongVersion.graph.nodes[0]);
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(
      missing.status().message().find("'kiln.examples::CopyConcat' version 2 is not registered"),
      std::string::npos)
      << missing.status().message();
  EXPECT_NE(missing.status().message().find("loaded plugins: "), std::string::npos);
  // The node as fields too (issue 23 item 4), for the studio and --json.
  ASSERT_NE(missing.status().node(), nullptr);
  EXPECT_EQ(missing.status().node()->name, wrongVersion.graph.nodes[0].name);
  EXPECT_EQ(missing.status().node()->opType, "CopyConcat");

  Network otherNamespace = pluginNetwork("CopyConcat", "kiln.examples", ins, {"c", "d"},
                                         {{"plugin_namespace", text("acme")}});
  EXPECT_FALSE(resolvePlugin(otherNamespace.graph.nodes[0]).isOk());
}

TEST_F(PluginTest, CopyConcatRunsOnTheReferenceBackend) {
  Network net = pluginNetwork("CopyConcat", "kiln.examples",
                              {floatInput("a", {DimExpr::symbol("na"), DimExpr(4)}),
                               floatInput("b", {DimExpr::symbol("nb"), DimExpr(4)})},
                              {"copy", "concat"});
  const Tensor a = randomTensor(DataType::kFloat32, {3, 4}, 11, 0.5, 2.0);
  const Tensor b = randomTensor(DataType::kFloat32, {5, 4}, 12, -2.0, -0.5);
  auto out = runOnCpu(net, {{"a", a}, {"b", b}});
  ASSERT_TRUE(out.isOk()) << out.status().message();
  const Tensor& copy = (*out)[0].tensor;
  const Tensor& concat = (*out)[1].tensor;
  ASSERT_EQ(copy.shape(), (Shape{5, 4}));
  ASSERT_EQ(concat.shape(), (Shape{8, 4}));
  for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(copy.data<float>()[i], b.data<float>()[i]);
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(concat.data<float>()[i], a.data<float>()[i]);
  for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(concat.data<float>()[12 + i], b.data<float>()[i]);

  // Shape inference carries the plugin's symbolic sum.
  auto shapes = inferShapes(net);
  ASSERT_TRUE(shapes.isOk());
  const InferredValue& inferred = shapes->values.at("concat");
  ASSERT_EQ(inferred.shape.size(), 2u);
  EXPECT_EQ(inferred.shape[0].evaluate({{"na", 3}, {"nb", 5}}), 8);
  EXPECT_FALSE(inferred.shape[0].isConst());
}

// QuantizeLinear -> pool average 3x3 stride 2 -> requantize -> DequantizeLinear, by hand.
float expectedPooled(const Tensor& x, int64_t plane, int64_t oy, int64_t ox) {
  int sum = 0;
  for (int64_t ky = 0; ky < 3; ++ky)
    for (int64_t kx = 0; kx < 3; ++kx) {
      const float v = x.data<float>()[plane * 64 + (oy * 2 + ky) * 8 + ox * 2 + kx];
      sum += static_cast<int>(std::clamp(std::nearbyint(v / 0.02f), -128.f, 127.f));
    }
  const float q = std::nearbyint(static_cast<float>(sum) / 9.f * 0.02f / 0.01f);
  return std::clamp(q, -128.f, 127.f) * 0.01f;
}

TEST_F(PluginTest, QuantizedPoolRunsInt8WithTheQdqScales) {
  auto net = importOnnxFile(kModels + "/quantized_pool_average/model.onnx");
  ASSERT_TRUE(net.isOk()) << net.status().message();
  const Tensor x = randomTensor(DataType::kFloat32, {2, 4, 8, 8}, 21, -2.0, 2.5);
  auto out = runOnCpu(*net, {{"X", x}});
  ASSERT_TRUE(out.isOk()) << out.status().message();
  const Tensor& y = (*out)[0].tensor;
  ASSERT_EQ(y.shape(), (Shape{2, 4, 3, 3}));
  int nonZero = 0;
  for (int64_t plane = 0; plane < 8; ++plane)
    for (int64_t oy = 0; oy < 3; ++oy)
      for (int64_t ox = 0; ox < 3; ++ox) {
        const float v = y.data<float>()[(plane * 3 + oy) * 3 + ox];
        EXPECT_FLOAT_EQ(v, expectedPooled(x, plane, oy, ox));
        nonZero += v != 0.f;
      }
  EXPECT_GT(nonZero, 40);

  // Without the Q/DQ scales the plugin refuses INT8, and the error says what to add.
  Network bare = pluginNetwork(
      "QuantizedPool", "kiln.examples",
      {{"xq", DataType::kInt8, true, {DimExpr(1), DimExpr(1), DimExpr(4), DimExpr(4)}}}, {"yq"});
  Attribute kernel;
  kernel.kind = Attribute::Kind::kInts;
  kernel.ints = {2, 2};
  bare.graph.nodes[0].attributes["kernel_shape"] = kernel;
  auto refused = runOnCpu(bare, {{"xq", randomTensor(DataType::kInt8, {1, 1, 4, 4}, 3)}});
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("INT8 I/O needs the input and output scales"),
            std::string::npos)
      << refused.status().message();
}

TEST_F(PluginTest, ChannelsLastOnlyPluginsGetNhwcBuffers) {
  Network net =
      pluginNetwork("NhwcScale", "kiln.test.static",
                    {floatInput("x", {DimExpr(2), DimExpr(3), DimExpr(4), DimExpr(5)})}, {"y"});
  const Tensor x = randomTensor(DataType::kFloat32, {2, 3, 4, 5}, 5);
  auto out = runOnCpu(net, {{"x", x}});
  ASSERT_TRUE(out.isOk()) << out.status().message();
  const Tensor& y = (*out)[0].tensor;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t channel = (i / 20) % 3;
    EXPECT_FLOAT_EQ(y.data<float>()[i], x.data<float>()[i] * static_cast<float>(channel + 1));
  }
}

TEST_F(PluginTest, FaultsBecomeErrorsNamingThePlugin) {
  const std::string plugin = "plugin 'kiln.test::Faulty' version 1";
  std::string e = runError(faulty("throw_execute"));
  EXPECT_NE(e.find(plugin + " executeCpu() threw: Faulty threw on purpose"), std::string::npos)
      << e;
  e = runError(faulty("fail_execute"));
  EXPECT_NE(e.find(plugin + " executeCpu() failed: the input is not acceptable to Faulty"),
            std::string::npos)
      << e;
  e = runError(faulty("negative_shape"));
  EXPECT_NE(e.find(plugin + ": getOutputShapes() output 0 dim 0 is negative (-997)"),
            std::string::npos)
      << e;
  e = runError(faulty("rank9"));
  EXPECT_NE(e.find(plugin + ": getOutputShapes() output 0 has rank 9"), std::string::npos) << e;
  e = runError(faulty("foreign_expr"));
  EXPECT_NE(e.find("was not made by the expression builder"), std::string::npos) << e;
  e = runError(faulty("fail_create"));
  EXPECT_NE(e.find(plugin + " could not be created: Faulty was told not to be created"),
            std::string::npos)
      << e;
  EXPECT_EQ(runError(faulty("none")), "(ran)");
}

TEST_F(PluginTest, TheBuilderRefusesAPluginShapeThatContradictsTheModel) {
  Network net = faulty("wrong_rows");
  net.graph.outputs[0].hasShape = true;
  net.graph.outputs[0].shape = {DimExpr(3), DimExpr(4)};
  auto plan = buildPlan(std::make_shared<Network>(net), BuilderConfig(), *cpuBuildBackend());
  ASSERT_FALSE(plan.isOk());
  EXPECT_NE(
      plan.status().message().find("gives output 0 'y' the shape 4x4, the model declares 3x4"),
      std::string::npos)
      << plan.status().message();
}

TEST_F(PluginTest, BuildsWithProfileRangesAndThePlanRoundTrips) {
  Network net = pluginNetwork("RangeProbe", "kiln.test.static",
                              {floatInput("x", {DimExpr::symbol("n"), DimExpr(4)})}, {"y"});
  BuilderConfig config;
  config.fp16 = true;
  OptimizationProfile profile;
  profile.inputs["x"] = {{1, 4}, {3, 4}, {8, 4}};
  config.profiles = {profile};
  g_rangeProbeConfigs.clear();
  auto plan = buildPlan(std::make_shared<Network>(net), config, *cpuBuildBackend());
  ASSERT_TRUE(plan.isOk()) << plan.status().message();

  // configurePlugin saw the profile: dim 0 varies (-1) from 1 to 8, dim 1 is fixed.
  bool sawRange = false;
  for (const plugin::DynamicTensorDesc& d : g_rangeProbeConfigs)
    sawRange = sawRange || (d.desc.dims.d[0] == -1 && d.min.d[0] == 1 && d.opt.d[0] == 3 &&
                            d.max.d[0] == 8 && d.desc.dims.d[1] == 4);
  EXPECT_TRUE(sawRange);

  // Precision choice went through supportsFormatCombination: float16 was refused.
  const LayerRecord& layer = plan->record.layers.at(0);
  EXPECT_EQ(layer.layerType, "Plugin");
  EXPECT_EQ(layer.tactic, "cpu.plugin");
  EXPECT_EQ(layer.precision, DataType::kFloat32);
  EXPECT_EQ(layer.workspaceBytes, 64);
  EXPECT_EQ(layer.parameters.at("plugin"), "kiln.test.static::RangeProbe version 1");
  bool fp16Refused = false;
  for (const TacticCandidate& c : layer.candidates)
    fp16Refused = fp16Refused ||
                  (c.precision == DataType::kFloat16 &&
                   c.rejected.find("does not take input 0 as float16 linear") != std::string::npos);
  EXPECT_TRUE(fp16Refused);

  auto bytes = serializePlan(*plan);
  ASSERT_TRUE(bytes.isOk());
  auto loaded = deserializePlan(*bytes, "probe.kiln");
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  const Node& node = loaded->network->graph.nodes[0];
  EXPECT_EQ(node.attrString(kPluginNameAttribute, ""), "RangeProbe");
  EXPECT_EQ(node.attrString(kPluginNamespaceAttribute, ""), "kiln.test.static");
  EXPECT_TRUE(checkPluginsAvailable(*loaded->network).isOk());
  const Tensor x = randomTensor(DataType::kFloat32, {5, 4}, 9);
  auto out = runOnCpu(*loaded->network, {{"x", x}}, loaded->layers);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  expectTensorNear((*out)[0].tensor, x, 0, 0);
}

TEST_F(PluginTest, WeightsFieldsAreSerializedIntoThePlan) {
  Attribute alpha;
  alpha.kind = Attribute::Kind::kFloat;
  alpha.f = 1.5f;
  Attribute bias;
  bias.kind = Attribute::Kind::kTensor;
  bias.t = randomTensor(DataType::kFloat32, {4}, 33, 0.5, 1.0);
  Network net =
      pluginNetwork("AddWeights", "kiln.test", {floatInput("x", {DimExpr(3), DimExpr(4)})}, {"y"},
                    {{"alpha", alpha}, {"bias", bias}});
  auto plan = buildPlan(std::make_shared<Network>(net), BuilderConfig(), *cpuBuildBackend());
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  auto bytes = serializePlan(*plan);
  ASSERT_TRUE(bytes.isOk());
  auto loaded = deserializePlan(*bytes, "weights.kiln");
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  Node& node = const_cast<Node&>(loaded->network->graph.nodes[0]);
  const Tensor* stored = node.attrTensor(std::string(kPluginStatePrefix) + "bias");
  ASSERT_NE(stored, nullptr);
  expectTensorNear(*stored, bias.t, 0, 0);
  // The runtime creates the plugin from the serialized fields only.
  node.attributes.erase("alpha");
  node.attributes.erase("bias");
  const Tensor x = randomTensor(DataType::kFloat32, {3, 4}, 34);
  auto out = runOnCpu(*loaded->network, {{"x", x}}, loaded->layers);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  for (int64_t i = 0; i < 12; ++i)
    EXPECT_FLOAT_EQ((*out)[0].tensor.data<float>()[i],
                    1.5f * x.data<float>()[i] + bias.t.data<float>()[i % 4]);

  // A plan whose plugin is not registered names the plugin, never the library path
  // the plan records (the plan chooses it: it is no advice to follow).
  node.attributes[kPluginNameAttribute] = text("Vanished");
  Status missing = checkPluginsAvailable(*loaded->network);
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.message().find("plugin 'kiln.test::Vanished' version 1, which this plan was "
                                   "built with, is not loaded; load a library that provides it"),
            std::string::npos)
      << missing.message();
  EXPECT_EQ(missing.message().find("libkiln_test_plugins.so"), std::string::npos)
      << missing.message();
  auto run = runOnCpu(*loaded->network, {{"x", x}}, loaded->layers);
  ASSERT_FALSE(run.isOk());
  EXPECT_NE(run.status().message().find("Vanished"), std::string::npos);
}

}  // namespace
}  // namespace kiln::test
