// FP8 (float8e4m3fn, ONNX type 17) conversions and the CPU QuantizeLinear /
// DequantizeLinear kernels on it: hand-computed codes for rounding (nearest even),
// subnormals, saturation and NaN; every float between two codes against a brute-force
// nearest-code oracle; floatToFp8E4M3 against the Cast op's own float8 encoder.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "kiln/reference_backend.h"
#include "kiln/tensor.h"

namespace kiln {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Code = S.EEEE.MMM: normal 2^(E-7) (1 + M/8), subnormal M 2^-9.
TEST(Fp8E4M3, DecodesHandComputedCodes) {
  EXPECT_EQ(fp8E4M3ToFloat(0x00), 0.f);
  EXPECT_TRUE(std::signbit(fp8E4M3ToFloat(0x80)));
  EXPECT_EQ(fp8E4M3ToFloat(0x01), std::ldexp(1.f, -9));  // smallest subnormal
  EXPECT_EQ(fp8E4M3ToFloat(0x07), 7 * std::ldexp(1.f, -9));
  EXPECT_EQ(fp8E4M3ToFloat(0x08), std::ldexp(1.f, -6));  // smallest normal
  EXPECT_EQ(fp8E4M3ToFloat(0x38), 1.f);
  EXPECT_EQ(fp8E4M3ToFloat(0x2A), 0.3125f);
  EXPECT_EQ(fp8E4M3ToFloat(0xC6), -3.5f);
  EXPECT_EQ(fp8E4M3ToFloat(0x77), 240.f);
  EXPECT_EQ(fp8E4M3ToFloat(0x7E), 448.f);  // largest finite
  EXPECT_EQ(fp8E4M3ToFloat(0xFE), -448.f);
  EXPECT_TRUE(std::isnan(fp8E4M3ToFloat(0x7F)));  // E4M3FN: S.1111.111 only
  EXPECT_TRUE(std::isnan(fp8E4M3ToFloat(0xFF)));
}

TEST(Fp8E4M3, EncodesHandComputedValues) {
  const float sub = std::ldexp(1.f, -10);  // half the smallest subnormal
  const struct {
    float value;
    uint8_t code;
  } cases[] = {
      {0.f, 0x00},
      {-0.f, 0x80},
      {1.f, 0x38},
      {448.f, 0x7E},
      {-448.f, 0xFE},
      {0.3f, 0x2A},  // 0.3 -> 1.25 * 2^-2
      {-3.5f, 0xC6},
      {1.07f, 0x39},    // nearer 1.125 than 1
      {1.0625f, 0x38},  // tie 1 | 1.125: even
      {1.1875f, 0x3A},  // tie 1.125 | 1.25: even
      {sub, 0x00},
      {-sub, 0x80},  // tie 0 | 2^-9: even
      {sub * 1.001f, 0x01},
      {3 * sub, 0x02},   // tie 0x01 | 0x02
      {15 * sub, 0x08},  // tie into the normals
      {std::ldexp(1.f, -9), 0x01},
      {std::ldexp(1.f, -6), 0x08},
      {1e-9f, 0x00},
  };
  for (const auto& c : cases) EXPECT_EQ(floatToFp8E4M3(c.value, true), c.code) << c.value;
}

TEST(Fp8E4M3, SaturatesOrTurnsNaN) {
  for (float v : {449.f, 464.f, 465.f, 1e6f, kInf}) {
    EXPECT_EQ(floatToFp8E4M3(v, true), 0x7E) << v;
    EXPECT_EQ(floatToFp8E4M3(-v, true), 0xFE) << -v;
  }
  // saturate = 0: values that round past 448 (and infinities) become NaN; 464 is the
  // tie between 448 and the missing 480 and rounds to the even 448.
  EXPECT_EQ(floatToFp8E4M3(448.5f, false), 0x7E);
  EXPECT_EQ(floatToFp8E4M3(464.f, false), 0x7E);
  EXPECT_EQ(floatToFp8E4M3(465.f, false), 0x7F);
  EXPECT_EQ(floatToFp8E4M3(-500.f, false), 0xFF);
  EXPECT_EQ(floatToFp8E4M3(kInf, false), 0x7F);
  EXPECT_EQ(floatToFp8E4M3(-kInf, false), 0xFF);
  EXPECT_EQ(floatToFp8E4M3(kNaN, true), 0x7F);  // NaN stays NaN
  EXPECT_EQ(floatToFp8E4M3(-kNaN, true), 0xFF);
}

// The nearest finite code by search (ties to the even code), saturating.
uint8_t nearestCode(float v) {
  const float a = std::fabs(v);
  uint8_t best = 0;
  if (a > 448.f) {
    best = 0x7E;
  } else {
    float bestErr = kInf;
    for (int c = 0; c <= 0x7E; ++c) {
      const float err = std::fabs(fp8E4M3ToFloat(static_cast<uint8_t>(c)) - a);
      if (err < bestErr || (err == bestErr && c % 2 == 0)) {
        bestErr = err;
        best = static_cast<uint8_t>(c);
      }
    }
  }
  return best | (std::signbit(v) ? 0x80 : 0);
}

TEST(Fp8E4M3, MatchesNearestCodeSearchAtEveryMidpoint) {
  for (int c = 0; c < 0x7E; ++c) {
    const float lo = fp8E4M3ToFloat(static_cast<uint8_t>(c));
    const float hi = fp8E4M3ToFloat(static_cast<uint8_t>(c + 1));
    const float mid = (lo + hi) / 2;  // exact: a few significant bits
    for (float v : {lo, hi, mid, std::nextafter(mid, 0.f), std::nextafter(mid, kInf)}) {
      EXPECT_EQ(floatToFp8E4M3(v, true), nearestCode(v)) << v;
      EXPECT_EQ(floatToFp8E4M3(-v, true), nearestCode(-v)) << -v;
    }
    EXPECT_EQ(floatToFp8E4M3(lo, true), c);  // every finite code round-trips
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> exponent(-12.f, 9.5f);
  for (int i = 0; i < 20000; ++i) {
    const float v = std::exp2(exponent(rng)) * (i % 2 ? -1.f : 1.f);
    ASSERT_EQ(floatToFp8E4M3(v, true), nearestCode(v)) << v;
  }
}

Tensor floats(const std::vector<float>& values) {
  return Tensor::fromVector(DataType::kFloat32, {int64_t(values.size())}, values);
}

Tensor fp8Scalar(float v) {
  Tensor t(DataType::kFp8E4M3, Shape{});
  t.data<uint8_t>()[0] = floatToFp8E4M3(v, true);
  return t;
}

std::vector<Tensor> runNode(const std::string& op, std::map<std::string, Tensor> values,
                            std::vector<std::string> inputs, int64_t saturate = 1, int opset = 19) {
  Node node;
  node.opType = op;
  node.opset = opset;
  node.inputs = std::move(inputs);
  node.outputs = {"y"};
  if (op == "QuantizeLinear" || op == "Cast") {
    Attribute a;
    a.i = saturate;
    node.attributes["saturate"] = a;
  }
  if (op == "Cast") {
    Attribute to;
    to.i = static_cast<int64_t>(DataType::kFp8E4M3);
    node.attributes["to"] = to;
  }
  std::vector<Tensor> outputs;
  Status status = runReferenceNode(node, values, &outputs);
  EXPECT_TRUE(status.isOk()) << status.toString();
  return outputs;
}

TEST(Fp8E4M3, AgreesWithTheCastOpEncoder) {
  std::vector<float> values;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> exponent(-12.f, 9.5f);
  for (int i = 0; i < 4000; ++i) values.push_back(std::exp2(exponent(rng)) * (i % 2 ? -1 : 1));
  for (int64_t saturate : {0, 1}) {
    const Tensor y = runNode("Cast", {{"x", floats(values)}}, {"x"}, saturate)[0];
    ASSERT_EQ(y.type(), DataType::kFp8E4M3);
    for (size_t i = 0; i < values.size(); ++i)
      ASSERT_EQ(y.data<uint8_t>()[i], floatToFp8E4M3(values[i], saturate != 0)) << values[i];
  }
}

// QuantizeLinear-19 to float8e4m3fn: E4M3(x / scale), saturating unless saturate = 0;
// DequantizeLinear: code value * scale.
TEST(Fp8QuantizeLinear, RoundsSaturatesAndDequantizes) {
  const std::map<std::string, Tensor> values = {
      {"x", floats({0.5f, -1.f, 0.53f, 1000.f, -1000.f, kNaN, 3.f / 1024})},
      {"s", Tensor::fromVector(DataType::kFloat32, {}, std::vector<float>{0.5f})},
      {"z", fp8Scalar(0.f)}};
  const Tensor q = runNode("QuantizeLinear", values, {"x", "s", "z"})[0];
  ASSERT_EQ(q.type(), DataType::kFp8E4M3);
  // 1.0, -2.0, 1.06 -> 1.0 (nearer than 1.125), 2000 -> 448, -2000 -> -448, NaN,
  // 6 * 2^-10 = 3 * 2^-9 (a subnormal code)
  const std::vector<int64_t> expected = {0x38, 0xC0, 0x38, 0x7E, 0xFE, 0x7F, 0x03};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(q.data<uint8_t>()[i], expected[i]) << i;
  const Tensor unsaturated = runNode("QuantizeLinear", values, {"x", "s", "z"}, 0)[0];
  EXPECT_EQ(unsaturated.data<uint8_t>()[3], 0x7F);  // 2000 is out of range: NaN
  std::map<std::string, Tensor> dqValues = values;
  dqValues["q"] = q;
  const Tensor dq = runNode("DequantizeLinear", dqValues, {"q", "s", "z"})[0];
  ASSERT_EQ(dq.type(), DataType::kFloat32);
  const std::vector<float> back = {0.5f, -1.f, 0.5f, 224.f, -224.f, kNaN, 3.f / 1024};
  for (size_t i = 0; i < back.size(); ++i) {
    if (std::isnan(back[i]))
      EXPECT_TRUE(std::isnan(dq.data<float>()[i]));
    else
      EXPECT_EQ(dq.data<float>()[i], back[i]) << i;
  }
}

}  // namespace
}  // namespace kiln
