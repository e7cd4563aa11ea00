// Cross-backend tests for the elementwise family: CUDA engine vs CPU reference. Float ops
// run at fp32/fp16/bf16; integer and bool ops at fp32 only (compared exactly). This file:
// binary arithmetic, comparisons and logic, variadic ops, Where, Cast and CastLike.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gpu/elementwise_test.h"

namespace kiln::test {
namespace {

using namespace elementwise;

// ---- Binary arithmetic with broadcasting.

TEST(CudaElementwise, ArithmeticBroadcast) {
  KILN_REQUIRE_GPU();
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3, 4}, {2, 3, 4}},        // equal shapes
      {{2, 3, 4}, {3, 1}},           // broadcast
      {{2, 3, 4}, {}},               // scalar right
      {{}, {2, 3, 4}},               // scalar left
      {{4}, {2, 3, 4}},              // row vector left
      {{2, 1, 4}, {3, 1}},           // both sides broadcast
      {{2, 3, 4, 5}, {2, 1, 4, 1}},  // strided, no dims merge
      {{1, 3, 4}, {2, 3, 4}},        // leading 1
  };
  uint32_t seed = 50;
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (const auto& [a, b] : shapes) {
      SCOPED_TRACE(std::string(op) + " " + shapeToString(a) + " with " + shapeToString(b));
      // Divisors away from zero.
      EwTest(op, 14)
          .input(randomFloats(a, seed++, -2, 2))
          .input(randomFloats(b, seed++, 0.5, 2))
          .check();
    }
  }
}

TEST(CudaElementwise, ArithmeticLargeAndEmpty) {
  KILN_REQUIRE_GPU();
  // 2.1M elements: many blocks, grid-stride loops.
  EwTest("Add", 14)
      .input(randomFloats({64, 1000, 33}, 60))
      .input(randomFloats({1000, 1}, 61))
      .check();
  EwTest("Mul", 14).input(randomFloats({2, 0, 3}, 62)).input(randomFloats({3}, 63)).check();
}

// Same-shaped contiguous operands of whole packs (a residual Add) take the unrolled kernel: two
// packs a thread, the second past the end for part of the grid (384,000 elements; 15 and 30
// packs); an element count off the pack width stays on the general kernel.
TEST(CudaElementwise, ArithmeticSameShapeContiguous) {
  KILN_REQUIRE_GPU();
  uint32_t seed = 70;
  for (const Shape& shape : std::vector<Shape>{{4, 1000, 96}, {3, 5, 8}, {3, 5, 7}}) {
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      SCOPED_TRACE(std::string(op) + " " + shapeToString(shape));
      EwTest(op, 14)
          .input(randomFloats(shape, seed++, -2, 2))
          .input(randomFloats(shape, seed++, 0.5, 2))
          .check();
    }
  }
}

TEST(CudaElementwise, ArithmeticConstantOperand) {
  KILN_REQUIRE_GPU();
  EwTest("Add", 14).input(randomFloats({4, 16}, 64)).constant(randomFloats({16}, 65)).check();
  EwTest("Mul", 14).constant(floatTensor({}, {0.125f})).input(randomFloats({4, 16}, 66)).check();
}

TEST(CudaElementwise, IntegerArithmetic) {
  KILN_REQUIRE_GPU();
  const std::vector<DataType> types = {DataType::kInt8,   DataType::kUInt8, DataType::kInt16,
                                       DataType::kUInt16, DataType::kInt32, DataType::kUInt32,
                                       DataType::kInt64,  DataType::kUInt64};
  uint32_t seed = 70;
  for (DataType type : types) {
    SCOPED_TRACE(dataTypeName(type));
    Tensor a = randomTensor(type, {3, 4}, seed++, 0, 120);
    Tensor b = randomTensor(type, {4}, seed++, 1, 9);
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      EwTest(op, 14).input(a).input(b).check(fp32Only());
    }
  }
}

TEST(CudaElementwise, IntegerWrapAround) {
  KILN_REQUIRE_GPU();
  // int8 overflow wraps as in numpy.
  Tensor a = Tensor::fromVector<int8_t>(DataType::kInt8, {4}, {120, -120, 100, -128});
  Tensor b = Tensor::fromVector<int8_t>(DataType::kInt8, {4}, {10, -10, 3, -1});
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    EwTest(op, 14).input(a).input(b).check(fp32Only());
  }
}

TEST(CudaElementwise, SignedIntegerDivAndMod) {
  KILN_REQUIRE_GPU();
  // Negative dividends and divisors: Div truncates toward zero, Mod (fmod=0) takes the
  // divisor's sign, fmod=1 the dividend's.
  Tensor a = int64Tensor({2, 6}, {7, -7, 7, -7, 0, 13, -13, 5, -5, 9, -9, 100});
  Tensor b = int64Tensor({6}, {3, 3, -3, -3, 5, -1});
  EwTest("Div", 14).input(a).input(b).check(fp32Only());
  EwTest("Mod", 13).input(a).input(b).check(fp32Only());
  EwTest("Mod", 13).attr("fmod", int64_t{1}).input(a).input(b).check(fp32Only());
  Tensor a32 = randomTensor(DataType::kInt32, {5, 7}, 80, -100, 100);
  Tensor b32 = castTensor(int64Tensor({7}, {1, -2, 3, -4, 5, -6, 7}), DataType::kInt32);
  EwTest("Div", 14).input(a32).input(b32).check(fp32Only());
  EwTest("Mod", 13).input(a32).input(b32).check(fp32Only());
  EwTest("Mod", 13).attr("fmod", int64_t{1}).input(a32).input(b32).check(fp32Only());
  Tensor u = randomTensor(DataType::kUInt16, {5, 7}, 81, 0, 1000);
  Tensor v = randomTensor(DataType::kUInt16, {7}, 82, 1, 30);
  EwTest("Mod", 13).input(u).input(v).check(fp32Only());
}

TEST(CudaElementwise, FloatMod) {
  KILN_REQUIRE_GPU();
  Tensor a = randomFloats({3, 8}, 90, -10, 10);
  Tensor b = randomFloats({8}, 91, 1, 3);
  Tensor negB = randomFloats({8}, 92, -3, -1);
  EwTest("Mod", 13).attr("fmod", int64_t{1}).input(a).input(b).check();
  EwTest("Mod", 13).attr("fmod", int64_t{1}).input(a).input(negB).check();
  EwTest("Mod", 13).input(a).input(b).check();
  EwTest("Mod", 13).input(a).input(negB).check();
}

TEST(CudaElementwise, Pow) {
  KILN_REQUIRE_GPU();
  Tensor base = randomFloats({3, 4, 5}, 100, 0.5, 2);
  // Same float types, broadcast exponent. Results grow like exp: loose in 16-bit.
  EwTest("Pow", 15).input(base).input(randomFloats({4, 1}, 101, -2, 2)).check(looseTolerances());
  EwTest("Pow", 15).input(base).input(randomFloats({3, 4, 5}, 102, -2, 2)).check(looseTolerances());
  // x^2 and x^0.5 with a scalar constant exponent.
  EwTest("Pow", 15).input(base).constant(floatTensor({}, {2.f})).check(looseTolerances());
  EwTest("Pow", 15).input(base).constant(floatTensor({}, {0.5f})).check(looseTolerances());
  // Negative base with an integer exponent.
  EwTest("Pow", 15)
      .input(randomFloats({3, 4, 5}, 103, -2, 2))
      .input(randomTensor(DataType::kInt64, {5}, 104, 0, 4))
      .check(looseTolerances());
  // Float exponent of another float type than the base.
  EwTest("Pow", 15)
      .input(base)
      .input(randomTensor(DataType::kFloat64, {5}, 105, -2, 2))
      .check(looseTolerances());
}

TEST(CudaElementwise, IntegerPow) {
  KILN_REQUIRE_GPU();
  EwTest("Pow", 15)
      .input(randomTensor(DataType::kInt64, {4, 6}, 110, -6, 6))
      .input(randomTensor(DataType::kInt64, {6}, 111, -1, 6))
      .check(fp32Only());
  EwTest("Pow", 15)
      .input(randomTensor(DataType::kInt32, {4, 6}, 112, -6, 6))
      .input(randomTensor(DataType::kInt8, {4, 6}, 113, 0, 5))
      .check(fp32Only());
  // Integer base with a float exponent: the double result truncates toward zero.
  EwTest("Pow", 15)
      .input(randomTensor(DataType::kInt32, {4, 6}, 114, 1, 9))
      .input(randomFloats({6}, 115, 0, 2.5))
      .check(fp32Only());
}

// ---- Comparisons and logic.

TEST(CudaElementwise, Comparisons) {
  KILN_REQUIRE_GPU();
  Tensor a = smallIntegerFloats({2, 3, 4}, 120);
  Tensor b = smallIntegerFloats({3, 1}, 121);
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    EwTest(op, 16).input(a).input(b).check();
    EwTest(op, 16).input(a).input(a).check();
    EwTest(op, 16)
        .input(randomTensor(DataType::kInt64, {2, 3, 4}, 122, -3, 3))
        .input(randomTensor(DataType::kInt64, {4}, 123, -3, 3))
        .check(fp32Only());
    EwTest(op, 16)
        .input(randomTensor(DataType::kUInt8, {5, 6}, 124, 0, 5))
        .input(randomTensor(DataType::kUInt8, {5, 1}, 125, 0, 5))
        .check(fp32Only());
  }
  EwTest("Equal", 19)
      .input(randomTensor(DataType::kBool, {3, 4}, 126))
      .input(randomTensor(DataType::kBool, {4}, 127))
      .check(fp32Only());
}

TEST(CudaElementwise, Logical) {
  KILN_REQUIRE_GPU();
  Tensor a = randomTensor(DataType::kBool, {2, 3, 4}, 130);
  Tensor b = randomTensor(DataType::kBool, {3, 1}, 131);
  for (const char* op : {"And", "Or", "Xor"}) {
    EwTest(op, 7).input(a).input(b).check(fp32Only());
    EwTest(op, 7).input(a).input(randomTensor(DataType::kBool, {2, 3, 4}, 132)).check(fp32Only());
  }
}

TEST(CudaElementwise, Bitwise) {
  KILN_REQUIRE_GPU();
  for (DataType type : {DataType::kInt32, DataType::kUInt8, DataType::kInt64}) {
    SCOPED_TRACE(dataTypeName(type));
    Tensor a = randomTensor(type, {3, 4}, 140, -100, 100);
    Tensor b = randomTensor(type, {4}, 141, -100, 100);
    for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
      EwTest(op, 18).input(a).input(b).check(fp32Only());
    }
  }
}

TEST(CudaElementwise, BitShift) {
  KILN_REQUIRE_GPU();
  Tensor u8 = randomTensor(DataType::kUInt8, {3, 5}, 150, 0, 255);
  Tensor s8 = randomTensor(DataType::kUInt8, {5}, 151, 0, 9);  // 8 and 9 shift everything out
  Tensor u32 = randomTensor(DataType::kUInt32, {3, 5}, 152, 0, 100000);
  Tensor s32 = randomTensor(DataType::kUInt32, {3, 5}, 153, 0, 33);
  Tensor u64 = randomTensor(DataType::kUInt64, {3, 5}, 154, 0, 1e9);
  Tensor s64 = Tensor::fromVector<uint64_t>(DataType::kUInt64, {}, {3});
  for (const char* direction : {"LEFT", "RIGHT"}) {
    SCOPED_TRACE(direction);
    EwTest("BitShift", 11)
        .attr("direction", std::string(direction))
        .input(u8)
        .input(s8)
        .check(fp32Only());
    EwTest("BitShift", 11)
        .attr("direction", std::string(direction))
        .input(u32)
        .input(s32)
        .check(fp32Only());
    EwTest("BitShift", 11)
        .attr("direction", std::string(direction))
        .input(u64)
        .input(s64)
        .check(fp32Only());
  }
}

// ---- Variadic.

TEST(CudaElementwise, VariadicFloat) {
  KILN_REQUIRE_GPU();
  Tensor a = randomFloats({2, 3, 4}, 160);
  Tensor b = randomFloats({3, 1}, 161);
  Tensor c = randomFloats({4}, 162);
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    SCOPED_TRACE(op);
    EwTest(op, 13).input(a).check();
    EwTest(op, 13).input(a).input(b).check();
    EwTest(op, 13).input(a).input(b).input(c).check();
    EwTest(op, 13).input(c).input(b).input(a).check();
  }
}

TEST(CudaElementwise, VariadicManyInputs) {
  KILN_REQUIRE_GPU();
  // 11 inputs: more than one launch's worth (8), accumulated in the output.
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    SCOPED_TRACE(op);
    EwTest test(op, 13);
    for (uint32_t i = 0; i < 11; ++i) {
      test.input(randomFloats(i % 3 == 0 ? Shape{5, 1} : Shape{5, 6}, 170 + i));
    }
    // Eleven 16-bit roundings of partial sums: loose in 16-bit.
    test.check(looseTolerances());
  }
}

TEST(CudaElementwise, VariadicIntegersAndNaN) {
  KILN_REQUIRE_GPU();
  Tensor a = randomTensor(DataType::kInt32, {3, 4}, 180, -50, 50);
  Tensor b = randomTensor(DataType::kInt32, {4}, 181, -50, 50);
  EwTest("Max", 13).input(a).input(b).check(fp32Only());
  EwTest("Min", 13).input(a).input(b).check(fp32Only());
  EwTest("Max", 13)
      .input(randomTensor(DataType::kUInt64, {3, 4}, 182, 0, 50))
      .input(randomTensor(DataType::kUInt64, {3, 4}, 183, 0, 50))
      .check(fp32Only());
  // NaN from either side propagates.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = floatTensor({4}, {nan, 1.f, nan, -2.f});
  Tensor y = floatTensor({4}, {0.f, nan, nan, 3.f});
  EwTest("Max", 13).input(x).input(y).check();
  EwTest("Min", 13).input(x).input(y).check();
}

// ---- Where.

TEST(CudaElementwise, Where) {
  KILN_REQUIRE_GPU();
  Tensor cond = randomTensor(DataType::kBool, {2, 1, 4}, 190);
  EwTest("Where", 16)
      .input(cond)
      .input(randomFloats({3, 1}, 191))
      .input(randomFloats({2, 3, 4}, 192))
      .check();
  EwTest("Where", 16)
      .input(randomTensor(DataType::kBool, {2, 3, 4}, 193))
      .input(randomFloats({2, 3, 4}, 194))
      .constant(floatTensor({}, {-1e4f}))
      .check();
  EwTest("Where", 16)
      .input(cond)
      .input(randomTensor(DataType::kInt64, {3, 4}, 195, -1000, 1000))
      .input(randomTensor(DataType::kInt64, {2, 3, 1}, 196, -1000, 1000))
      .check(fp32Only());
  EwTest("Where", 16)
      .input(cond)
      .input(randomTensor(DataType::kBool, {3, 4}, 197))
      .input(randomTensor(DataType::kBool, {4}, 198))
      .check(fp32Only());
  EwTest("Where", 16)
      .input(cond)
      .input(randomTensor(DataType::kUInt8, {3, 4}, 199, 0, 255))
      .input(randomTensor(DataType::kUInt8, {4}, 200, 0, 255))
      .check(fp32Only());
}

// ---- Cast and CastLike.

EwTest castTo(DataType to) {
  EwTest test("Cast", 19);
  test.attr("to", static_cast<int64_t>(to));
  return test;
}

TEST(CudaElementwise, CastFromFloat) {
  KILN_REQUIRE_GPU();
  // Fractions and negatives: integer targets truncate toward zero; unsigned ones wrap.
  Tensor x = randomFloats({4, 25}, 210, -300, 300);
  for (DataType to : {DataType::kInt8, DataType::kUInt8, DataType::kInt16, DataType::kUInt16,
                      DataType::kInt32, DataType::kUInt32, DataType::kInt64, DataType::kUInt64}) {
    SCOPED_TRACE(dataTypeName(to));
    castTo(to).input(x).check();
  }
  Tensor y = randomFloats({4, 25}, 211, -3, 3);
  for (DataType to :
       {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64}) {
    SCOPED_TRACE(dataTypeName(to));
    castTo(to).input(y).check();
  }
  Tensor withZeros = floatTensor({6}, {0.f, -0.f, 0.5f, -2.f, 0.f, 1e-30f});
  castTo(DataType::kBool).input(withZeros).check();
  castTo(DataType::kBool).input(y).check();
}

TEST(CudaElementwise, CastFromIntegersAndBool) {
  KILN_REQUIRE_GPU();
  Tensor i64 = randomTensor(DataType::kInt64, {3, 20}, 220, -70000, 70000);
  for (DataType to :
       {DataType::kInt8, DataType::kUInt8, DataType::kInt16, DataType::kUInt16, DataType::kInt32,
        DataType::kUInt32, DataType::kUInt64, DataType::kBool, DataType::kFloat32,
        DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16}) {
    SCOPED_TRACE(dataTypeName(to));
    castTo(to).input(i64).check(fp32Only());
  }
  Tensor u8 = randomTensor(DataType::kUInt8, {3, 20}, 221, 0, 255);
  castTo(DataType::kFloat32).input(u8).check(fp32Only());
  castTo(DataType::kInt8).input(u8).check(fp32Only());
  castTo(DataType::kInt64).input(u8).check(fp32Only());
  Tensor b = randomTensor(DataType::kBool, {3, 20}, 222);
  castTo(DataType::kFloat32).input(b).check(fp32Only());
  castTo(DataType::kInt32).input(b).check(fp32Only());
  castTo(DataType::kFloat16).input(b).check(fp32Only());
}

TEST(CudaElementwise, CastRoundTrips) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({3, 30}, 230, -50, 50);
  for (DataType mid : {DataType::kInt32, DataType::kFloat16, DataType::kBFloat16,
                       DataType::kFloat64, DataType::kInt64}) {
    SCOPED_TRACE(dataTypeName(mid));
    auto first = castTo(mid).input(x).runCuda();
    ASSERT_TRUE(first.isOk()) << first.status().toString();
    castTo(DataType::kFloat32).input(first.value()[0]).check(fp32Only());
  }
  // float64 -> half and bfloat16 round once (no double rounding through float).
  Tensor d = randomTensor(DataType::kFloat64, {3, 30}, 231, -100, 100);
  castTo(DataType::kFloat16).input(d).check(fp32Only());
  castTo(DataType::kBFloat16).input(d).check(fp32Only());
  castTo(DataType::kFloat32).input(d).check(fp32Only());
  castTo(DataType::kInt32).input(d).check(fp32Only());
}

TEST(CudaElementwise, CastLike) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({3, 7}, 240, -20, 20);
  EwTest("CastLike", 15).input(x).constant(int64Tensor({1}, {0})).check();
  EwTest("CastLike", 15)
      .input(randomTensor(DataType::kInt32, {3, 7}, 241, -20, 20))
      .constant(floatTensor({1}, {0.f}))
      .check();
  EwTest("CastLike", 15).input(x).constant(Tensor(DataType::kFloat16, {1})).check();
}

}  // namespace
}  // namespace kiln::test
