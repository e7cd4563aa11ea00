// Exporter tests: import -> export -> import gives back the same network (structure,
// weights byte for byte, symbolic shapes) that runs to the same outputs on the CPU
// reference, for the fixtures of tests/data and the real models of resources/models;
// weights externalized into an aligned blob come back through an ExternalDataResolver.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "kiln/onnx_export.h"
#include "kiln/onnx_import.h"
#include "kiln/reference_backend.h"
#include "network_compare.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

constexpr int64_t kAlign = 64;
const char kLocation[] = "kiln-plan-weights";

std::string fixture(const std::string& name) {
  return std::string(KILN_TEST_DATA_DIR) + "/" + name;
}
std::string modelDir(const std::string& name) {
  return std::string(KILN_MODELS_DIR) + "/" + name;
}

Result<Network> reimport(const std::string& bytes, const ImportOptions& options = {}) {
  return importOnnxBytes(bytes, "", "exported.onnx", options);
}

std::vector<NamedTensor> runReference(const Network& network,
                                      const std::map<std::string, Tensor>& inputs) {
  ReferenceBackend backend(network);
  std::vector<NamedTensor> outputs;
  Status status = backend.run(inputs, &outputs);
  EXPECT_TRUE(status.isOk()) << status.toString();
  return outputs;
}

// Imports a model, exports it with weights inline, re-imports it: the two Networks
// match, a second export gives the same bytes, and both run to identical outputs.
void checkRoundTrip(const std::string& path, const std::map<std::string, Tensor>& inputs,
                    const Network& original) {
  Result<std::string> bytes = exportOnnxBytes(original);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
  Result<Network> back = reimport(bytes.value());
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  expectSameNetwork(back.value(), original);
  Result<std::string> again = exportOnnxBytes(back.value());
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_TRUE(again.value() == bytes.value()) << "export of the re-import differs: " << path;

  std::vector<NamedTensor> expected = runReference(original, inputs);
  std::vector<NamedTensor> actual = runReference(back.value(), inputs);
  ASSERT_FALSE(expected.empty());
  EXPECT_TRUE(anyNonZero(expected)) << "outputs are all zero; the comparison would say nothing";
  expectSameOutputs(actual, expected);
}

class FixtureRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(FixtureRoundTrip, ReimportsTheSameNetworkAndOutputs) {
  Result<Network> original = importOnnxFile(fixture(GetParam()));
  ASSERT_TRUE(original.isOk()) << original.status().toString();
  for (uint32_t seed : {1u, 2u}) {  // two seeds: both branches of if_outer_scope's cond
    checkRoundTrip(GetParam(), randomInputs(original->graph, seed), original.value());
  }
}

INSTANTIATE_TEST_SUITE_P(TestData, FixtureRoundTrip,
                         ::testing::Values("add.onnx", "if_outer_scope.onnx", "shape_subgraph.onnx",
                                           "unsorted.onnx", "add_opset7.onnx"),
                         [](const auto& info) {
                           std::string name = info.param;
                           return name.substr(0, name.find('.'));
                         });

class ModelRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelRoundTrip, ReimportsTheSameNetworkAndOutputs) {
  const std::string dir = modelDir(GetParam());
  Result<Network> original = importOnnxFile(dir + "/model.onnx");
  ASSERT_TRUE(original.isOk()) << original.status().toString();
  checkRoundTrip(dir, randomInputsLike(dir, original->graph, 7), original.value());
}

INSTANTIATE_TEST_SUITE_P(RealModels, ModelRoundTrip,
                         ::testing::Values("silero_vad", "ppocrv4_det", "ppocrv4_rec",
                                           "ppocr_mobile_v2_cls", "magika_standard_v3_3"));

// A plan's weight section: each tensor starts at a multiple of kAlign.
struct Blob {
  std::string bytes;
  std::vector<std::string> names;
};

WeightSink sinkInto(Blob* blob) {
  return [blob](const std::string& name, const Tensor&, const std::string& raw) -> Result<int64_t> {
    blob->bytes.resize((blob->bytes.size() + kAlign - 1) / kAlign * kAlign, '\0');
    const auto offset = static_cast<int64_t>(blob->bytes.size());
    blob->bytes += raw;
    blob->names.push_back(name);
    return offset;
  };
}

ExternalDataResolver resolverFor(const std::string* blob) {
  return
      [blob](const std::string& location, int64_t offset, int64_t length) -> Result<std::string> {
        if (location != kLocation)
          return notFound("location '" + location + "' is not in the plan");
        const auto size = static_cast<int64_t>(blob->size());
        if (offset > size || length > size - offset) {
          return Status(StatusCode::kOutOfRange, "weight range [" + std::to_string(offset) + ", +" +
                                                     std::to_string(length) +
                                                     ") lies outside the plan's weight blob (" +
                                                     std::to_string(size) + " bytes)");
        }
        return blob->substr(static_cast<size_t>(offset), static_cast<size_t>(length));
      };
}

// Whether `tensor` is stored externally; if so, its entries are checked.
bool isExternal(const onnx::TensorProto& tensor, const std::string& what) {
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL) return false;
  EXPECT_FALSE(tensor.has_raw_data()) << what;
  std::map<std::string, std::string> entries;
  for (const auto& kv : tensor.external_data()) entries[kv.key()] = kv.value();
  EXPECT_EQ(entries["location"], kLocation) << what;
  EXPECT_EQ(std::stoll(entries["offset"]) % kAlign, 0) << what;
  EXPECT_GT(std::stoll(entries["length"]), 0) << what;
  return true;
}

// External tensors of `graph`, subgraphs and Constant values included.
int countExternal(const onnx::GraphProto& graph) {
  int count = 0;
  for (const auto& init : graph.initializer()) count += isExternal(init, init.name());
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_t()) count += isExternal(attr.t(), node.name() + "." + attr.name());
      if (attr.has_g()) count += countExternal(attr.g());
      for (const auto& g : attr.graphs()) count += countExternal(g);
    }
  }
  return count;
}

// Initializers (and, with `constants`, Constant values) of at least `minBytes`.
int countWeights(const Graph& graph, int64_t minBytes, bool constants) {
  auto large = [&](const Tensor& t) {
    return t.type() != DataType::kString && t.byteSize() >= static_cast<size_t>(minBytes);
  };
  int count = 0;
  for (const auto& [name, t] : graph.initializers) count += large(t);
  for (const Node& node : graph.nodes) {
    const Tensor* value = node.opType == "Constant" ? node.attrTensor("value") : nullptr;
    if (constants && value) count += large(*value);
    for (const auto& [key, attr] : node.attributes) {
      if (attr.g) count += countWeights(*attr.g, minBytes, constants);
      for (const auto& g : attr.graphs) count += countWeights(*g, minBytes, constants);
    }
  }
  return count;
}

// if_outer_scope with its weight "one" moved into both branches: subgraph initializers.
Network ifWithBranchWeights() {
  Result<Network> net = importOnnxFile(fixture("if_outer_scope.onnx"));
  EXPECT_TRUE(net.isOk()) << net.status().toString();
  Network network = std::move(net).value();
  network.graph.initializers.clear();
  for (auto& [key, attr] : network.graph.nodes[0].attributes) {
    if (attr.g) attr.g->initializers["one"] = Tensor::scalarFloat(key == "then_branch" ? 2.f : 3.f);
  }
  return network;
}

// Exports with a sink into a 64-byte-aligned blob: exactly the expected tensors go there
// (and are external references in the model), the model alone does not import, and with
// a resolver over the blob it re-imports to the same network and outputs. Returns the
// exported size.
size_t checkExternalized(const Network& original, ExportOptions options,
                         const std::map<std::string, Tensor>& inputs) {
  Blob blob;
  options.weightSink = sinkInto(&blob);
  Result<std::string> bytes = exportOnnxBytes(original, options);
  EXPECT_TRUE(bytes.isOk()) << bytes.status().toString();
  if (!bytes.isOk()) return 0;
  const int expected =
      countWeights(original.graph, options.externalizeMinBytes, options.externalizeConstants);
  EXPECT_GT(expected, 0);
  EXPECT_EQ(static_cast<int>(blob.names.size()), expected);
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(bytes.value()));
  EXPECT_EQ(countExternal(model.graph()), expected);

  Result<Network> refused = reimport(bytes.value());  // no resolver, no folder: refused
  EXPECT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("external data is not allowed"), std::string::npos)
      << refused.status().toString();

  ImportOptions importOptions;
  importOptions.externalData = resolverFor(&blob.bytes);
  Result<Network> back = reimport(bytes.value(), importOptions);
  EXPECT_TRUE(back.isOk()) << back.status().toString();
  if (!back.isOk()) return 0;
  expectSameNetwork(back.value(), original);
  std::vector<NamedTensor> want = runReference(original, inputs);
  EXPECT_TRUE(anyNonZero(want));
  expectSameOutputs(runReference(back.value(), inputs), want);
  return bytes->size();
}

TEST(ExportWeights, SubgraphInitializersGoToTheBlobAndResolveBack) {
  Network network = ifWithBranchWeights();
  for (uint32_t seed : {1u, 2u}) checkExternalized(network, {}, randomInputs(network.graph, seed));
}

TEST(ExportWeights, LargeInitializersGoToTheBlobSmallOnesStayInline) {
  const std::string dir = modelDir("magika_standard_v3_3");
  Result<Network> original = importOnnxFile(dir + "/model.onnx");
  ASSERT_TRUE(original.isOk()) << original.status().toString();
  ASSERT_LT(countWeights(original->graph, 256, false), countWeights(original->graph, 0, false));
  ExportOptions options;
  options.externalizeMinBytes = 256;
  checkExternalized(original.value(), options, randomInputsLike(dir, original->graph, 3));
}

// silero_vad keeps its weights in Constant nodes inside If branches.
TEST(ExportWeights, ConstantValuesGoToTheBlobWhenAsked) {
  const std::string dir = modelDir("silero_vad");
  Result<Network> original = importOnnxFile(dir + "/model.onnx");
  ASSERT_TRUE(original.isOk()) << original.status().toString();
  ASSERT_EQ(countWeights(original->graph, 0, false), 0);
  ExportOptions options;
  options.externalizeMinBytes = 1024;
  options.externalizeConstants = true;
  const size_t size =
      checkExternalized(original.value(), options, randomInputsLike(dir, original->graph, 5));
  EXPECT_LT(size, static_cast<size_t>(original->graph.parameterBytes() / 10));
}

TEST(ExportWeights, ResolverErrorNamesTheTensorAndKeepsTheCode) {
  Result<Network> original = importOnnxFile(fixture("add.onnx"));
  ASSERT_TRUE(original.isOk());
  Blob blob;
  ExportOptions options;
  options.weightSink = sinkInto(&blob);
  Result<std::string> bytes = exportOnnxBytes(original.value(), options);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
  const std::string truncated = blob.bytes.substr(0, 4);  // w needs 12 bytes
  ImportOptions importOptions;
  importOptions.externalData = resolverFor(&truncated);
  Result<Network> back = importOnnxBytes(bytes.value(), "", "model.plan", importOptions);
  ASSERT_FALSE(back.isOk());
  const std::string& m = back.status().message();
  EXPECT_EQ(back.status().code(), StatusCode::kOutOfRange) << m;
  EXPECT_EQ(m.rfind("model.plan: ", 0), 0u) << m;
  EXPECT_NE(
      m.find("tensor 'w': weight range [0, +12) lies outside the plan's weight blob (4 bytes)"),
      std::string::npos)
      << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(ExportWeights, SinkErrorAbortsTheExportNamingTheInitializer) {
  Result<Network> original = importOnnxFile(fixture("add.onnx"));
  ASSERT_TRUE(original.isOk());
  ExportOptions options;
  options.weightSink = [](const std::string&, const Tensor&,
                          const std::string&) -> Result<int64_t> {
    return Status(StatusCode::kIoError, "plan file is full");
  };
  Result<std::string> bytes = exportOnnxBytes(original.value(), options);
  ASSERT_FALSE(bytes.isOk());
  EXPECT_EQ(bytes.status().code(), StatusCode::kIoError);
  EXPECT_EQ(bytes.status().message(), "initializer 'w': plan file is full");
}

}  // namespace
}  // namespace kiln::test
