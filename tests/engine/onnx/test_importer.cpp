// Importer tests on the fixtures of tests/data (made by make_test_models.py).
#include <gtest/gtest.h>

#include "kiln/onnx_import.h"
#include "kiln/reference_backend.h"

namespace kiln {
namespace {

std::string fixture(const std::string& name) { return std::string(KILN_TEST_DATA_DIR) + "/" + name; }

Tensor floats(Shape shape, std::vector<float> v) { return Tensor::fromVector(DataType::kFloat32, shape, v); }

TEST(Importer, ReadsNamesSymbolicDimsAndInitializers) {
  auto net = importOnnxFile(fixture("add.onnx"));
  ASSERT_TRUE(net.isOk()) << net.status().toString();
  ASSERT_EQ(net->graph.inputs.size(), 1u);
  EXPECT_EQ(net->graph.inputs[0].name, "x");
  EXPECT_EQ(symbolicShapeToString(net->graph.inputs[0].shape), "batchx3");
  EXPECT_EQ(net->graph.initializers.count("w"), 1u);
  EXPECT_EQ(net->defaultOpset(), 17);
  EXPECT_EQ(net->graph.parameterCount(), 3);
}

TEST(Importer, RunsAddWithBroadcastInitializer) {
  auto net = importOnnxFile(fixture("add.onnx"));
  ASSERT_TRUE(net.isOk());
  ReferenceBackend backend(net.value());
  std::vector<NamedTensor> out;
  ASSERT_TRUE(backend.run({{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}}, &out).isOk());
  ASSERT_EQ(out.size(), 1u);
  const float* y = out[0].tensor.data<float>();
  EXPECT_FLOAT_EQ(y[0], 2.5f);
  EXPECT_FLOAT_EQ(y[1], 0.0f);
  EXPECT_FLOAT_EQ(y[5], 6.25f);
}

TEST(Importer, ExternalDataResolvesBesideTheModel) {
  auto net = importOnnxFile(fixture("external_ok.onnx"));
  ASSERT_TRUE(net.isOk()) << net.status().toString();
  const Tensor& w = net->graph.initializers.at("w");
  EXPECT_FLOAT_EQ(w.data<float>()[0], 1.5f);
  EXPECT_FLOAT_EQ(w.data<float>()[2], 0.25f);
}

struct BadCase {
  const char* file;
  StatusCode code;
  const char* needle;
};

class ImporterRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(ImporterRejects, WithOneLineNamingTheCulprit) {
  const BadCase& c = GetParam();
  auto net = importOnnxFile(fixture(c.file));
  ASSERT_FALSE(net.isOk());
  EXPECT_EQ(net.status().code(), c.code) << net.status().toString();
  EXPECT_NE(net.status().message().find(c.needle), std::string::npos) << net.status().toString();
  EXPECT_NE(net.status().message().find(c.file), std::string::npos) << "message must name the file";
  EXPECT_EQ(net.status().message().find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Files, ImporterRejects,
    ::testing::Values(BadCase{"truncated.onnx", StatusCode::kParseError, "truncated"},
                      BadCase{"random_bytes.onnx", StatusCode::kParseError, "not a valid ONNX model"},
                      BadCase{"external_missing.onnx", StatusCode::kNotFound, "tensor 'w'"},
                      BadCase{"external_escape.onnx", StatusCode::kInvalidArgument, "leaves the model folder"},
                      BadCase{"external_absolute.onnx", StatusCode::kInvalidArgument, "must be relative"},
                      BadCase{"unknown_ops.onnx", StatusCode::kUnsupported, "2 unsupported nodes"}));

TEST(Importer, ListsEveryUnsupportedNodeWithIndexDomainAndOpset) {
  auto net = importOnnxFile(fixture("unknown_ops.onnx"));
  ASSERT_FALSE(net.isOk());
  const std::string& m = net.status().message();
  EXPECT_NE(m.find("node 'mystery_1' (#1, FooBar) domain 'ai.onnx' opset 17"), std::string::npos) << m;
  EXPECT_NE(m.find("node 'mystery_2' (#2, Baz) domain 'com.example' opset 1"), std::string::npos) << m;
  EXPECT_EQ(m.find("ok_relu"), std::string::npos) << m;
}

TEST(Importer, SortsNodesTopologically) {
  auto net = importOnnxFile(fixture("unsorted.onnx"));
  ASSERT_TRUE(net.isOk()) << net.status().toString();
  ASSERT_EQ(net->graph.nodes.size(), 2u);
  EXPECT_EQ(net->graph.nodes[0].opType, "Relu");
  EXPECT_EQ(net->graph.nodes[1].index, 0);  // keeps its position in the file
  ReferenceBackend backend(net.value());
  std::vector<NamedTensor> out;
  ASSERT_TRUE(backend.run({{"x", floats({2, 2}, {-1, 2, -3, 4})}}, &out).isOk());
  EXPECT_FLOAT_EQ(out[0].tensor.data<float>()[0], 0.f);
  EXPECT_FLOAT_EQ(out[0].tensor.data<float>()[3], 8.f);
}

TEST(Importer, IfBranchesReadOuterScope) {
  auto net = importOnnxFile(fixture("if_outer_scope.onnx"));
  ASSERT_TRUE(net.isOk()) << net.status().toString();
  ASSERT_NE(net->graph.nodes[0].attrGraph("then_branch"), nullptr);
  ReferenceBackend backend(net.value());
  for (uint8_t cond : {uint8_t{1}, uint8_t{0}}) {
    std::vector<NamedTensor> out;
    Tensor c = Tensor::fromVector(DataType::kBool, {}, std::vector<uint8_t>{cond});
    ASSERT_TRUE(backend.run({{"cond", c}, {"x", floats({3}, {1, 2, 3})}}, &out).isOk());
    EXPECT_FLOAT_EQ(out[0].tensor.data<float>()[1], cond ? 3.f : 1.f);
  }
}

TEST(ReferenceBackend, RejectsWrongShapeAndDtypeNamingTheInput) {
  auto net = importOnnxFile(fixture("add.onnx"));
  ASSERT_TRUE(net.isOk());
  ReferenceBackend backend(net.value());
  std::vector<NamedTensor> out;
  Status wrongShape = backend.run({{"x", floats({2, 4}, std::vector<float>(8, 1.f))}}, &out);
  EXPECT_EQ(wrongShape.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrongShape.message().find("input 'x'"), std::string::npos) << wrongShape.toString();
  Status wrongType = backend.run({{"x", Tensor(DataType::kInt32, {2, 3})}}, &out);
  EXPECT_NE(wrongType.message().find("expected float32, got int32"), std::string::npos) << wrongType.toString();
  Status missing = backend.run({}, &out);
  EXPECT_NE(missing.message().find("'x' is required"), std::string::npos) << missing.toString();
}

}  // namespace
}  // namespace kiln
