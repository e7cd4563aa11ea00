// Cross-backend tests for the elementwise family: CUDA engine vs CPU reference. Float ops
// run at fp32/fp16/bf16; integer and bool ops at fp32 only (compared exactly). This file:
// unary math and activations; test_cuda_elementwise_binary.cpp the rest.
#include <limits>
#include <string>

#include "gpu/elementwise_test.h"

namespace kiln::test {
namespace {

using namespace elementwise;

// ---- Unary math.

TEST(CudaElementwise, UnaryMath) {
  KILN_REQUIRE_GPU();
  checkUnaryCases({
      {"Abs", 13, -2, 2, false},         {"Neg", 13, -2, 2, false},
      {"Sign", 13, -2, 2, false},        {"Exp", 13, -3, 3, true},
      {"Log", 13, 0.05, 10, false},   // positive inputs
      {"Sqrt", 13, 0.01, 10, false},  // positive inputs
      {"Reciprocal", 13, 0.5, 4, false}, {"Floor", 13, -4, 4, false},
      {"Ceil", 13, -4, 4, false},        {"Round", 11, -4, 4, false},
      {"Sin", 7, -3, 3, false},          {"Cos", 7, -3, 3, false},
      {"Tan", 7, -1.2, 1.2, true},       {"Asin", 7, -0.95, 0.95, false},  // |x| < 1
      {"Acos", 7, -0.95, 0.95, false},                                     // |x| < 1
      {"Atan", 7, -3, 3, false},         {"Sinh", 9, -3, 3, true},
      {"Cosh", 9, -3, 3, true},          {"Asinh", 9, -3, 3, false},
      {"Acosh", 9, 1.1, 5, false},    // x > 1
      {"Atanh", 9, -0.9, 0.9, true},  // |x| < 1; steep near the ends
      {"Erf", 13, -2, 2, false},
  });
}

TEST(CudaElementwise, RoundHalvesToEven) {
  KILN_REQUIRE_GPU();
  EwTest("Round", 11)
      .input(floatTensor({8}, {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.49f, -3.51f}))
      .check();
}

TEST(CudaElementwise, IntegerUnary) {
  KILN_REQUIRE_GPU();
  EwTest("Abs", 13).input(randomTensor(DataType::kInt32, kShape, 1, -50, 50)).check(fp32Only());
  EwTest("Abs", 13).input(randomTensor(DataType::kUInt8, kShape, 2, 0, 250)).check(fp32Only());
  EwTest("Neg", 13).input(randomTensor(DataType::kInt64, kShape, 3, -50, 50)).check(fp32Only());
  EwTest("Neg", 13).input(randomTensor(DataType::kInt8, kShape, 4, -100, 100)).check(fp32Only());
  EwTest("Sign", 13).input(randomTensor(DataType::kInt16, kShape, 5, -5, 5)).check(fp32Only());
  EwTest("Sign", 13).input(randomTensor(DataType::kUInt32, kShape, 6, 0, 5)).check(fp32Only());
  EwTest("Erf", 13).input(randomTensor(DataType::kInt32, kShape, 7, -3, 3)).check(fp32Only());
  EwTest("Relu", 14).input(randomTensor(DataType::kInt32, kShape, 8, -9, 9)).check(fp32Only());
  EwTest("Relu", 14).input(randomTensor(DataType::kInt8, kShape, 9, -9, 9)).check(fp32Only());
}

TEST(CudaElementwise, FloatUnaryInFloat64) {
  KILN_REQUIRE_GPU();
  EwTest("Exp", 13).input(randomTensor(DataType::kFloat64, kShape, 10, -3, 3)).check(fp32Only());
  EwTest("Sigmoid", 13)
      .input(randomTensor(DataType::kFloat64, kShape, 11, -3, 3))
      .check(fp32Only());
}

TEST(CudaElementwise, NotAndBitwiseNot) {
  KILN_REQUIRE_GPU();
  EwTest("Not", 1).input(randomTensor(DataType::kBool, kShape, 12)).check(fp32Only());
  EwTest("BitwiseNot", 18)
      .input(randomTensor(DataType::kInt32, kShape, 13, -100, 100))
      .check(fp32Only());
  EwTest("BitwiseNot", 18)
      .input(randomTensor(DataType::kUInt8, kShape, 14, 0, 255))
      .check(fp32Only());
}

TEST(CudaElementwise, IsNaNAndIsInf) {
  KILN_REQUIRE_GPU();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = floatTensor({2, 4}, {1.f, nan, inf, -inf, 0.f, -2.f, nan, inf});
  EwTest("IsNaN", 13).input(x).check();
  EwTest("IsInf", 10).input(x).check();
  EwTest("IsInf", 10).attr("detect_negative", int64_t{0}).input(x).check();
  EwTest("IsInf", 10).attr("detect_positive", int64_t{0}).input(x).check();
}

// ---- Activations.

TEST(CudaElementwise, Activations) {
  KILN_REQUIRE_GPU();
  checkUnaryCases({
      {"Relu", 14, -2, 2, false},
      {"Sigmoid", 13, -6, 6, false},
      {"HardSwish", 14, -5, 5, false},
      {"Softplus", 1, -5, 5, false},
      {"Softsign", 1, -5, 5, false},
      {"Tanh", 13, -3, 3, false},
      {"Mish", 18, -4, 4, false},
      {"Elu", 6, -3, 3, false},
      {"Selu", 6, -3, 3, false},
      {"LeakyRelu", 6, -3, 3, false},
      {"HardSigmoid", 6, -5, 5, false},
      {"ThresholdedRelu", 10, -3, 3, false},
      {"Celu", 12, -3, 3, false},
      {"Swish", 24, -5, 5, false},
  });
}

TEST(CudaElementwise, ActivationAttributes) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({4, 33}, 20, -3, 3);
  EwTest("LeakyRelu", 16).attr("alpha", 0.2f).input(x).check();
  EwTest("Elu", 6).attr("alpha", 0.5f).input(x).check();
  EwTest("Selu", 6).attr("alpha", 1.5f).attr("gamma", 1.1f).input(x).check();
  EwTest("Celu", 12).attr("alpha", 0.7f).input(x).check();
  EwTest("HardSigmoid", 6).attr("alpha", 0.3f).attr("beta", 0.4f).input(x).check();
  EwTest("ThresholdedRelu", 10).attr("alpha", 0.4f).input(x).check();
  EwTest("Swish", 24).attr("alpha", 1.702f).input(x).check();
}

// The op table's demo op (tests/engine/ops/test_op_table.cpp): a row and two kernels.
TEST(CudaElementwise, QuickGeluOfTheMicrosoftDomain) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({4, 33}, 24, -5, 5);
  EwTest("QuickGelu", 1, "com.microsoft").input(x).check();
  EwTest("QuickGelu", 1, "com.microsoft").attr("alpha", 1.2f).input(x).check();
}

TEST(CudaElementwise, Gelu) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({4, 65}, 21, -4, 4);
  EwTest("Gelu", 20).input(x).check();
  EwTest("Gelu", 20).attr("approximate", std::string("none")).input(x).check();
  EwTest("Gelu", 20).attr("approximate", std::string("tanh")).input(x).check();
}

TEST(CudaElementwise, Shrink) {
  KILN_REQUIRE_GPU();
  EwTest("Shrink", 9).input(randomFloats(kShape, 22, -2, 2)).check();
  EwTest("Shrink", 9)
      .attr("lambd", 0.8f)
      .attr("bias", 0.3f)
      .input(randomFloats(kShape, 23, -2, 2))
      .check();
  EwTest("Shrink", 9)
      .attr("lambd", 2.0f)
      .attr("bias", 1.0f)
      .input(randomTensor(DataType::kInt32, kShape, 24, -6, 6))
      .check(fp32Only());
}

TEST(CudaElementwise, SwiGlu) {
  KILN_REQUIRE_GPU();
  EwTest("SwiGLU", 28)
      .input(randomFloats({3, 40}, 25, -4, 4))
      .input(randomFloats({3, 40}, 26, -2, 2))
      .check();
}

TEST(CudaElementwise, ClipAttributes) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({3, 50}, 30, -3, 3);
  EwTest("Clip", 6).attr("min", -0.5f).attr("max", 1.25f).input(x).check();
  EwTest("Clip", 6).attr("max", 0.75f).input(x).check();
  EwTest("Clip", 6).input(x).check();
}

TEST(CudaElementwise, ClipInputs) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({3, 50}, 31, -3, 3);
  Tensor lo = floatTensor({}, {-0.5f});
  Tensor hi = floatTensor({}, {1.25f});
  EwTest("Clip", 13).input(x).constant(lo).constant(hi).check();
  EwTest("Clip", 13).input(x).missingInput().constant(hi).check();
  EwTest("Clip", 13).input(x).constant(lo).check();
  EwTest("Clip", 13).input(x).check();
  // Bounds computed at run time: read by the kernel on the device.
  EwTest("Clip", 13).input(x).input(lo).input(hi).check();
  // min > max: every element becomes max.
  EwTest("Clip", 13).input(x).constant(hi).constant(lo).check();
}

TEST(CudaElementwise, ClipIntegers) {
  KILN_REQUIRE_GPU();
  Tensor x = randomTensor(DataType::kInt64, {4, 9}, 32, -100, 100);
  EwTest("Clip", 13)
      .input(x)
      .constant(int64Tensor({}, {-20}))
      .constant(int64Tensor({}, {35}))
      .check(fp32Only());
  EwTest("Clip", 13).input(x).missingInput().constant(int64Tensor({}, {0})).check(fp32Only());
  Tensor u8 = randomTensor(DataType::kUInt8, {4, 9}, 33, 0, 255);
  EwTest("Clip", 13)
      .input(u8)
      .constant(Tensor::fromVector<uint8_t>(DataType::kUInt8, {}, {10}))
      .check(fp32Only());
}

TEST(CudaElementwise, PRelu) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({2, 3, 4, 5}, 40, -2, 2);
  EwTest("PRelu", 16).input(x).input(randomFloats({3, 1, 1}, 41, 0, 0.5)).check();
  EwTest("PRelu", 16).input(x).constant(randomFloats({5}, 42, 0, 0.5)).check();
  EwTest("PRelu", 16).input(x).constant(floatTensor({1}, {0.25f})).check();
  EwTest("PRelu", 16).input(x).input(randomFloats({2, 3, 4, 5}, 43, 0, 0.5)).check();
  EwTest("PRelu", 16)
      .input(randomTensor(DataType::kInt32, {3, 4}, 44, -20, 20))
      .input(randomTensor(DataType::kInt32, {4}, 45, 1, 4))
      .check(fp32Only());
}

}  // namespace
}  // namespace kiln::test
