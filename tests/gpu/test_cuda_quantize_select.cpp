// Cross-backend tests for the quantize_select ops: CUDA engine vs CPU reference.
// Quantize family: QuantizeLinear (per tensor, per axis, blocked, int16/int4/float8
// targets, round half to even, saturation), DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger and QLinearMatMul; integer outputs compare exactly. Selection family:
// TopK with ties (bitonic rows, a selection-pass row, non-last axis), CumProd,
// inference Dropout and NonZero.
#include <cmath>
#include <string>
#include <vector>

#include "gpu/gpu_op_test.h"

namespace kiln::test {
namespace {

// Float32 values in {0, ..., levels - 1}: many exact ties.
Tensor integerValued(const Shape& shape, int levels, uint32_t seed) {
  return castTensor(randomTensor(DataType::kInt64, shape, seed, 0, levels - 1), DataType::kFloat32);
}

// Float32 multiples of 0.5 in [-range, range]: x / 1 lands on .5 ties for rounding.
Tensor halfSteps(const Shape& shape, int range, uint32_t seed) {
  Tensor ints = randomTensor(DataType::kInt64, shape, seed, -2 * range, 2 * range);
  std::vector<float> values(static_cast<size_t>(ints.numel()));
  for (int64_t i = 0; i < ints.numel(); ++i) values[i] = 0.5f * ints.valueAsInt64(i);
  return floatTensor(shape, values);
}

Tensor scalarFloat(float value) {
  return floatTensor({}, {value});
}

Tensor typedScalar(DataType type, double value) {
  return castTensor(Tensor::fromVector(DataType::kFloat64, {}, std::vector<double>{value}), type);
}

std::vector<PrecisionTolerance> exact() {
  return fp32Only(0, 0);
}

// Integer outputs of float inputs are exact at every precision: both sides see the
// same 16-bit-rounded inputs and divide in float32.
std::vector<PrecisionTolerance> exactAllPrecisions() {
  return {{cuda::Precision::kFloat32, 0, 0},
          {cuda::Precision::kFloat16, 0, 0},
          {cuda::Precision::kBFloat16, 0, 0}};
}

// ---- QuantizeLinear ------------------------------------------------------------------

TEST(CudaQuantize, QuantizePerTensorUInt8) {
  KILN_REQUIRE_GPU();
  GpuOpTest("QuantizeLinear", 13)
      .input(randomFloats({4, 33}, 1, -3.0, 3.0))
      .constant(scalarFloat(0.0234375f))
      .constant(typedScalar(DataType::kUInt8, 128))
      .check(exactAllPrecisions());
}

TEST(CudaQuantize, QuantizeRoundsHalfToEvenAndSaturates) {
  KILN_REQUIRE_GPU();
  // Scale 1: every x.5 is a tie; |x| up to 200 saturates int8.
  GpuOpTest("QuantizeLinear", 13)
      .input(halfSteps({6, 50}, 200, 2))
      .constant(scalarFloat(1.0f))
      .constant(typedScalar(DataType::kInt8, 3))
      .check(exact());
}

// Whole 16-byte packs of every float storage: the packed per-tensor kernel (ties, both
// saturation ends, int8 and uint8), bit for bit as the element-wise one.
TEST(CudaQuantize, QuantizePackedPerTensorAtEveryPrecision) {
  KILN_REQUIRE_GPU();
  GpuOpTest("QuantizeLinear", 13)
      .input(halfSteps({8, 40}, 200, 5))
      .constant(scalarFloat(1.0f))
      .constant(typedScalar(DataType::kInt8, -2))
      .check(exactAllPrecisions());
  GpuOpTest("QuantizeLinear", 13)
      .input(randomFloats({16, 64}, 6, -4.0, 4.0))
      .constant(scalarFloat(0.0234375f))
      .constant(typedScalar(DataType::kUInt8, 128))
      .check(exactAllPrecisions());
}

TEST(CudaQuantize, QuantizeNoZeroPointDefaultsToUInt8) {
  KILN_REQUIRE_GPU();
  GpuOpTest("QuantizeLinear", 10)
      .input(halfSteps({5, 7}, 40, 3))
      .constant(scalarFloat(0.5f))
      .check(exact());
}

TEST(CudaQuantize, QuantizePerAxisInt8) {
  KILN_REQUIRE_GPU();
  GpuOpTest("QuantizeLinear", 13)
      .attr("axis", int64_t{1})
      .input(randomFloats({2, 3, 5}, 4, -2.0, 2.0))
      .constant(floatTensor({3}, {0.01f, 0.02f, 0.05f}))
      .constant(Tensor::fromVector(DataType::kInt8, {3}, std::vector<int8_t>{-4, 0, 9}))
      .check(exact());
}

TEST(CudaQuantize, QuantizePerAxisRuntimeScale) {
  KILN_REQUIRE_GPU();
  GpuOpTest("QuantizeLinear", 13)
      .attr("axis", int64_t{-1})
      .input(randomFloats({3, 4}, 5, -2.0, 2.0))
      .input(randomFloats({4}, 6, 0.01, 0.05))
      .check(exact());
}

TEST(CudaQuantize, QuantizeBlockedUInt16) {
  KILN_REQUIRE_GPU();
  // x [2, 10, 3], blocks of 4 along axis 1: scale [2, 3, 3].
  GpuOpTest("QuantizeLinear", 21)
      .attr("axis", int64_t{1})
      .attr("block_size", int64_t{4})
      .input(randomFloats({2, 10, 3}, 7, -2.0, 2.0))
      .constant(randomFloats({2, 3, 3}, 8, 0.0001, 0.001))
      .constant(randomTensor(DataType::kUInt16, {2, 3, 3}, 9, 30000, 35000))
      .check(exact());
}

TEST(CudaQuantize, QuantizeInt16) {
  KILN_REQUIRE_GPU();
  GpuOpTest("QuantizeLinear", 21)
      .input(randomFloats({64}, 10, -5.0, 5.0))
      .constant(scalarFloat(0.0001f))
      .constant(typedScalar(DataType::kInt16, -7))
      .check(exact());
}

TEST(CudaQuantize, QuantizeInt4OutputDtype) {
  KILN_REQUIRE_GPU();
  GpuOpTest("QuantizeLinear", 21)
      .attr("output_dtype", static_cast<int64_t>(DataType::kInt4))
      .input(halfSteps({4, 9}, 10, 11))
      .constant(scalarFloat(1.0f))
      .check(exact());
}

TEST(CudaQuantize, QuantizeFloat8E4M3Saturating) {
  KILN_REQUIRE_GPU();
  GpuOpTest("QuantizeLinear", 21)
      .attr("output_dtype", static_cast<int64_t>(DataType::kFp8E4M3))
      .input(randomFloats({8, 40}, 12, -600.0, 600.0))
      .constant(scalarFloat(1.0f))
      .check(exact());
}

TEST(CudaQuantize, QuantizeFloat8E5M2NoSaturate) {
  KILN_REQUIRE_GPU();
  GpuOpTest("QuantizeLinear", 21)
      .attr("output_dtype", static_cast<int64_t>(DataType::kFp8E5M2))
      .attr("saturate", int64_t{0})
      .input(randomFloats({8, 40}, 13, -70000.0, 70000.0))
      .constant(scalarFloat(1.0f))
      .check(exact());
}

// ---- DequantizeLinear ----------------------------------------------------------------

TEST(CudaQuantize, DequantizePerTensorUInt8) {
  KILN_REQUIRE_GPU();
  GpuOpTest("DequantizeLinear", 13)
      .input(randomTensor(DataType::kUInt8, {5, 31}, 20, 0, 255))
      .constant(scalarFloat(0.037f))
      .constant(typedScalar(DataType::kUInt8, 121))
      .check();
}

TEST(CudaQuantize, DequantizePerAxisInt8) {
  KILN_REQUIRE_GPU();
  GpuOpTest("DequantizeLinear", 13)
      .attr("axis", int64_t{0})
      .input(randomTensor(DataType::kInt8, {3, 4, 5}, 21, -128, 127))
      .constant(floatTensor({3}, {0.1f, 0.25f, 0.03f}))
      .constant(Tensor::fromVector(DataType::kInt8, {3}, std::vector<int8_t>{1, -2, 0}))
      .check();
}

TEST(CudaQuantize, DequantizeBlockedInt32) {
  KILN_REQUIRE_GPU();
  GpuOpTest("DequantizeLinear", 21)
      .attr("axis", int64_t{-1})
      .attr("block_size", int64_t{3})
      .input(randomTensor(DataType::kInt32, {4, 7}, 22, -1000, 1000))
      .constant(randomFloats({4, 3}, 23, 0.001, 0.01))
      .check();
}

TEST(CudaQuantize, DequantizeFloat8) {
  KILN_REQUIRE_GPU();
  GpuOpTest("DequantizeLinear", 19)
      .input(castTensor(randomFloats({6, 20}, 24, -400.0, 400.0), DataType::kFp8E4M3))
      .constant(scalarFloat(0.5f))
      .check();
}

// ---- DynamicQuantizeLinear -----------------------------------------------------------

TEST(CudaQuantize, DynamicQuantizeLinear) {
  KILN_REQUIRE_GPU();
  GpuOpTest("DynamicQuantizeLinear", 11)
      .outputs(3)
      .input(randomFloats({37, 129}, 30, -2.0, 5.0))
      .check();
}

TEST(CudaQuantize, DynamicQuantizeLinearPositiveOnly) {
  KILN_REQUIRE_GPU();
  GpuOpTest("DynamicQuantizeLinear", 11)
      .outputs(3)
      .input(randomFloats({300}, 31, 0.5, 4.0))
      .check();
}

// ---- MatMulInteger / QLinearMatMul ---------------------------------------------------

TEST(CudaQuantize, MatMulIntegerBroadcastScalarZeroPoints) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MatMulInteger", 10)
      .input(randomTensor(DataType::kUInt8, {2, 3, 21, 37}, 40, 0, 255))
      .input(randomTensor(DataType::kInt8, {37, 19}, 41, -128, 127))
      .constant(typedScalar(DataType::kUInt8, 128))
      .constant(typedScalar(DataType::kInt8, -3))
      .check(exact());
}

TEST(CudaQuantize, MatMulIntegerPerRowColumnZeroPoints) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MatMulInteger", 10)
      .input(randomTensor(DataType::kInt8, {4, 18, 33}, 42, -128, 127))
      .input(randomTensor(DataType::kUInt8, {4, 33, 20}, 43, 0, 255))
      .input(randomTensor(DataType::kInt8, {18}, 44, -10, 10))
      .input(randomTensor(DataType::kUInt8, {20}, 45, 100, 150))
      .check(exact());
}

TEST(CudaQuantize, MatMulIntegerNoZeroPointsVectors) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MatMulInteger", 10)
      .input(randomTensor(DataType::kUInt8, {50}, 46, 0, 255))
      .input(randomTensor(DataType::kUInt8, {3, 50, 17}, 47, 0, 255))
      .check(exact());
}

TEST(CudaQuantize, QLinearMatMulUInt8) {
  KILN_REQUIRE_GPU();
  GpuOpTest("QLinearMatMul", 10)
      .input(randomTensor(DataType::kUInt8, {2, 20, 45}, 50, 0, 255))
      .constant(scalarFloat(0.02f))
      .constant(typedScalar(DataType::kUInt8, 130))
      .input(randomTensor(DataType::kUInt8, {45, 23}, 51, 0, 255))
      .constant(scalarFloat(0.015f))
      .constant(typedScalar(DataType::kUInt8, 120))
      .constant(scalarFloat(0.5f))
      .constant(typedScalar(DataType::kUInt8, 100))
      .check(exact());
}

TEST(CudaQuantize, QLinearMatMulInt8PerRowColumnScales) {
  KILN_REQUIRE_GPU();
  GpuOpTest("QLinearMatMul", 10)
      .input(randomTensor(DataType::kInt8, {16, 40}, 52, -128, 127))
      .constant(randomFloats({16}, 53, 0.01, 0.03))
      .constant(typedScalar(DataType::kInt8, 2))
      .input(randomTensor(DataType::kInt8, {40, 24}, 54, -128, 127))
      .constant(randomFloats({24}, 55, 0.01, 0.03))
      .constant(typedScalar(DataType::kInt8, -1))
      .constant(scalarFloat(0.2f))
      .constant(typedScalar(DataType::kInt8, -5))
      .check(exact());
}

// ---- TopK -------------------------------------------------------------------------------

Tensor kInput(int64_t k) {
  return int64Tensor({1}, {k});
}

TEST(CudaTopK, TiesLargestRowsOf10) {
  KILN_REQUIRE_GPU();
  GpuOpTest("TopK", 11).outputs(2).input(integerValued({7, 10}, 4, 60)).constant(kInput(4)).check();
}

TEST(CudaTopK, TiesSmallestRowsOf10) {
  KILN_REQUIRE_GPU();
  GpuOpTest("TopK", 11)
      .attr("largest", int64_t{0})
      .outputs(2)
      .input(integerValued({7, 10}, 4, 61))
      .constant(kInput(10))
      .check();
}

TEST(CudaTopK, TiesLargestRowsOf1000) {
  KILN_REQUIRE_GPU();
  GpuOpTest("TopK", 11)
      .outputs(2)
      .input(integerValued({5, 1000}, 50, 62))
      .constant(kInput(100))
      .check();
}

TEST(CudaTopK, TiesSmallestRowsOf1000) {
  KILN_REQUIRE_GPU();
  GpuOpTest("TopK", 11)
      .attr("largest", int64_t{0})
      .outputs(2)
      .input(integerValued({3, 1000}, 20, 63))
      .constant(kInput(1000))
      .check();
}

TEST(CudaTopK, NonLastAxisWithTies) {
  KILN_REQUIRE_GPU();
  GpuOpTest("TopK", 11)
      .attr("axis", int64_t{1})
      .outputs(2)
      .input(integerValued({3, 37, 5}, 6, 64))
      .input(kInput(9))
      .check();
}

TEST(CudaTopK, NonLastAxisSmallestRandom) {
  KILN_REQUIRE_GPU();
  GpuOpTest("TopK", 11)
      .attr("axis", int64_t{0})
      .attr("largest", int64_t{0})
      .outputs(2)
      .input(randomFloats({20, 6, 4}, 65))
      .constant(kInput(5))
      .check();
}

TEST(CudaTopK, LongRowSelectionPasses) {
  KILN_REQUIRE_GPU();
  // 5000 > the bitonic limit: k selection passes per row.
  GpuOpTest("TopK", 11)
      .outputs(2)
      .input(integerValued({3, 5000}, 100, 66))
      .constant(kInput(17))
      .check();
  GpuOpTest("TopK", 11)
      .attr("largest", int64_t{0})
      .outputs(2)
      .input(integerValued({2, 5000}, 100, 67))
      .constant(kInput(5))
      .check();
}

TEST(CudaTopK, Opset1AttributeK) {
  KILN_REQUIRE_GPU();
  GpuOpTest("TopK", 1).attr("k", int64_t{3}).outputs(2).input(randomFloats({4, 12}, 68)).check();
}

TEST(CudaTopK, Int64Data) {
  KILN_REQUIRE_GPU();
  GpuOpTest("TopK", 11)
      .outputs(2)
      .input(randomTensor(DataType::kInt64, {6, 33}, 69, -5, 5))
      .constant(kInput(7))
      .check(exact());
}

// ---- CumProd ------------------------------------------------------------------------------

TEST(CudaCumProd, LastAxis) {
  KILN_REQUIRE_GPU();
  GpuOpTest("CumProd", 26)
      .input(randomFloats({4, 40}, 70, 0.8, 1.2))
      .constant(int64Tensor({}, {-1}))
      .check();
}

TEST(CudaCumProd, ExclusiveReverseMiddleAxis) {
  KILN_REQUIRE_GPU();
  GpuOpTest("CumProd", 26)
      .attr("exclusive", int64_t{1})
      .attr("reverse", int64_t{1})
      .input(randomFloats({3, 12, 5}, 71, 0.8, 1.2))
      .constant(int64Tensor({}, {1}))
      .check();
}

TEST(CudaCumProd, Int32Wraps) {
  KILN_REQUIRE_GPU();
  GpuOpTest("CumProd", 26)
      .attr("exclusive", int64_t{1})
      .input(randomTensor(DataType::kInt32, {5, 30}, 72, -9, 9))
      .constant(int64Tensor({}, {1}))
      .check(exact());
}

// ---- Dropout --------------------------------------------------------------------------------

TEST(CudaDropout, InferenceWithMask) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Dropout", 13)
      .outputs(2)
      .input(randomFloats({6, 17}, 80))
      .constant(scalarFloat(0.3f))
      .check();
}

TEST(CudaDropout, Opset7TypedMask) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Dropout", 7).attr("ratio", 0.2f).outputs(2).input(randomFloats({3, 9}, 81)).check();
}

TEST(CudaDropout, Opset10NoMask) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Dropout", 10).input(randomFloats({40}, 82)).check();
}

// ---- NonZero --------------------------------------------------------------------------------

TEST(CudaNonZero, FloatWithZeros) {
  KILN_REQUIRE_GPU();
  GpuOpTest("NonZero", 13).input(integerValued({7, 33, 5}, 3, 90)).check(exact());
}

TEST(CudaNonZero, LargeFloatManyBlocks) {
  KILN_REQUIRE_GPU();
  GpuOpTest("NonZero", 13).input(integerValued({300, 1001}, 4, 91)).check(exact());
}

TEST(CudaNonZero, Bool) {
  KILN_REQUIRE_GPU();
  GpuOpTest("NonZero", 13).input(randomTensor(DataType::kBool, {9, 70}, 92)).check(exact());
}

TEST(CudaNonZero, Int32AndScalar) {
  KILN_REQUIRE_GPU();
  GpuOpTest("NonZero", 13)
      .input(randomTensor(DataType::kInt32, {4, 5, 6}, 93, -1, 1))
      .check(exact());
  GpuOpTest("NonZero", 13).input(scalarFloat(2.5f)).check(exact());
}

TEST(CudaNonZero, AllZero) {
  KILN_REQUIRE_GPU();
  GpuOpTest("NonZero", 13).input(floatTensor({3, 4}, std::vector<float>(12, 0.0f))).check(exact());
}

}  // namespace
}  // namespace kiln::test
