// Tests for the elementwise op family: see tests/support/op_test.h. Expected values are
// computed by hand (or with numpy for the transcendental ones).
#include <cmath>
#include <limits>

#include "support/op_test.h"

namespace kiln::test {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

template <class T>
Tensor typed(DataType type, const Shape& shape, const std::vector<T>& values) {
  return Tensor::fromVector(type, shape, values);
}

Tensor boolTensor(const Shape& shape, const std::vector<int>& values) {
  Tensor t(DataType::kBool, shape);
  for (size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i] != 0;
  return t;
}

Tensor halfTensor(const Shape& shape, const std::vector<float>& values) {
  std::vector<Half> halves;
  for (float v : values) halves.push_back(Half(v));
  return Tensor::fromVector(DataType::kFloat16, shape, halves);
}

// Runs a one-output op and returns its output, failing the test on error.
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

// ---- Binary arithmetic and broadcasting.

TEST(Elementwise, AddSameShape) {
  OpTest t("Add", 14);
  t.input(floatTensor({2, 2}, {1, 2, 3, 4})).input(floatTensor({2, 2}, {10, 20, 30, 40}));
  expectFloats(runOk(t), {2, 2}, {11, 22, 33, 44});
}

TEST(Elementwise, SubScalarOnEitherSide) {
  OpTest left("Sub", 14);
  left.input(floatTensor({}, {10})).input(floatTensor({3}, {1, 2, 3}));
  expectFloats(runOk(left), {3}, {9, 8, 7});
  OpTest right("Sub", 14);
  right.input(floatTensor({3}, {1, 2, 3})).input(floatTensor({1}, {10}));
  expectFloats(runOk(right), {3}, {-9, -8, -7});
}

TEST(Elementwise, MulBroadcastsBothWays) {
  OpTest t("Mul", 14);
  t.input(floatTensor({2, 1, 3}, {1, 2, 3, 4, 5, 6})).input(floatTensor({2, 1}, {10, 100}));
  expectFloats(runOk(t), {2, 2, 3}, {10, 20, 30, 100, 200, 300, 40, 50, 60, 400, 500, 600});
}

TEST(Elementwise, AddChannelBroadcastCoalesces) {
  // [2,3,2,2] + [1,3,1,1]: rows of 4 with a per-channel bias.
  std::vector<float> x(24), expected(24);
  for (int i = 0; i < 24; ++i) {
    x[i] = static_cast<float>(i);
    expected[i] = static_cast<float>(i) + 10.0f * static_cast<float>((i / 4) % 3 + 1);
  }
  OpTest t("Add", 14);
  t.input(floatTensor({2, 3, 2, 2}, x)).input(floatTensor({1, 3, 1, 1}, {10, 20, 30}));
  expectFloats(runOk(t), {2, 3, 2, 2}, expected);
}

TEST(Elementwise, IntegerAddWraps) {
  OpTest t("Add", 14);
  t.input(typed<uint8_t>(DataType::kUInt8, {2}, {250, 3}))
      .input(typed<uint8_t>(DataType::kUInt8, {2}, {10, 4}));
  Tensor out = runOk(t);
  EXPECT_EQ(out.data<uint8_t>()[0], 4);
  EXPECT_EQ(out.data<uint8_t>()[1], 7);
  OpTest big("Mul", 14);
  big.input(typed<int32_t>(DataType::kInt32, {1}, {std::numeric_limits<int32_t>::max()}))
      .input(typed<int32_t>(DataType::kInt32, {1}, {2}));
  EXPECT_EQ(runOk(big).data<int32_t>()[0], -2);
}

TEST(Elementwise, AddRejectsBadInputs) {
  OpTest shapes("Add", 14);
  shapes.input(floatTensor({2, 3}, {1, 2, 3, 4, 5, 6})).input(floatTensor({2}, {1, 2}));
  EXPECT_FALSE(shapes.run().isOk());
  OpTest types("Add", 14);
  types.input(floatTensor({1}, {1})).input(int64Tensor({1}, {1}));
  EXPECT_FALSE(types.run().isOk());
  OpTest boolean("Add", 14);
  boolean.input(boolTensor({1}, {1})).input(boolTensor({1}, {1}));
  EXPECT_FALSE(boolean.run().isOk());
}

TEST(Elementwise, HalfAddComputesInFloat) {
  OpTest t("Add", 14);
  t.input(halfTensor({2}, {1.5f, -2.0f})).input(halfTensor({2}, {0.25f, 0.5f}));
  expectTensorNear(runOk(t), halfTensor({2}, {1.75f, -1.5f}), 0, 0);
}

TEST(Elementwise, IntegerDivTruncatesTowardZero) {
  OpTest t("Div", 14);
  t.input(typed<int32_t>(DataType::kInt32, {4}, {-7, 7, 9, std::numeric_limits<int32_t>::min()}))
      .input(typed<int32_t>(DataType::kInt32, {4}, {2, -2, 3, -1}));
  Tensor out = runOk(t);
  EXPECT_EQ(out.data<int32_t>()[0], -3);
  EXPECT_EQ(out.data<int32_t>()[1], -3);
  EXPECT_EQ(out.data<int32_t>()[2], 3);
  EXPECT_EQ(out.data<int32_t>()[3], std::numeric_limits<int32_t>::min());
}

TEST(Elementwise, IntegerDivByZeroIsAnError) {
  OpTest t("Div", 14);
  t.input(int64Tensor({2}, {4, 5})).input(int64Tensor({2}, {1, 0}));
  EXPECT_FALSE(t.run().isOk());
}

TEST(Elementwise, ModIntegerSignFollowsDivisor) {
  OpTest t("Mod", 13);
  t.input(int64Tensor({6}, {-4, 7, 5, 4, -7, 8})).input(int64Tensor({6}, {3, -3, 8, -2, 3, 5}));
  expectTensorNear(runOk(t), int64Tensor({6}, {2, -2, 5, 0, 2, 3}), 0, 0);
}

TEST(Elementwise, ModFmodFollowsDividend) {
  OpTest t("Mod", 13);
  t.attr("fmod", int64_t{1});
  t.input(floatTensor({3}, {-4.5f, 7.5f, 5.0f})).input(floatTensor({3}, {2.0f, -2.0f, 3.0f}));
  expectFloats(runOk(t), {3}, {-0.5f, 1.5f, 2.0f});
  OpTest ints("Mod", 13);
  ints.attr("fmod", int64_t{1});
  ints.input(int64Tensor({2}, {-7, 7})).input(int64Tensor({2}, {3, -3}));
  expectTensorNear(runOk(ints), int64Tensor({2}, {-1, 1}), 0, 0);
}

TEST(Elementwise, PowMixedTypes) {
  OpTest square("Pow", 15);
  square.input(floatTensor({3}, {1.5f, -2, 3})).input(floatTensor({}, {2}));
  expectFloats(runOk(square), {3}, {2.25f, 4, 9});
  OpTest intExp("Pow", 15);
  intExp.input(floatTensor({3}, {2, 3, 4})).input(int64Tensor({3}, {-1, 2, 3}));
  expectFloats(runOk(intExp), {3}, {0.5f, 9, 64});
  OpTest intBase("Pow", 15);
  intBase.input(typed<int32_t>(DataType::kInt32, {3}, {2, 3, 9}))
      .input(floatTensor({3}, {3, 2, 0.5f}));
  expectTensorNear(runOk(intBase), typed<int32_t>(DataType::kInt32, {3}, {8, 9, 3}), 0, 0);
  OpTest intInt("Pow", 15);
  intInt.input(int64Tensor({3}, {3, -2, 5})).input(int64Tensor({3}, {4, 3, -1}));
  expectTensorNear(runOk(intInt), int64Tensor({3}, {81, -8, 0}), 0, 0);
}

TEST(Elementwise, BitShift) {
  OpTest left("BitShift", 11);
  left.attr("direction", std::string("LEFT"));
  left.input(typed<uint8_t>(DataType::kUInt8, {3}, {1, 3, 255}))
      .input(typed<uint8_t>(DataType::kUInt8, {3}, {2, 1, 9}));
  expectTensorNear(runOk(left), typed<uint8_t>(DataType::kUInt8, {3}, {4, 6, 0}), 0, 0);
  OpTest right("BitShift", 11);
  right.attr("direction", std::string("RIGHT"));
  right.input(typed<uint32_t>(DataType::kUInt32, {2}, {16, 7}))
      .input(typed<uint32_t>(DataType::kUInt32, {1}, {2}));
  expectTensorNear(runOk(right), typed<uint32_t>(DataType::kUInt32, {2}, {4, 1}), 0, 0);
  OpTest bad("BitShift", 11);
  bad.attr("direction", std::string("UP"));
  bad.input(typed<uint8_t>(DataType::kUInt8, {1}, {1}))
      .input(typed<uint8_t>(DataType::kUInt8, {1}, {1}));
  EXPECT_FALSE(bad.run().isOk());
}

TEST(Elementwise, BitwiseOps) {
  OpTest t("BitwiseXor", 18);
  t.input(typed<int16_t>(DataType::kInt16, {2}, {0x0F0F, -1}))
      .input(typed<int16_t>(DataType::kInt16, {1}, {0x00FF}));
  expectTensorNear(runOk(t), typed<int16_t>(DataType::kInt16, {2}, {0x0FF0, ~0x00FF}), 0, 0);
  OpTest n("BitwiseNot", 18);
  n.input(typed<uint8_t>(DataType::kUInt8, {2}, {0, 0xF0}));
  expectTensorNear(runOk(n), typed<uint8_t>(DataType::kUInt8, {2}, {0xFF, 0x0F}), 0, 0);
  OpTest floats("BitwiseAnd", 18);
  floats.input(floatTensor({1}, {1})).input(floatTensor({1}, {1}));
  EXPECT_FALSE(floats.run().isOk());
}

TEST(Elementwise, LogicalOps) {
  Tensor a = boolTensor({4}, {0, 0, 1, 1});
  Tensor b = boolTensor({4}, {0, 1, 0, 1});
  OpTest andOp("And", 7), orOp("Or", 7), xorOp("Xor", 7), notOp("Not", 1);
  andOp.input(a).input(b);
  orOp.input(a).input(b);
  xorOp.input(a).input(b);
  notOp.input(a);
  expectTensorNear(runOk(andOp), boolTensor({4}, {0, 0, 0, 1}), 0, 0);
  expectTensorNear(runOk(orOp), boolTensor({4}, {0, 1, 1, 1}), 0, 0);
  expectTensorNear(runOk(xorOp), boolTensor({4}, {0, 1, 1, 0}), 0, 0);
  expectTensorNear(runOk(notOp), boolTensor({4}, {1, 1, 0, 0}), 0, 0);
}

TEST(Elementwise, Comparisons) {
  Tensor a = floatTensor({3}, {1, 2, 3});
  Tensor b = floatTensor({}, {2});
  OpTest less("Less", 13), lessEq("LessOrEqual", 16), greater("Greater", 13), eq("Equal", 13);
  less.input(a).input(b);
  lessEq.input(a).input(b);
  greater.input(a).input(b);
  eq.input(a).input(b);
  expectTensorNear(runOk(less), boolTensor({3}, {1, 0, 0}), 0, 0);
  expectTensorNear(runOk(lessEq), boolTensor({3}, {1, 1, 0}), 0, 0);
  expectTensorNear(runOk(greater), boolTensor({3}, {0, 0, 1}), 0, 0);
  expectTensorNear(runOk(eq), boolTensor({3}, {0, 1, 0}), 0, 0);
  OpTest halfGe("GreaterOrEqual", 16);
  halfGe.input(halfTensor({2}, {0.5f, -1})).input(halfTensor({2}, {0.5f, 0}));
  expectTensorNear(runOk(halfGe), boolTensor({2}, {1, 0}), 0, 0);
}

TEST(Elementwise, EqualStringsBroadcast) {
  OpTest t("Equal", 19);
  t.input(stringTensor({2, 2}, {"a", "b", "c", "a"})).input(stringTensor({1}, {"a"}));
  expectTensorNear(runOk(t), boolTensor({2, 2}, {1, 0, 0, 1}), 0, 0);
}

// ---- Variadic, PRelu, Where.

TEST(Elementwise, MaxMinOfThreeBroadcast) {
  Tensor a = floatTensor({2, 2}, {1, 5, -3, kNaN});
  Tensor b = floatTensor({2}, {2, 4});
  Tensor c = floatTensor({}, {0});
  OpTest max("Max", 13), min("Min", 13);
  max.input(a).input(b).input(c);
  min.input(a).input(b).input(c);
  expectFloats(runOk(max), {2, 2}, {2, 5, 2, kNaN});
  expectFloats(runOk(min), {2, 2}, {0, 0, -3, kNaN});
}

TEST(Elementwise, SumMeanAndSingleInput) {
  Tensor a = floatTensor({2}, {1, 2});
  Tensor b = floatTensor({2, 1}, {10, 20});
  OpTest sum("Sum", 13), mean("Mean", 13), one("Max", 13);
  sum.input(a).input(b).input(a);
  mean.input(a).input(b);
  one.input(a);
  expectFloats(runOk(sum), {2, 2}, {12, 14, 22, 24});
  expectFloats(runOk(mean), {2, 2}, {5.5f, 6, 10.5f, 11});
  expectFloats(runOk(one), {2}, {1, 2});
  OpTest mismatch("Sum", 13);
  mismatch.input(a).input(halfTensor({2}, {1, 2}));
  EXPECT_FALSE(mismatch.run().isOk());
}

TEST(Elementwise, PReluSlopeBroadcastsToX) {
  OpTest t("PRelu", 16);
  t.input(floatTensor({2, 3}, {-1, 2, -3, 4, -5, 0})).input(floatTensor({3}, {0.5f, 1, 2}));
  expectFloats(runOk(t), {2, 3}, {-0.5f, 2, -6, 4, -5, 0});
  OpTest wrongWay("PRelu", 16);
  wrongWay.input(floatTensor({3}, {1, 2, 3})).input(floatTensor({2, 3}, {1, 1, 1, 1, 1, 1}));
  EXPECT_FALSE(wrongWay.run().isOk());
}

TEST(Elementwise, WhereBroadcastsAllThree) {
  OpTest t("Where", 16);
  t.input(boolTensor({2, 1}, {1, 0}))
      .input(floatTensor({3}, {1, 2, 3}))
      .input(floatTensor({}, {-1}));
  expectFloats(runOk(t), {2, 3}, {1, 2, 3, -1, -1, -1});
  OpTest strings("Where", 16);
  strings.input(boolTensor({2}, {0, 1}))
      .input(stringTensor({2}, {"x", "y"}))
      .input(stringTensor({1}, {"z"}));
  Tensor out = runOk(strings);
  ASSERT_EQ(out.type(), DataType::kString);
  EXPECT_EQ(out.strings(), (std::vector<std::string>{"z", "y"}));
  OpTest notBool("Where", 16);
  notBool.input(floatTensor({1}, {1})).input(floatTensor({1}, {1})).input(floatTensor({1}, {1}));
  EXPECT_FALSE(notBool.run().isOk());
}

// ---- Unary math.

TEST(Elementwise, AbsNegSignOnIntegers) {
  Tensor x = typed<int8_t>(DataType::kInt8, {4}, {-3, 0, 5, -128});
  OpTest abs("Abs", 13), neg("Neg", 13), sign("Sign", 13);
  abs.input(x);
  neg.input(x);
  sign.input(x);
  expectTensorNear(runOk(abs), typed<int8_t>(DataType::kInt8, {4}, {3, 0, 5, -128}), 0, 0);
  expectTensorNear(runOk(neg), typed<int8_t>(DataType::kInt8, {4}, {3, 0, -5, -128}), 0, 0);
  expectTensorNear(runOk(sign), typed<int8_t>(DataType::kInt8, {4}, {-1, 0, 1, -1}), 0, 0);
}

TEST(Elementwise, RoundHalfToEven) {
  OpTest t("Round", 11);
  t.input(floatTensor({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f}));
  expectFloats(runOk(t), {6}, {0, 2, 2, -0.0f, -2, 2}, 0);
}

TEST(Elementwise, TranscendentalFunctions) {
  Tensor x = floatTensor({2}, {0.5f, -0.25f});
  struct Case {
    const char* op;
    std::vector<float> expected;
  };
  const std::vector<Case> cases = {
      {"Exp", {1.6487213f, 0.7788008f}},
      {"Sin", {0.47942554f, -0.24740396f}},
      {"Atan", {0.4636476f, -0.24497867f}},
      {"Erf", {0.5204999f, -0.27632639f}},
      {"Tanh", {0.46211716f, -0.24491866f}},
      {"Asinh", {0.48121183f, -0.24746646f}},
      {"Floor", {0, -1}},
      {"Ceil", {1, -0.0f}},
      {"Reciprocal", {2, -4}},
  };
  for (const Case& c : cases) {
    OpTest t(c.op, 13);
    t.input(x);
    SCOPED_TRACE(c.op);
    expectFloats(runOk(t), {2}, c.expected, 1e-6);
  }
  OpTest logOp("Log", 13), sqrtOp("Sqrt", 13);
  logOp.input(floatTensor({2}, {1, -1}));
  sqrtOp.input(floatTensor({2}, {4, -1}));
  expectFloats(runOk(logOp), {2}, {0, kNaN});
  expectFloats(runOk(sqrtOp), {2}, {2, kNaN});
  OpTest ints("Exp", 13);
  ints.input(int64Tensor({1}, {1}));
  EXPECT_FALSE(ints.run().isOk());
}

TEST(Elementwise, IsNaNAndIsInf) {
  Tensor x = floatTensor({4}, {1, kNaN, kInf, -kInf});
  OpTest nan("IsNaN", 13), inf("IsInf", 10), posOnly("IsInf", 10);
  nan.input(x);
  inf.input(x);
  posOnly.attr("detect_negative", int64_t{0}).input(x);
  expectTensorNear(runOk(nan), boolTensor({4}, {0, 1, 0, 0}), 0, 0);
  expectTensorNear(runOk(inf), boolTensor({4}, {0, 0, 1, 1}), 0, 0);
  expectTensorNear(runOk(posOnly), boolTensor({4}, {0, 0, 1, 0}), 0, 0);
}

}  // namespace
}  // namespace kiln::test
