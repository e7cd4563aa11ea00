// Output sizes that come from data or attributes (Reshape targets, pads, Tile
// repeats, ConstantOfShape, Range) are checked by shape inference before any
// kernel allocates them, and by each kernel's allocation when run directly.
#include <gtest/gtest.h>

#include "kiln/tensor_size.h"
#include "kiln/onnx_import.h"
#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"
#include "support/hostile_models.h"
#include "support/op_test.h"

namespace kiln {
namespace {

using namespace test::hostile;
using ShapeSizes = FixedLimitsTest;

Network imported(const onnx::ModelProto& model) {
  auto net = importOnnxBytes(serialized(model), ".", "hostile.onnx");
  EXPECT_TRUE(net.isOk()) << net.status().toString();
  return net.isOk() ? std::move(net).value() : Network{};
}

// Shape inference of `model` fails with exactly `expected`.
void expectInferenceError(const onnx::ModelProto& model, const std::string& expected) {
  auto shapes = inferShapes(imported(model));
  ASSERT_FALSE(shapes.isOk()) << "inferred shapes where this was expected: " << expected;
  EXPECT_EQ(shapes.status().message(), expected);
}

TEST_F(ShapeSizes, ReshapeTargetThatWrapsIsRefused) {
  // 3 x 6148914691236517206 has "2 elements" unchecked, as many as x: accepted, exit 0.
  expectInferenceError(reshapeFromConstant({3, kWrapsToTwo}),
                       "node 'reshape' (#1, Reshape): output 'r': dim 1 (6148914691236517206) "
                       "exceeds the limit of 1099511627776");
}

TEST_F(ShapeSizes, RunningTheWrappedReshapeFailsCleanly) {
  Network net = imported(reshapeFromConstant({3, kWrapsToTwo}));
  ReferenceBackend backend(net);
  std::vector<NamedTensor> out;
  Status s = backend.run({{"x", test::floatTensor({2}, {1, 2})}}, &out);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("node 'reshape' (#1, Reshape)"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
}

TEST_F(ShapeSizes, HugePadsAreRefusedBeforeAllocation) {
  expectInferenceError(padModel({0, 0, int64_t{1} << 39, 0}),
                       "node 'pad' (#0, Pad): output 'y': shape 549755813890x2 of float32 needs "
                       "more than the limit of 68719476736 bytes (KILN_MAX_TENSOR_BYTES)");
}

// Col2Im's shape rule takes its dims from the image_shape constant: past the dim limit, or
// past a 64-bit element count, inference refuses before anything is allocated.
TEST_F(ShapeSizes, HugeCol2ImImagesAreRefusedBeforeAllocation) {
  expectInferenceError(col2ImModel({int64_t{1} << 62, 4}),
                       "node 'col2im' (#0, Col2Im): output 'y': dim 2 (4611686018427387904) "
                       "exceeds the limit of 1099511627776");
  expectInferenceError(col2ImModel({int64_t{1} << 40, int64_t{1} << 40}),
                       "node 'col2im' (#0, Col2Im): output 'y': shape 1x2x1099511627776x"
                       "1099511627776 has more elements than a 64-bit count holds");
}

TEST_F(ShapeSizes, KernelsCheckTheirOutputSizeWhenRunDirectly) {
  // The output-size budget: under a 1 KiB cap a Pad to 2 x 300 float32 (2400 bytes)
  // fails at its allocation, and the node says why; nothing was allocated.
  TensorLimits small;
  small.maxBytes = 1024;
  ScopedTensorLimits limits(small);
  auto pad = test::OpTest("Pad", 13)
                 .input(test::floatTensor({2, 2}, {1, 2, 3, 4}))
                 .input(test::int64Tensor({4}, {0, 0, 0, 298}))
                 .run();
  ASSERT_FALSE(pad.isOk());
  EXPECT_EQ(pad.status().message(),
            "node 'Pad_test' (#0, Pad): output 'out0': shape 2x300 of float32 needs more than the "
            "limit of 1024 bytes (KILN_MAX_TENSOR_BYTES)");
  auto fits = test::OpTest("Pad", 13)
                  .input(test::floatTensor({2, 2}, {1, 2, 3, 4}))
                  .input(test::int64Tensor({4}, {0, 0, 0, 2}))
                  .run();
  ASSERT_TRUE(fits.isOk()) << fits.status().toString();
  EXPECT_FLOAT_EQ(fits.value()[0].data<float>()[1], 2.f);
}

TEST_F(ShapeSizes, TileProductsThatOverflowAreRefused) {
  // An empty input repeated 2^32 times along dim 1 once wrapped to a 0x0 output instead of
  // an error ([0, 2^40] x 2^32 then; such an input is now refused itself, as the next test
  // shows, so [0, 2^20] x 2^44 = 2^64, which wraps to 0 the same way, stands in for it).
  auto tile = test::OpTest("Tile", 13)
                  .input(Tensor(DataType::kFloat32, {0, int64_t{1} << 20}))
                  .input(test::int64Tensor({2}, {1, int64_t{1} << 44}))
                  .run();
  ASSERT_FALSE(tile.isOk());
  EXPECT_EQ(tile.status().message(), "node 'Tile_test' (#0, Tile): repeats are too large");
}

// An empty tensor is held to the byte cap as if its 0 dims were 1: kernels size loops and
// index tables by the other dims (fuzz_onnx_import's MatMul, Reduce, Unique, MaxPool findings).
TEST_F(ShapeSizes, AnEmptyTensorWhoseOtherDimsPassTheCapIsRefused) {
  auto refused = checkedByteSize(DataType::kFloat32, {0, int64_t{1} << 40, 2}, "tensor 'x'");
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find(
                "tensor 'x': shape 0x1099511627776x2 of float32 is empty, but its other dims "
                "alone pass the limit of"),
            std::string::npos)
      << refused.status().message();
  auto ordinary = checkedByteSize(DataType::kFloat32, {0, 1024, 3}, "tensor 'y'");
  ASSERT_TRUE(ordinary.isOk()) << ordinary.status().toString();
  EXPECT_EQ(*ordinary, 0);
}

TEST_F(ShapeSizes, BoundInputShapesAreChecked) {
  Network net = imported(identityModel({2}));
  net.graph.inputs[0].hasShape = false;
  auto shapes = inferShapes(net, {{"x", {3, kWrapsToTwo}}});
  ASSERT_FALSE(shapes.isOk());
  EXPECT_EQ(shapes.status().message(),
            "input 'x': dim 1 (6148914691236517206) exceeds the limit of 1099511627776");
}

TEST_F(ShapeSizes, OrdinaryPadsStillInfer) {
  Network net = imported(padModel({0, 1, 0, 2}));
  auto shapes = inferShapes(net);
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  EXPECT_EQ(symbolicShapeToString(shapes->values.at("y").shape), "2x5");
}

}  // namespace
}  // namespace kiln
