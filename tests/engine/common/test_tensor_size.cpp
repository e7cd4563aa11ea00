// Checked sizes (kiln/tensor_size.h): counts that wrap, negative dims, ranks and
// byte sizes past the caps are errors naming the tensor; the Tensor constructor
// never allocates less than its shape needs.
#include <gtest/gtest.h>

#include "kiln/tensor.h"
#include "kiln/tensor_size.h"
#include "support/hostile_models.h"

namespace kiln {
namespace {

using namespace test::hostile;
using TensorSize = FixedLimitsTest;

TEST_F(TensorSize, CountsOrdinaryShapes) {
  EXPECT_EQ(checkedNumel({}, "t").value(), 1);
  EXPECT_EQ(checkedNumel({2, 3, 4}, "t").value(), 24);
  EXPECT_EQ(checkedByteSize(DataType::kFloat16, {2, 3, 4}, "t").value(), 48);
  EXPECT_EQ(checkedByteSize(DataType::kString, {5}, "t").value(), 0);
}

TEST_F(TensorSize, ZeroDimMakesZeroEvenBesideHugeOnes) {
  EXPECT_EQ(checkedNumel({0, int64_t{1} << 40, int64_t{1} << 40}, "t").value(), 0);
}

TEST_F(TensorSize, WrappingCountIsAnErrorNamingTheTensor) {
  auto n = checkedNumel({3, kWrapsToTwo}, "tensor 'x'");
  ASSERT_FALSE(n.isOk());
  EXPECT_EQ(n.status().message(),
            "tensor 'x': dim 1 (6148914691236517206) exceeds the limit of 1099511627776");
  // Under the dim cap, the product itself overflows int64.
  auto big = checkedNumel({int64_t{1} << 40, int64_t{1} << 40}, "tensor 'y'");
  ASSERT_FALSE(big.isOk());
  EXPECT_EQ(big.status().message(),
            "tensor 'y': shape 1099511627776x1099511627776 has more elements than a 64-bit "
            "count holds");
}

TEST_F(TensorSize, NegativeDimAndRankPastTheCap) {
  EXPECT_EQ(checkedNumel({2, -3}, "tensor 'x'").status().message(),
            "tensor 'x': dim 1 is negative (-3)");
  EXPECT_EQ(checkedNumel(Shape(65, 1), "tensor 'x'").status().message(),
            "tensor 'x': rank 65 exceeds the limit of 64");
}

TEST_F(TensorSize, ByteSizePastTheCapIsAnError) {
  // 2^62 uint8 elements: a count that fits, bytes that do not.
  auto bytes = checkedByteSize(DataType::kUInt8, {int64_t{1} << 31, int64_t{1} << 31}, "input 'x'");
  ASSERT_FALSE(bytes.isOk());
  EXPECT_EQ(bytes.status().message(),
            "input 'x': shape 2147483648x2147483648 of uint8 needs more than the limit of "
            "68719476736 bytes (KILN_MAX_TENSOR_BYTES)");
  // 2^61 float64 elements: count * 8 overflows int64 itself.
  EXPECT_FALSE(
      checkedByteSize(DataType::kFloat64, {int64_t{1} << 31, int64_t{1} << 30}, "t").isOk());
}

TEST_F(TensorSize, LimitsAreConfigurable) {
  TensorLimits small;
  small.maxBytes = 1024;
  small.maxRank = 3;
  ScopedTensorLimits guard(small);
  EXPECT_TRUE(checkedByteSize(DataType::kFloat32, {16, 16}, "t").isOk());
  EXPECT_FALSE(checkedByteSize(DataType::kFloat32, {16, 17}, "t").isOk());
  EXPECT_FALSE(checkedNumel({1, 1, 1, 1}, "t").isOk());
}

TEST_F(TensorSize, ShapeNumelReportsOverflowAsMinusOne) {
  EXPECT_EQ(shapeNumel({3, kWrapsToTwo}), -1);
  EXPECT_EQ(shapeNumel({0, kWrapsToTwo, 3}), 0);
  EXPECT_EQ(shapeNumel({2, -1}), -1);
}

TEST_F(TensorSize, ConstructorRefusesShapesThatWrap) {
  // Before the check this gave numel 2 and a 8-byte buffer for a "3 x 6e18" tensor.
  EXPECT_THROW(Tensor(DataType::kFloat32, {3, kWrapsToTwo}), TensorSizeError);
  // A negative dim used to become a 0-byte tensor silently.
  EXPECT_THROW(Tensor(DataType::kFloat32, {-4}), TensorSizeError);
  // 2^62 elements used to get numel * 4 wrapped to a 0-byte buffer.
  EXPECT_THROW(Tensor(DataType::kFloat32, {int64_t{1} << 31, int64_t{1} << 31}), TensorSizeError);
  Tensor ok(DataType::kFloat32, {2, 3});
  EXPECT_EQ(ok.numel(), 6);
  EXPECT_EQ(ok.byteSize(), 24u);
}

TEST_F(TensorSize, AllocateTensorReturnsTheError) {
  auto t = allocateTensor(DataType::kInt64, {3, kWrapsToTwo}, "initializer 'w'");
  ASSERT_FALSE(t.isOk());
  EXPECT_EQ(t.status().message().rfind("initializer 'w': dim 1", 0), 0u) << t.status().message();
  auto fine = allocateTensor(DataType::kInt64, {2}, "w");
  ASSERT_TRUE(fine.isOk());
  EXPECT_EQ(fine->byteSize(), 16u);
}

TEST_F(TensorSize, ReshapedNeverOutgrowsItsStorage) {
  Tensor t = Tensor::fromVector<float>(DataType::kFloat32, {2}, {1.f, 2.f});
  EXPECT_THROW(t.reshaped({3, kWrapsToTwo}), TensorSizeError);
  EXPECT_THROW(t.reshaped({2, 2}), TensorSizeError);
  Tensor r = t.reshaped({1, 2});
  EXPECT_EQ(r.numel(), 2);
  EXPECT_FLOAT_EQ(r.data<float>()[1], 2.f);
}

TEST_F(TensorSize, RandomInputChecksBeforeWriting) {
  // randomInputTensor once wrote 2^62 values into a 0-byte buffer.
  auto huge = randomInput(DataType::kFloat32, {int64_t{1} << 31, int64_t{1} << 31}, 7, "input 'x'");
  ASSERT_FALSE(huge.isOk());
  EXPECT_EQ(huge.status().message().rfind("input 'x': shape 2147483648x2147483648", 0), 0u);
  auto small = randomInput(DataType::kFloat16, {3, 5000}, 7, "input 'x'");
  ASSERT_TRUE(small.isOk());
  // Chunked generation fills every element: none is left zero (values are in [-1, 1]).
  int zeros = 0;
  for (int64_t i = 0; i < small->numel(); ++i) zeros += small->valueAsDouble(i) == 0.0;
  EXPECT_LT(zeros, 3);
  EXPECT_NE(small->valueAsDouble(14999), small->valueAsDouble(14998));
}

TEST_F(TensorSize, RandomInputOfAnUndefinedTypeIsAnError) {
  // fuzz_onnx_import: a graph input with elem_type 0 reached randomInputTensor, which
  // copied from a null buffer (UBSan); kiln build's timing inputs take that path.
  auto undefined = randomInput(DataType::kUndefined, {2, 3}, 7, "input 'value1'");
  ASSERT_FALSE(undefined.isOk());
  EXPECT_EQ(undefined.status().message(),
            "input 'value1': element type undefined (the model declares none)");
}

}  // namespace
}  // namespace kiln
