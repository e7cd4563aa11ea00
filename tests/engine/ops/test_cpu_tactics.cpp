// Tests for the CPU tactics (backends/cpu/tactics/alternative_kernels.h): each
// alternative kernel against the reference kernel (runReferenceNode) on random
// non-zero data at float32, float16 and bfloat16, and the reasons the kernels
// give for what they do not support. Outputs start poisoned (NaN), so an
// element a kernel leaves unwritten fails the finiteness check.
//
// Tolerances, |tactic - reference| <= atol + rtol * |reference|: both sides sum
// in float in a different order, then round to the storage type, so 16-bit
// results may differ by one unit in the last place of their type.
//   float32: atol 1e-5, rtol 1e-4   float16: atol 1e-3, rtol 2e-3
//   bfloat16: atol 1e-2, rtol 1.6e-2
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu/tactics/alternative_kernels.h"
#include "kiln/reference_backend.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

using Ints = std::vector<int64_t>;

// A node built with OpTest's attribute setters, and its inputs (undefined
// tensors are omitted optional inputs).
struct NodeCase {
  Node node;
  std::vector<Tensor> inputs;
};

NodeCase makeCase(OpTest& test, const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs) t.defined() ? test.input(t) : test.missingInput();
  NodeCase c{test.node(), inputs};
  c.node.outputs = {"out0"};
  return c;
}

Result<Tensor> runTactic(const NodeCase& c, cpu::KernelFn fn) {
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : c.inputs) inputs.push_back(t.defined() ? &t : nullptr);
  cpu::KernelContext ctx(c.node, inputs,
                         [](const Graph&, const std::vector<Tensor>&, std::vector<Tensor>*) {
                           return unsupported("no subgraphs here");
                         });
  KILN_RETURN_IF_ERROR(fn(ctx));
  return ctx.outputs()[0];
}

Result<Tensor> runReference(const NodeCase& c) {
  std::map<std::string, Tensor> values;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].defined()) values[c.node.inputs[i]] = c.inputs[i];
  }
  std::vector<Tensor> outputs;
  KILN_RETURN_IF_ERROR(runReferenceNode(c.node, values, &outputs));
  return outputs[0];
}

void expectFinite(const Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    ASSERT_TRUE(std::isfinite(t.valueAsDouble(i))) << "element " << i << " not written";
  }
}

// The tolerances of the file comment, per storage type.
struct Tolerance {
  double atol, rtol;
};

Tolerance toleranceFor(DataType type) {
  if (type == DataType::kFloat16) return {1e-3, 2e-3};
  if (type == DataType::kBFloat16) return {1e-2, 1.6e-2};
  return {1e-5, 1e-4};
}

// Runs `fn` and the reference on the case; compares at the inputs' type's tolerance.
void expectMatchesReference(OpTest& test, const std::vector<Tensor>& inputs, cpu::KernelFn fn) {
  const NodeCase c = makeCase(test, inputs);
  const DataType type = inputs[0].type();
  Result<Tensor> expected = runReference(c);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  Result<Tensor> actual = runTactic(c, fn);
  ASSERT_TRUE(actual.isOk()) << actual.status().toString();
  ASSERT_GT(actual->numel(), 0);
  expectFinite(*actual);
  const Tolerance tol = toleranceFor(type);
  expectTensorNear(*actual, *expected, tol.atol, tol.rtol);
}

void expectUnsupported(OpTest& test, const std::vector<Tensor>& inputs, cpu::KernelFn fn,
                       const std::string& reason) {
  Result<Tensor> result = runTactic(makeCase(test, inputs), fn);
  ASSERT_FALSE(result.isOk());
  EXPECT_EQ(result.status().code(), StatusCode::kUnsupported) << result.status().toString();
  EXPECT_NE(result.status().message().find(reason), std::string::npos)
      << result.status().toString();
}

// ---- Conv: one case per geometry, run on both conv tactics and every dtype.

struct ConvCase {
  const char* name;
  Shape x, w;
  bool bias;
  int64_t group;
  Ints strides, dilations, pads;
  const char* autoPad;  // nullptr: NOTSET
};

const ConvCase kConvCases[] = {
    {"plain_padded", {2, 3, 7, 6}, {4, 3, 3, 3}, true, 1, {}, {}, {1, 1, 1, 1}, nullptr},
    {"strided_dilated_asym_pads",
     {1, 3, 9, 8},
     {5, 3, 3, 2},
     false,
     1,
     {2, 2},
     {2, 3},
     {0, 1, 2, 1},
     nullptr},
    {"grouped", {1, 4, 5, 5}, {6, 2, 3, 3}, true, 2, {}, {}, {1, 0, 1, 0}, nullptr},
    {"depthwise_strided", {2, 3, 8, 7}, {3, 1, 3, 3}, true, 3, {2, 2}, {}, {1, 1, 1, 1}, nullptr},
    {"depthwise_multiplier", {1, 3, 6, 6}, {6, 1, 3, 3}, false, 3, {}, {2, 1}, {}, nullptr},
    {"pointwise", {2, 8, 4, 5}, {6, 8, 1, 1}, true, 1, {}, {}, {}, nullptr},
    {"same_upper", {1, 2, 5, 5}, {3, 2, 2, 2}, true, 1, {2, 2}, {}, {}, "SAME_UPPER"},
    {"deep_reduction", {1, 40, 8, 8}, {9, 40, 3, 3}, true, 1, {}, {}, {1, 1, 1, 1}, nullptr},
    {"wide", {1, 16, 20, 24}, {20, 16, 3, 3}, false, 1, {}, {}, {1, 1, 1, 1}, nullptr},
    {"one_d", {2, 3, 10}, {5, 3, 3}, true, 1, {2}, {2}, {1, 2}, nullptr},
    {"one_d_grouped", {1, 4, 9}, {4, 2, 4}, false, 2, {}, {}, {}, nullptr},
    {"one_d_depthwise", {1, 4, 12}, {4, 1, 5}, true, 4, {}, {}, {2, 2}, nullptr},
};

OpTest convTest(const ConvCase& c) {
  OpTest t("Conv", 11);
  if (c.group != 1) t.attr("group", c.group);
  if (!c.strides.empty()) t.attr("strides", c.strides);
  if (!c.dilations.empty()) t.attr("dilations", c.dilations);
  if (!c.pads.empty()) t.attr("pads", c.pads);
  if (c.autoPad) t.attr("auto_pad", std::string(c.autoPad));
  return t;
}

std::vector<Tensor> convInputs(const ConvCase& c, DataType type) {
  std::vector<Tensor> inputs = {test::randomTensor(type, c.x, 1), test::randomTensor(type, c.w, 2)};
  if (c.bias) inputs.push_back(test::randomTensor(type, {c.w[0]}, 3));
  return inputs;
}

class TacticTypeTest : public ::testing::TestWithParam<DataType> {};

TEST_P(TacticTypeTest, ConvDirectMatchesReference) {
  for (const ConvCase& c : kConvCases) {
    SCOPED_TRACE(c.name);
    OpTest t = convTest(c);
    expectMatchesReference(t, convInputs(c, GetParam()), &cpu::convDirectKernel);
  }
}

TEST_P(TacticTypeTest, ConvIm2colLoopMatchesReference) {
  for (const ConvCase& c : kConvCases) {
    SCOPED_TRACE(c.name);
    OpTest t = convTest(c);
    expectMatchesReference(t, convInputs(c, GetParam()), &cpu::convIm2colLoopKernel);
  }
  SCOPED_TRACE("three_d");
  OpTest t("Conv", 11);
  t.attr("pads", Ints{1, 0, 1, 0, 1, 1});
  const DataType type = GetParam();
  expectMatchesReference(
      t,
      {test::randomTensor(type, {1, 2, 4, 5, 4}, 4), test::randomTensor(type, {3, 2, 2, 2, 3}, 5),
       test::randomTensor(type, {3}, 6)},
      &cpu::convIm2colLoopKernel);
}

// ---- MatMul: numpy promotion of 1-D operands, batching, broadcasting, and
// shapes that cross the loop GEMM's blocks (72 rows, depth 256, 1024 columns).

TEST_P(TacticTypeTest, MatMulLoopMatchesReference) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{5}, {5}},
      {{3}, {3, 4}},
      {{4, 3}, {3}},
      {{7, 9}, {9, 11}},
      {{1, 300}, {300, 40}},
      {{2, 3, 5, 6}, {6, 4}},
      {{2, 1, 5, 6}, {3, 6, 4}},
      {{3, 5}, {2, 5, 7}},
      {{75, 260}, {260, 1030}},
  };
  for (const auto& [a, b] : shapes) {
    SCOPED_TRACE(shapeToString(a) + " x " + shapeToString(b));
    OpTest t("MatMul", 13);
    expectMatchesReference(
        t, {test::randomTensor(GetParam(), a, 7), test::randomTensor(GetParam(), b, 8)},
        &cpu::matmulLoopKernel);
  }
}

// ---- Gemm: transposes, alpha and beta, and each broadcast of C.

struct GemmCase {
  const char* name;
  Shape a, b;
  int64_t transA, transB;
  float alpha, beta;
  bool hasC;
  Shape c;
};

TEST_P(TacticTypeTest, GemmLoopMatchesReference) {
  const GemmCase cases[] = {
      {"plain_no_c", {4, 5}, {5, 6}, 0, 0, 1.0f, 1.0f, false, {}},
      {"trans_a_row_c", {5, 4}, {5, 6}, 1, 0, 0.5f, 2.0f, true, {6}},
      {"trans_b_column_c", {4, 5}, {6, 5}, 0, 1, 1.0f, 0.7f, true, {4, 1}},
      {"both_full_c", {5, 4}, {6, 5}, 1, 1, -1.5f, 1.0f, true, {4, 6}},
      {"scalar_c", {8, 3}, {3, 9}, 0, 0, 1.0f, -1.0f, true, {}},
      {"one_by_one_c", {8, 3}, {3, 9}, 0, 0, 2.0f, 0.25f, true, {1, 1}},
      {"beta_zero_ignores_c", {6, 7}, {7, 5}, 0, 0, 1.0f, 0.0f, true, {6, 5}},
      {"fully_connected", {1, 300}, {50, 300}, 0, 1, 1.0f, 1.0f, true, {50}},
      {"column_output", {20, 30}, {1, 20}, 1, 1, 1.0f, 1.0f, true, {30, 1}},
      {"blocked", {100, 300}, {80, 300}, 0, 1, 0.8f, 1.2f, true, {80}},
  };
  for (const GemmCase& c : cases) {
    SCOPED_TRACE(c.name);
    OpTest t("Gemm", 13);
    t.attr("transA", c.transA).attr("transB", c.transB).attr("alpha", c.alpha);
    t.attr("beta", c.beta);
    std::vector<Tensor> inputs = {test::randomTensor(GetParam(), c.a, 9),
                                  test::randomTensor(GetParam(), c.b, 10)};
    if (c.hasC) inputs.push_back(test::randomTensor(GetParam(), c.c, 11));
    expectMatchesReference(t, inputs, &cpu::gemmLoopKernel);
  }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, TacticTypeTest,
                         ::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                           DataType::kBFloat16),
                         [](const auto& info) { return std::string(dataTypeName(info.param)); });

// ---- What the tactics reject, and why.

TEST(TacticUnsupportedTest, ConvRejectsOtherTypesAndRanks) {
  const std::vector<Tensor> ints = {test::randomTensor(DataType::kInt32, {1, 2, 4, 4}, 1, -5, 5),
                                    test::randomTensor(DataType::kInt32, {2, 2, 3, 3}, 2, -5, 5)};
  OpTest direct("Conv", 11);
  expectUnsupported(direct, ints, &cpu::convDirectKernel, "data type int32");
  OpTest loop("Conv", 11);
  expectUnsupported(loop, ints, &cpu::convIm2colLoopKernel, "data type int32");
  OpTest doubles("Conv", 11);
  expectUnsupported(doubles,
                    {test::randomTensor(DataType::kFloat64, {1, 2, 4, 4}, 1),
                     test::randomTensor(DataType::kFloat64, {2, 2, 3, 3}, 2)},
                    &cpu::convDirectKernel, "data type float64");
  OpTest threeD("Conv", 11);
  expectUnsupported(threeD,
                    {test::randomTensor(DataType::kFloat32, {1, 1, 3, 3, 3}, 1),
                     test::randomTensor(DataType::kFloat32, {1, 1, 2, 2, 2}, 2)},
                    &cpu::convDirectKernel, "1-D and 2-D only, not 3-D");
}

TEST(TacticUnsupportedTest, MatMulAndGemmRejectOtherTypes) {
  OpTest matmul("MatMul", 13);
  expectUnsupported(matmul,
                    {test::randomTensor(DataType::kInt32, {2, 3}, 1, -5, 5),
                     test::randomTensor(DataType::kInt32, {3, 2}, 2, -5, 5)},
                    &cpu::matmulLoopKernel, "data type int32");
  OpTest gemm("Gemm", 13);
  expectUnsupported(gemm,
                    {test::randomTensor(DataType::kFloat64, {2, 3}, 1),
                     test::randomTensor(DataType::kFloat64, {3, 2}, 2)},
                    &cpu::gemmLoopKernel, "data type float64");
}

TEST(TacticUnsupportedTest, BadInputIsAnErrorNotUnsupported) {
  OpTest conv("Conv", 11);
  Result<Tensor> result =
      runTactic(makeCase(conv, {test::randomTensor(DataType::kFloat32, {1, 3, 4, 4}, 1),
                                test::randomTensor(DataType::kFloat32, {2, 2, 3, 3}, 2)}),
                &cpu::convDirectKernel);
  ASSERT_FALSE(result.isOk());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  OpTest matmul("MatMul", 13);
  result = runTactic(makeCase(matmul, {test::randomTensor(DataType::kFloat32, {2, 3}, 1),
                                       test::randomTensor(DataType::kFloat32, {4, 2}, 2)}),
                     &cpu::matmulLoopKernel);
  ASSERT_FALSE(result.isOk());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::test
