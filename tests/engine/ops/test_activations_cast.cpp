// Tests for the elementwise family's activation and Cast kernels (see test_elementwise.cpp
// for the arithmetic ones). Transcendental expectations were computed with numpy.
#include <cmath>
#include <cstring>
#include <limits>

#include "support/op_test.h"

namespace kiln::test {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

Tensor runOk(OpTest& test) {
  auto out = test.run();
  EXPECT_TRUE(out.isOk()) << out.status().toString();
  if (!out.isOk()) return Tensor();
  return out.value()[0];
}

void expectFloats(const Tensor& actual, const Shape& shape, const std::vector<float>& expected,
                  double tol = 1e-5) {
  expectTensorNear(actual, floatTensor(shape, expected), tol, tol);
}

std::vector<uint8_t> bytesOf(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.rawData());
  return std::vector<uint8_t>(p, p + t.numel());
}

// ---- Activations.

TEST(Activations, ReluFamily) {
  Tensor x = floatTensor({4}, {-2, -0.5f, 0.5f, 3});
  OpTest relu("Relu", 14), leaky("LeakyRelu", 16), elu("Elu", 6), selu("Selu", 6),
      thresholded("ThresholdedRelu", 10), celu("Celu", 12);
  relu.input(x);
  leaky.attr("alpha", 0.1f).input(x);
  elu.input(x);
  selu.input(x);
  thresholded.attr("alpha", 0.6f).input(x);
  celu.attr("alpha", 2.0f).input(x);
  expectFloats(runOk(relu), {4}, {0, 0, 0.5f, 3});
  expectFloats(runOk(leaky), {4}, {-0.2f, -0.05f, 0.5f, 3});
  expectFloats(runOk(elu), {4}, {-0.86466473f, -0.39346933f, 0.5f, 3});
  expectFloats(runOk(selu), {4}, {-1.5201665f, -0.69175816f, 0.52535051f, 3.1521030f});
  expectFloats(runOk(thresholded), {4}, {0, 0, 0, 3});
  expectFloats(runOk(celu), {4}, {-1.2642411f, -0.44239843f, 0.5f, 3});
}

TEST(Activations, ReluOnIntegers) {
  OpTest t("Relu", 14);
  t.input(int64Tensor({3}, {-5, 0, 7}));
  expectTensorNear(runOk(t), int64Tensor({3}, {0, 0, 7}), 0, 0);
}

TEST(Activations, SigmoidFamilyIsStableForLargeInputs) {
  Tensor x = floatTensor({4}, {-100, -1, 0, 100});
  OpTest sigmoid("Sigmoid", 13), softplus("Softplus", 1), hardSigmoid("HardSigmoid", 6),
      hardSwish("HardSwish", 14), softsign("Softsign", 1), mish("Mish", 18);
  sigmoid.input(x);
  softplus.input(x);
  hardSigmoid.input(x);
  hardSwish.input(x);
  softsign.input(x);
  mish.input(x);
  expectFloats(runOk(sigmoid), {4}, {3.7200760e-44f, 0.26894142f, 0.5f, 1});
  expectFloats(runOk(softplus), {4}, {3.7200760e-44f, 0.31326169f, 0.69314718f, 100});
  expectFloats(runOk(hardSigmoid), {4}, {0, 0.3f, 0.5f, 1});
  expectFloats(runOk(hardSwish), {4}, {0, -0.33333334f, 0, 100});
  expectFloats(runOk(softsign), {4}, {-0.990099f, -0.5f, 0, 0.990099f});
  expectFloats(runOk(mish), {4}, {-3.7200760e-42f, -0.30340144f, 0, 100});
}

TEST(Activations, GeluExactAndTanh) {
  Tensor x = floatTensor({3}, {-1, 0.5f, 2});
  OpTest exact("Gelu", 20), approx("Gelu", 20), bad("Gelu", 20);
  exact.input(x);
  approx.attr("approximate", std::string("tanh")).input(x);
  bad.attr("approximate", std::string("sigmoid")).input(x);
  expectFloats(runOk(exact), {3}, {-0.15865525f, 0.34573123f, 1.9544997f});
  expectFloats(runOk(approx), {3}, {-0.15880801f, 0.34571401f, 1.9545977f});
  EXPECT_FALSE(bad.run().isOk());
}

TEST(Activations, Shrink) {
  OpTest t("Shrink", 9);
  t.attr("lambd", 1.0f).attr("bias", 0.5f);
  t.input(floatTensor({5}, {-2, -1, 0, 1, 3}));
  expectFloats(runOk(t), {5}, {-1.5f, 0, 0, 0, 2.5f});
  OpTest ints("Shrink", 9);
  ints.attr("lambd", 1.5f).attr("bias", 1.5f);
  ints.input(int64Tensor({3}, {-3, 1, 4}));
  expectTensorNear(runOk(ints), int64Tensor({3}, {-1, 0, 2}), 0, 0);
}

TEST(Activations, ClipWithAttributes) {
  OpTest t("Clip", 6);
  t.attr("min", -1.0f).attr("max", 2.0f);
  t.input(floatTensor({4}, {-5, 0.5f, 7, kNaN}));
  expectFloats(runOk(t), {4}, {-1, 0.5f, 2, kNaN});
}

TEST(Activations, ClipWithOptionalInputs) {
  OpTest maxOnly("Clip", 13);
  maxOnly.input(floatTensor({3}, {-5, 0.5f, 7})).missingInput().input(floatTensor({}, {1}));
  expectFloats(runOk(maxOnly), {3}, {-5, 0.5f, 1});
  OpTest ints("Clip", 13);
  ints.input(Tensor::fromVector(DataType::kInt8, {3}, std::vector<int8_t>{-100, 5, 100}))
      .input(Tensor::fromVector(DataType::kInt8, {}, std::vector<int8_t>{-10}))
      .input(Tensor::fromVector(DataType::kInt8, {}, std::vector<int8_t>{10}));
  expectTensorNear(runOk(ints),
                   Tensor::fromVector(DataType::kInt8, {3}, std::vector<int8_t>{-10, 5, 10}), 0, 0);
  OpTest inverted("Clip", 13);  // min > max: everything becomes max
  inverted.input(floatTensor({2}, {-1, 9})).input(floatTensor({}, {3})).input(floatTensor({}, {2}));
  expectFloats(runOk(inverted), {2}, {2, 2});
  OpTest notScalar("Clip", 13);
  notScalar.input(floatTensor({2}, {1, 2})).input(floatTensor({2}, {0, 0}));
  EXPECT_FALSE(notScalar.run().isOk());
}

// ---- Cast.

Tensor castTo(const Tensor& x, DataType to, int opset = 21, int64_t saturate = 1) {
  OpTest t("Cast", opset);
  t.attr("to", static_cast<int64_t>(to));
  if (opset >= 19) t.attr("saturate", saturate);
  t.input(x);
  return runOk(t);
}

TEST(Cast, FloatToIntegersTruncates) {
  Tensor x = floatTensor({4}, {2.7f, -2.7f, 0.2f, 300});
  expectTensorNear(castTo(x, DataType::kInt32),
                   Tensor::fromVector(DataType::kInt32, {4}, std::vector<int32_t>{2, -2, 0, 300}),
                   0, 0);
  Tensor b = castTo(floatTensor({3}, {0, -0.5f, kNaN}), DataType::kBool);
  EXPECT_FALSE(b.data<bool>()[0]);
  EXPECT_TRUE(b.data<bool>()[1]);
  EXPECT_TRUE(b.data<bool>()[2]);
}

TEST(Cast, HalfAndBFloat16RoundTrip) {
  Tensor x = floatTensor({3}, {1.0f / 3, 65504, 1e-8f});
  Tensor half = castTo(x, DataType::kFloat16);
  expectFloats(castTo(half, DataType::kFloat32), {3}, {0.33325195f, 65504, 0}, 0);
  Tensor bf = castTo(x, DataType::kBFloat16);
  expectFloats(castTo(bf, DataType::kFloat32), {3}, {0.333984375f, 65536, 1.0011718e-08f}, 0);
}

TEST(Cast, DoubleToHalfRoundsOnce) {
  // 1 + 2^-11 + 2^-40 lies just above a half midpoint: the correct half is 1 + 2^-10,
  // while rounding to float first would land on the midpoint and round to even (1.0).
  const double v = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  Tensor x = Tensor::fromVector(DataType::kFloat64, {1}, std::vector<double>{v});
  Tensor half = castTo(x, DataType::kFloat16);
  EXPECT_EQ(half.valueAsDouble(0), 1.0 + std::ldexp(1.0, -10));
}

TEST(Cast, StringsBothWays) {
  Tensor s(DataType::kString, {6});
  s.strings() = {"0.5", "1e3", "NaN", "INF", "-INF", "+inf"};
  expectFloats(castTo(s, DataType::kFloat32), {6}, {0.5f, 1000, kNaN, kInf, -kInf, kInf});
  Tensor ints(DataType::kString, {2});
  ints.strings() = {"9007199254740993", "100.7"};
  expectTensorNear(castTo(ints, DataType::kInt64), int64Tensor({2}, {9007199254740993LL, 100}), 0,
                   0);
  // numpy's spelling: shortest digits, ".0" on integers, scientific from 1e6 for float32.
  Tensor text = castTo(floatTensor({7}, {0.039187793f, -2, 1234567, 1e-5f, 120, kNaN, -kInf}),
                       DataType::kString);
  EXPECT_EQ(text.strings(), (std::vector<std::string>{"0.039187793", "-2.0", "1.234567e+06",
                                                      "1e-05", "120.0", "NaN", "-INF"}));
  Tensor doubles =
      castTo(Tensor::fromVector(DataType::kFloat64, {2}, std::vector<double>{1234567, 0.1}),
             DataType::kString);
  EXPECT_EQ(doubles.strings(), (std::vector<std::string>{"1234567.0", "0.1"}));
  Tensor half = castTo(castTo(floatTensor({1}, {0.1f}), DataType::kFloat16), DataType::kString);
  EXPECT_EQ(half.strings(), (std::vector<std::string>{"0.1"}));
  Tensor bad(DataType::kString, {1});
  bad.strings() = {"abc"};
  OpTest t("Cast", 21);
  t.attr("to", static_cast<int64_t>(DataType::kFloat32)).input(bad);
  EXPECT_FALSE(t.run().isOk());
}

TEST(Cast, Float8Saturation) {
  Tensor x = floatTensor({6}, {0.47892547f, 1e6f, 1e-7f, kInf, -kInf, -1e-7f});
  // E4M3FN: 0.46875 = 0x2F; 448 = 0x7E; NaN = 0x7F.
  EXPECT_EQ(bytesOf(castTo(x, DataType::kFp8E4M3)),
            (std::vector<uint8_t>{0x2F, 0x7E, 0x00, 0x7E, 0xFE, 0x80}));
  EXPECT_EQ(bytesOf(castTo(x, DataType::kFp8E4M3, 21, 0)),
            (std::vector<uint8_t>{0x2F, 0x7F, 0x00, 0x7F, 0xFF, 0x80}));
  // E5M2: 0.5 = 0x38; 57344 = 0x7B; inf = 0x7C.
  EXPECT_EQ(bytesOf(castTo(x, DataType::kFp8E5M2)),
            (std::vector<uint8_t>{0x38, 0x7B, 0x00, 0x7B, 0xFB, 0x80}));
  EXPECT_EQ(bytesOf(castTo(x, DataType::kFp8E5M2, 21, 0)),
            (std::vector<uint8_t>{0x38, 0x7C, 0x00, 0x7C, 0xFC, 0x80}));
  // FNUZ formats: NaN is 0x80 and there is no negative zero.
  EXPECT_EQ(bytesOf(castTo(x, DataType::kFp8E4M3Uz, 21, 0)),
            (std::vector<uint8_t>{0x37, 0x80, 0x00, 0x80, 0x80, 0x00}));
  EXPECT_EQ(bytesOf(castTo(x, DataType::kFp8E5M2Uz)),
            (std::vector<uint8_t>{0x3C, 0x7F, 0x00, 0x7F, 0xFF, 0x00}));
}

TEST(Cast, Float8Decode) {
  Tensor x(DataType::kFp8E4M3Uz, {4});
  const std::vector<uint8_t> codes = {0x37, 0x7F, 0x80, 0x81};
  std::memcpy(x.rawData(), codes.data(), codes.size());
  expectFloats(castTo(x, DataType::kFloat32), {4}, {0.46875f, 240, kNaN, -std::ldexp(1.0f, -10)},
               0);
}

TEST(Cast, Int4SaturatesAndRoundsToEven) {
  Tensor x = floatTensor({5}, {-9, 2.5f, 3.5f, 7.6f, -0.4f});
  Tensor i4 = castTo(x, DataType::kInt4);
  ASSERT_EQ(i4.type(), DataType::kInt4);
  EXPECT_EQ(i4.data<int8_t>()[0], -8);
  EXPECT_EQ(i4.data<int8_t>()[1], 2);
  EXPECT_EQ(i4.data<int8_t>()[2], 4);
  EXPECT_EQ(i4.data<int8_t>()[3], 7);
  EXPECT_EQ(i4.data<int8_t>()[4], 0);
  expectFloats(castTo(i4, DataType::kFloat32), {5}, {-8, 2, 4, 7, 0}, 0);
  Tensor u4 = castTo(x, DataType::kUInt4);
  EXPECT_EQ(bytesOf(u4), (std::vector<uint8_t>{0, 2, 4, 8, 0}));
}

TEST(Cast, CastLikeTakesSecondInputsType) {
  OpTest t("CastLike", 19);
  t.input(floatTensor({2}, {1.9f, -1.9f})).input(int64Tensor({}, {0}));
  expectTensorNear(runOk(t), int64Tensor({2}, {1, -1}), 0, 0);
}

TEST(Cast, RejectsUnknownTarget) {
  OpTest t("Cast", 13);
  t.attr("to", int64_t{14}).input(floatTensor({1}, {1}));  // complex64
  EXPECT_FALSE(t.run().isOk());
  OpTest missing("Cast", 13);
  missing.input(floatTensor({1}, {1}));
  EXPECT_FALSE(missing.run().isOk());
}

}  // namespace
}  // namespace kiln::test
