// Tests for the tensor manipulation op family (shape_ops, slice_pad, generator_ops,
// gather_scatter, selection_ops, resize): hand-computed values on small inputs plus
// the error cases that must be a Status, not a crash. See tests/support/op_test.h.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kiln/tensor_size.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

Tensor f32(const Shape& shape, const std::vector<float>& values) {
  return floatTensor(shape, values);
}
Tensor i64(const Shape& shape, const std::vector<int64_t>& values) {
  return int64Tensor(shape, values);
}
Tensor ints(const std::vector<int64_t>& values) {
  return Tensor::int64Vector(values);
}

// Runs `op` expecting success and returns output `i`.
Tensor runOk(OpTest& op, int outputs = 1, int i = 0) {
  auto result = op.run(outputs);
  EXPECT_TRUE(result.isOk()) << result.status().toString();
  return result.isOk() ? result.value()[i] : Tensor();
}

void expectFloats(const Tensor& t, const Shape& shape, const std::vector<float>& values) {
  expectTensorNear(t, f32(shape, values), 1e-5, 1e-5);
}
void expectInts(const Tensor& t, const Shape& shape, const std::vector<int64_t>& values) {
  expectTensorNear(t, i64(shape, values), 0, 0);
}

// ---- shape_ops.cpp -------------------------------------------------------------

TEST(ShapeOps, ShapeWithStartEndAndSize) {
  Tensor x(DataType::kFloat32, {2, 3, 4});
  OpTest shape("Shape", 15);
  shape.attr("start", int64_t{1}).attr("end", int64_t{-1}).input(x);
  expectInts(runOk(shape), {1}, {3});
  OpTest size("Size", 13);
  size.input(x);
  expectInts(runOk(size), {}, {24});
}

TEST(ShapeOps, ReshapeCopiesZeroInfersMinusOneAndSharesStorage) {
  Tensor x = randomTensor(DataType::kFloat32, {2, 3, 4}, 1);
  OpTest op("Reshape", 14);
  op.input(x).input(ints({0, -1}));
  Tensor y = runOk(op);
  EXPECT_EQ(y.shape(), (Shape{2, 12}));
  EXPECT_EQ(y.rawData(), x.rawData());
}

TEST(ShapeOps, ReshapeErrors) {
  Tensor x(DataType::kFloat32, {2, 3});
  EXPECT_FALSE(OpTest("Reshape", 14).input(x).input(ints({5, -1})).run().isOk());
  EXPECT_FALSE(OpTest("Reshape", 14).input(x).input(ints({-1, -1})).run().isOk());
  EXPECT_FALSE(OpTest("Reshape", 14)
                   .attr("allowzero", int64_t{1})
                   .input(x)
                   .input(ints({0, -1}))
                   .run()
                   .isOk());
}

TEST(ShapeOps, FlattenSqueezeUnsqueeze) {
  Tensor x = randomTensor(DataType::kFloat32, {2, 1, 3, 1}, 2);
  OpTest flatten("Flatten", 13);
  flatten.attr("axis", int64_t{-2}).input(x);
  EXPECT_EQ(runOk(flatten).shape(), (Shape{2, 3}));
  OpTest squeezeAll("Squeeze", 13);
  squeezeAll.input(x);
  EXPECT_EQ(runOk(squeezeAll).shape(), (Shape{2, 3}));
  OpTest squeezeAttr("Squeeze", 11);
  squeezeAttr.attr("axes", std::vector<int64_t>{-1}).input(x);
  EXPECT_EQ(runOk(squeezeAttr).shape(), (Shape{2, 1, 3}));
  OpTest unsqueeze("Unsqueeze", 13);
  unsqueeze.input(x).input(ints({0, -1}));
  EXPECT_EQ(runOk(unsqueeze).shape(), (Shape{1, 2, 1, 3, 1, 1}));
  EXPECT_FALSE(OpTest("Squeeze", 13).input(x).input(ints({0})).run().isOk());
  EXPECT_FALSE(OpTest("Unsqueeze", 13).input(x).input(ints({0, 0})).run().isOk());
}

TEST(ShapeOps, Transpose) {
  OpTest op("Transpose", 13);
  op.input(f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  expectFloats(runOk(op), {3, 2}, {1, 4, 2, 5, 3, 6});
  OpTest perm("Transpose", 13);
  perm.attr("perm", std::vector<int64_t>{1, 2, 0}).input(f32({2, 1, 2}, {1, 2, 3, 4}));
  expectFloats(runOk(perm), {1, 2, 2}, {1, 3, 2, 4});
  EXPECT_FALSE(OpTest("Transpose", 13)
                   .attr("perm", std::vector<int64_t>{0, 0})
                   .input(f32({2, 2}, {1, 2, 3, 4}))
                   .run()
                   .isOk());
}

TEST(ShapeOps, ConcatAlongAxisAndMismatch) {
  OpTest op("Concat", 13);
  op.attr("axis", int64_t{-1}).input(f32({2, 1}, {1, 2})).input(f32({2, 2}, {3, 4, 5, 6}));
  expectFloats(runOk(op), {2, 3}, {1, 3, 4, 2, 5, 6});
  EXPECT_FALSE(OpTest("Concat", 13)
                   .attr("axis", int64_t{0})
                   .input(f32({2, 1}, {1, 2}))
                   .input(f32({2, 2}, {3, 4, 5, 6}))
                   .run()
                   .isOk());
}

TEST(ShapeOps, SplitUnevenAndExplicit) {
  OpTest uneven("Split", 18);
  uneven.attr("num_outputs", int64_t{2}).input(f32({5}, {1, 2, 3, 4, 5}));
  auto parts = uneven.run(2);
  ASSERT_TRUE(parts.isOk()) << parts.status().toString();
  expectFloats(parts.value()[0], {3}, {1, 2, 3});
  expectFloats(parts.value()[1], {2}, {4, 5});
  OpTest given("Split", 13);
  given.attr("axis", int64_t{1}).input(f32({2, 3}, {1, 2, 3, 4, 5, 6})).input(ints({1, 2}));
  auto halves = given.run(2);
  ASSERT_TRUE(halves.isOk()) << halves.status().toString();
  expectFloats(halves.value()[0], {2, 1}, {1, 4});
  expectFloats(halves.value()[1], {2, 2}, {2, 3, 5, 6});
  EXPECT_FALSE(OpTest("Split", 13).input(f32({3}, {1, 2, 3})).input(ints({1, 1})).run(2).isOk());
}

TEST(ShapeOps, SplitOfAScalarIsAnError) {
  // fuzz_onnx_import: axis 0 of a scalar passed normalizeAxis and the kernel read
  // shape()[0] of an empty shape (UBSan, tests/fuzz/regressions/fuzz_onnx_import).
  auto parts = OpTest("Split", 13).input(f32({}, {4})).run(2);
  ASSERT_FALSE(parts.isOk());
  EXPECT_NE(parts.status().message().find("cannot split a scalar (rank 0) input"),
            std::string::npos)
      << parts.status().message();
}

TEST(ShapeOps, DepthToSpaceModesAndSpaceToDepth) {
  const Tensor x = f32({1, 8, 1, 1}, {1, 2, 3, 4, 5, 6, 7, 8});
  OpTest dcr("DepthToSpace", 13);
  dcr.attr("blocksize", int64_t{2}).input(x);
  expectFloats(runOk(dcr), {1, 2, 2, 2}, {1, 3, 5, 7, 2, 4, 6, 8});
  OpTest crd("DepthToSpace", 13);
  crd.attr("blocksize", int64_t{2}).attr("mode", std::string("CRD")).input(x);
  expectFloats(runOk(crd), {1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  OpTest s2d("SpaceToDepth", 13);
  s2d.attr("blocksize", int64_t{2}).input(f32({1, 2, 2, 2}, {1, 3, 5, 7, 2, 4, 6, 8}));
  expectFloats(runOk(s2d), {1, 8, 1, 1}, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_FALSE(OpTest("DepthToSpace", 13).attr("blocksize", int64_t{3}).input(x).run().isOk());
}

// Hostile attribute and input values: a clean error, not int64 overflow (the
// fuzz_onnx_import family of findings).
TEST(ShapeOps, HugeBlocksizeAndSplitSizesAreErrors) {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  // blocksize^2 overflowed int64; an empty input passes every divisibility test.
  const Tensor empty(DataType::kFloat32, {1, 1, 0, 0});
  EXPECT_FALSE(
      OpTest("SpaceToDepth", 13).attr("blocksize", int64_t{1} << 32).input(empty).run().isOk());
  EXPECT_FALSE(OpTest("DepthToSpace", 13)
                   .attr("blocksize", int64_t{1} << 32)
                   .input(Tensor(DataType::kFloat32, {1, 0, 1, 1}))
                   .run()
                   .isOk());
  // Split sizes whose sum overflows int64.
  OpTest split("Split", 13);
  split.input(f32({4}, {1, 2, 3, 4})).input(ints({kMax, kMax, 2}));
  EXPECT_FALSE(split.run(3).isOk());
}

// ---- slice_pad.cpp ---------------------------------------------------------------

TEST(SlicePad, SliceNegativeStepsAndHugeEnds) {
  const Tensor x = f32({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  const int64_t kMin = std::numeric_limits<int64_t>::min(),
                kMax = std::numeric_limits<int64_t>::max();
  OpTest back("Slice", 13);
  back.input(x).input(ints({-1})).input(ints({kMin})).input(ints({0})).input(ints({-2}));
  expectFloats(runOk(back), {5}, {9, 7, 5, 3, 1});
  OpTest forward("Slice", 13);
  forward.input(x).input(ints({1})).input(ints({kMax})).missingInput().input(ints({3}));
  expectFloats(runOk(forward), {3}, {1, 4, 7});
  OpTest attrs("Slice", 9);
  attrs.attr("starts", std::vector<int64_t>{2}).attr("ends", std::vector<int64_t>{-5}).input(x);
  expectFloats(runOk(attrs), {3}, {2, 3, 4});
  EXPECT_FALSE(OpTest("Slice", 13)
                   .input(x)
                   .input(ints({0}))
                   .input(ints({5}))
                   .input(ints({0}))
                   .input(ints({0}))
                   .run()
                   .isOk());
}

TEST(SlicePad, StepsPastTheDimTakeTheFirstElement) {
  // Steps of INT64_MAX / INT64_MIN overflowed the count and the read stride.
  const int64_t kMin = std::numeric_limits<int64_t>::min(),
                kMax = std::numeric_limits<int64_t>::max();
  const Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  OpTest forward("Slice", 13);
  forward.input(x).input(ints({1})).input(ints({kMax})).input(ints({0})).input(ints({kMax}));
  expectFloats(runOk(forward), {1, 2}, {3, 4});
  OpTest back("Slice", 13);
  back.input(x).input(ints({-1})).input(ints({kMin})).input(ints({0})).input(ints({kMin}));
  expectFloats(runOk(back), {1, 2}, {5, 6});
  OpTest backHalf("Slice", 13);
  backHalf.input(x).input(ints({-1})).input(ints({kMin})).input(ints({0})).input(ints({-kMax}));
  expectFloats(runOk(backHalf), {1, 2}, {5, 6});
}

TEST(SlicePad, PadModes) {
  const Tensor x = f32({3}, {1, 2, 3});
  auto pad = [&](const std::string& mode) {
    OpTest op("Pad", 19);
    op.attr("mode", mode).input(x).input(ints({2, 1}));
    if (mode == "constant") op.input(Tensor::scalarFloat(9.f));
    return runOk(op);
  };
  expectFloats(pad("constant"), {6}, {9, 9, 1, 2, 3, 9});
  expectFloats(pad("reflect"), {6}, {3, 2, 1, 2, 3, 2});
  expectFloats(pad("edge"), {6}, {1, 1, 1, 2, 3, 3});
  expectFloats(pad("wrap"), {6}, {2, 3, 1, 2, 3, 1});
  OpTest crop("Pad", 11);
  crop.input(x).input(ints({-1, 1}));
  expectFloats(runOk(crop), {3}, {2, 3, 0});
  OpTest axes("Pad", 18);
  axes.input(f32({2, 2}, {1, 2, 3, 4})).input(ints({1, 0})).missingInput().input(ints({-1}));
  expectFloats(runOk(axes), {2, 3}, {0, 1, 2, 0, 3, 4});
  EXPECT_FALSE(OpTest("Pad", 13).input(x).input(ints({1})).run().isOk());
}

TEST(SlicePad, TileExpandCenterCropPad) {
  OpTest tile("Tile", 13);
  tile.input(f32({1, 2}, {1, 2})).input(ints({2, 2}));
  expectFloats(runOk(tile), {2, 4}, {1, 2, 1, 2, 1, 2, 1, 2});
  OpTest expand("Expand", 13);
  expand.input(f32({2, 1}, {1, 2})).input(ints({2, 3}));
  expectFloats(runOk(expand), {2, 3}, {1, 1, 1, 2, 2, 2});
  EXPECT_FALSE(OpTest("Expand", 13).input(f32({2}, {1, 2})).input(ints({3})).run().isOk());
  const Tensor x = f32({5}, {1, 2, 3, 4, 5});
  OpTest crop("CenterCropPad", 18);
  crop.input(x).input(ints({3}));
  expectFloats(runOk(crop), {3}, {2, 3, 4});
  OpTest pad("CenterCropPad", 18);
  pad.input(x).input(ints({8}));
  expectFloats(runOk(pad), {8}, {0, 1, 2, 3, 4, 5, 0, 0});
}

// ai.kiln StridedCopy: Y[i] = X_flat[offset + i . strides] (ops/strided_copy_params.h).
OpTest stridedCopy(const Tensor& x, const std::vector<int64_t>& shape,
                   const std::vector<int64_t>& strides, int64_t offset) {
  OpTest op("StridedCopy", 1, "ai.kiln");
  op.attr("shape", shape).attr("strides", strides).attr("offset", offset).input(x);
  return op;
}

TEST(SlicePad, StridedCopyByHand) {
  const Tensor x = f32({2, 6}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  OpTest columns = stridedCopy(x, {3, 2}, {1, 6}, 1);  // X[:, 1:4] transposed
  expectFloats(runOk(columns), {3, 2}, {2, 8, 3, 9, 4, 10});
  OpTest broadcast = stridedCopy(i64({3}, {7, -8, 9}), {2, 3}, {0, 1}, 0);  // a stride of 0
  expectInts(runOk(broadcast), {2, 3}, {7, -8, 9, 7, -8, 9});
  OpTest scalar = stridedCopy(x, {}, {}, 11);
  expectFloats(runOk(scalar), {}, {12});
  OpTest empty = stridedCopy(x, {0, 4}, {1, 1}, 12);  // reads nothing: no bound to check
  EXPECT_EQ(runOk(empty).shape(), (Shape{0, 4}));
}

// The K third of a merged Q/K/V product [B, S, 3 * H * D], heads transposed to [B, H, S, D]:
// DeBERTa's head split as fold_split_views writes it, on random data.
TEST(SlicePad, StridedCopyOfAHeadSplitMatchesTheIndexing) {
  const int64_t b = 2, s = 5, h = 3, d = 4, width = 3 * h * d;
  const Tensor x = randomTensor(DataType::kFloat32, {b, s, width}, 17, 0.5, 2.0);
  OpTest op = stridedCopy(x, {b, h, s, d}, {s * width, d, width, 1}, h * d);
  const Tensor y = runOk(op);
  ASSERT_EQ(y.shape(), (Shape{b, h, s, d}));
  const float* in = x.data<float>();
  const float* out = y.data<float>();
  int64_t i = 0;
  for (int64_t ib = 0; ib < b; ++ib)
    for (int64_t ih = 0; ih < h; ++ih)
      for (int64_t is = 0; is < s; ++is)
        for (int64_t id = 0; id < d; ++id, ++i)
          ASSERT_EQ(out[i], in[(ib * s + is) * width + h * d + ih * d + id]) << i;
}

// Hostile attributes are errors naming the node, never a read past X.
TEST(SlicePad, StridedCopyRefusesReadsPastTheInputAndBadAttributes) {
  const Tensor x = randomTensor(DataType::kFloat32, {4, 6}, 18, 0.5, 2.0);  // 24 elements
  OpTest last = stridedCopy(x, {2, 3}, {12, 5}, 0);  // reaches element 22 of 24: fits
  EXPECT_EQ(runOk(last).data<float>()[5], x.data<float>()[22]);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  struct Case {
    std::vector<int64_t> shape, strides;
    int64_t offset;
    const char* says;
  };
  const Case cases[] = {
      {{4, 6}, {6, 1}, 1, "reads element 24"},                         // one past the end
      {{5, 6}, {6, 1}, 0, "reads element 29"},                         // a dim too many rows
      {{2, 2}, {-1, 1}, 3, "negative"},                                // a negative stride
      {{2, 2}, {1, 1}, -1, "negative"},                                // a negative offset
      {{2, -2}, {1, 1}, 0, "negative dim"},                            // a negative dim
      {{2, 2}, {1}, 0, "differ in rank"},                              // one stride for two dims
      {{3}, {int64_t{1} << 62}, 0, "overflow"},                        // 2 * 2^62 wraps
      {{2, 2}, {kMax, 1}, 0, "overflow"},                              // 1 * max + 1 wraps
      {{2}, {1}, kMax, "overflow"},                                    // the offset's sum wraps
      {{int64_t{1} << 31, int64_t{1} << 31}, {0, 0}, 0, "too large"},  // 2^62 outputs
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.says);
    OpTest op = stridedCopy(x, c.shape, c.strides, c.offset);
    auto result = op.run();
    ASSERT_FALSE(result.isOk());
    EXPECT_NE(result.status().toString().find(c.says), std::string::npos)
        << result.status().toString();
    EXPECT_NE(result.status().toString().find("StridedCopy"), std::string::npos)
        << result.status().toString();
  }
}

// ---- generator_ops.cpp -------------------------------------------------------------

TEST(Generators, EyeLikeConstantOfShapeRangeTrilu) {
  OpTest eye("EyeLike", 9);
  eye.attr("k", int64_t{1}).input(f32({2, 3}, {5, 5, 5, 5, 5, 5}));
  expectFloats(runOk(eye), {2, 3}, {0, 1, 0, 0, 0, 1});

  OpTest fill("ConstantOfShape", 9);
  Attribute value;
  value.kind = Attribute::Kind::kTensor;
  value.t = Tensor::fromVector(DataType::kInt32, {1}, std::vector<int32_t>{7});
  fill.node().attributes["value"] = value;
  fill.input(ints({2, 2}));
  expectTensorNear(runOk(fill),
                   Tensor::fromVector(DataType::kInt32, {2, 2}, std::vector<int32_t>{7, 7, 7, 7}),
                   0, 0);

  OpTest range("Range", 11);
  range.input(Tensor::scalarFloat(1))
      .input(Tensor::scalarFloat(0))
      .input(Tensor::scalarFloat(-0.25f));
  expectFloats(runOk(range), {4}, {1, 0.75f, 0.5f, 0.25f});
  OpTest intRange("Range", 11);
  intRange.input(Tensor::scalarInt64(1))
      .input(Tensor::scalarInt64(6))
      .input(Tensor::scalarInt64(2));
  expectInts(runOk(intRange), {3}, {1, 3, 5});
  EXPECT_FALSE(OpTest("Range", 11)
                   .input(Tensor::scalarInt64(1))
                   .input(Tensor::scalarInt64(6))
                   .input(Tensor::scalarInt64(0))
                   .run()
                   .isOk());

  const Tensor m = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  OpTest upper("Trilu", 14);
  upper.input(m).input(Tensor::scalarInt64(1));
  expectFloats(runOk(upper), {3, 3}, {0, 2, 3, 0, 0, 6, 0, 0, 0});
  OpTest lower("Trilu", 14);
  lower.attr("upper", int64_t{0}).input(m).input(Tensor::scalarInt64(-1));
  expectFloats(runOk(lower), {3, 3}, {0, 0, 0, 4, 0, 0, 7, 8, 0});
}

TEST(Generators, HugeDiagonalAndRangeEnds) {
  const int64_t kMin = std::numeric_limits<int64_t>::min(),
                kMax = std::numeric_limits<int64_t>::max();
  // i + k overflowed for k = INT64_MAX; a diagonal past either edge sets nothing.
  for (int64_t k : {kMax, kMin}) {
    OpTest eye("EyeLike", 9);
    eye.attr("k", k).input(f32({2, 2}, {5, 5, 5, 5}));
    expectFloats(runOk(eye), {2, 2}, {0, 0, 0, 0});
  }
  // limit - start overflowed int64, and so did i * delta.
  OpTest wide("Range", 11);
  wide.input(Tensor::scalarInt64(-1))
      .input(Tensor::scalarInt64(kMax))
      .input(Tensor::scalarInt64(int64_t{1} << 62));
  expectInts(runOk(wide), {2}, {-1, (int64_t{1} << 62) - 1});
  OpTest full("Range", 11);
  full.input(Tensor::scalarInt64(kMin))
      .input(Tensor::scalarInt64(kMax))
      .input(Tensor::scalarInt64(int64_t{1} << 62));
  expectInts(runOk(full), {4}, {kMin, -(int64_t{1} << 62), 0, int64_t{1} << 62});
  EXPECT_FALSE(OpTest("Range", 11)
                   .input(Tensor::scalarInt64(kMin))
                   .input(Tensor::scalarInt64(kMax))
                   .input(Tensor::scalarInt64(1))
                   .run()
                   .isOk());
}

// ---- gather_scatter.cpp --------------------------------------------------------------

TEST(GatherScatter, GatherNegativeIndicesAndBounds) {
  const Tensor data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  OpTest op("Gather", 13);
  op.input(data).input(i64({1, 2}, {0, -1}));
  expectFloats(runOk(op), {1, 2, 2}, {1, 2, 5, 6});
  OpTest cols("Gather", 13);
  cols.attr("axis", int64_t{1}).input(data).input(Tensor::scalarInt64(1));
  expectFloats(runOk(cols), {3}, {2, 4, 6});
  EXPECT_FALSE(OpTest("Gather", 13).input(data).input(i64({1}, {3})).run().isOk());
  Tensor words(DataType::kString, {3});
  words.strings() = {"a", "b", "c"};
  OpTest strings("Gather", 13);
  strings.input(words).input(i64({2}, {2, 0}));
  Tensor picked = runOk(strings);
  ASSERT_EQ(picked.numel(), 2);
  EXPECT_EQ(picked.strings()[0], "c");
  EXPECT_EQ(picked.strings()[1], "a");
}

TEST(GatherScatter, GatherElementsAndGatherNd) {
  OpTest elements("GatherElements", 13);
  elements.attr("axis", int64_t{1})
      .input(f32({2, 2}, {1, 2, 3, 4}))
      .input(i64({2, 2}, {0, 0, 1, 0}));
  expectFloats(runOk(elements), {2, 2}, {1, 1, 4, 3});
  EXPECT_FALSE(OpTest("GatherElements", 13)
                   .input(f32({2, 2}, {1, 2, 3, 4}))
                   .input(i64({1, 2}, {2, 0}))
                   .run()
                   .isOk());
  OpTest nd("GatherND", 13);
  nd.attr("batch_dims", int64_t{1})
      .input(f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}))
      .input(i64({2, 1}, {1, 0}));
  expectFloats(runOk(nd), {2, 2}, {2, 3, 4, 5});
  EXPECT_FALSE(OpTest("GatherND", 13)
                   .input(f32({2, 2}, {1, 2, 3, 4}))
                   .input(i64({1, 2}, {0, 2}))
                   .run()
                   .isOk());
}

// ai.kiln BroadcastGatherElements: the indices broadcast over size-1 dims (not ONNX's
// smaller box), the output the data's shape but for the axis; indices dims neither 1 nor the
// data's, a rank mismatch and an index out of range are errors naming the node.
TEST(GatherScatter, BroadcastGatherElements) {
  OpTest rows("BroadcastGatherElements", 1, "ai.kiln");
  rows.attr("axis", int64_t{-1})
      .input(f32({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
      .input(i64({1, 2, 2}, {2, 0, -1, 1}));
  expectFloats(runOk(rows), {2, 2, 2}, {3, 1, 6, 5, 9, 7, 12, 11});
  for (const auto& [idxShape, idx] :
       {std::pair{Shape{2, 2}, std::vector<int64_t>{0, 1, 2, 0}},  // rank
        std::pair{Shape{1, 3, 1}, std::vector<int64_t>{0, 0, 0}},  // dim 1: 3 of 2
        std::pair{Shape{1, 2, 1}, std::vector<int64_t>{0, 3}}}) {  // 3 of 3
    EXPECT_FALSE(OpTest("BroadcastGatherElements", 1, "ai.kiln")
                     .attr("axis", int64_t{2})
                     .input(f32({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
                     .input(i64(idxShape, idx))
                     .run()
                     .isOk());
  }
}

TEST(GatherScatter, ScatterElementsReductions) {
  OpTest add("ScatterElements", 18);
  add.attr("axis", int64_t{1})
      .attr("reduction", std::string("add"))
      .input(f32({1, 5}, {1, 2, 3, 4, 5}))
      .input(i64({1, 2}, {1, 1}))
      .input(f32({1, 2}, {1.1f, 2.1f}));
  expectFloats(runOk(add), {1, 5}, {1, 5.2f, 3, 4, 5});
  OpTest none("Scatter", 9);
  none.input(f32({3}, {1, 2, 3})).input(i64({2}, {-1, 0})).input(f32({2}, {7, 8}));
  expectFloats(runOk(none), {3}, {8, 2, 7});
  EXPECT_FALSE(OpTest("ScatterElements", 13)
                   .input(f32({3}, {1, 2, 3}))
                   .input(i64({1}, {3}))
                   .input(f32({1}, {1}))
                   .run()
                   .isOk());
}

TEST(GatherScatter, ScatterNd) {
  const Tensor data = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor indices = i64({4, 1}, {4, 3, 1, 7});
  const Tensor updates = f32({4}, {9, 10, 11, 12});
  OpTest none("ScatterND", 13);
  none.input(data).input(indices).input(updates);
  expectFloats(runOk(none), {8}, {1, 11, 3, 10, 9, 6, 7, 12});
  OpTest mul("ScatterND", 16);
  mul.attr("reduction", std::string("mul")).input(data).input(indices).input(updates);
  expectFloats(runOk(mul), {8}, {1, 22, 3, 40, 45, 6, 7, 96});
  EXPECT_FALSE(OpTest("ScatterND", 13)
                   .input(data)
                   .input(i64({1, 1}, {8}))
                   .input(f32({1}, {1}))
                   .run()
                   .isOk());
  EXPECT_FALSE(
      OpTest("ScatterND", 13).input(data).input(indices).input(f32({3}, {1, 2, 3})).run().isOk());
}

// ---- selection_ops.cpp ----------------------------------------------------------------

TEST(Selection, OneHotNonZeroCompress) {
  OpTest oneHot("OneHot", 11);
  oneHot.input(i64({3}, {1, -1, 5})).input(Tensor::scalarInt64(3)).input(f32({2}, {2, 7}));
  expectFloats(runOk(oneHot), {3, 3}, {2, 7, 2, 2, 2, 7, 2, 2, 2});
  OpTest nonZero("NonZero", 13);
  nonZero.input(f32({2, 2}, {1, 0, 3, -1}));
  expectInts(runOk(nonZero), {2, 3}, {0, 1, 1, 0, 0, 1});
  const Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  OpTest rows("Compress", 11);
  rows.attr("axis", int64_t{0})
      .input(x)
      .input(Tensor::fromVector(DataType::kBool, {3}, std::vector<uint8_t>{0, 1, 1}));
  expectFloats(runOk(rows), {2, 2}, {3, 4, 5, 6});
  OpTest flat("Compress", 11);
  flat.input(x).input(
      Tensor::fromVector(DataType::kBool, {5}, std::vector<uint8_t>{0, 1, 0, 0, 1}));
  expectFloats(runOk(flat), {2}, {2, 5});
  EXPECT_FALSE(
      OpTest("Compress", 11)
          .attr("axis", int64_t{0})
          .input(x)
          .input(Tensor::fromVector(DataType::kBool, {4}, std::vector<uint8_t>{0, 0, 0, 1}))
          .run()
          .isOk());
}

TEST(Selection, OneHotHugeOrNanDepthIsAnError) {
  // depth was cast from double to int64: 1e30 or NaN was UB.
  for (float depth : {1e30f, std::numeric_limits<float>::quiet_NaN()}) {
    OpTest op("OneHot", 11);
    op.input(i64({1}, {0})).input(Tensor::scalarFloat(depth)).input(f32({2}, {0, 1}));
    EXPECT_FALSE(op.run().isOk()) << depth;
  }
}

TEST(Selection, UniqueSortedAndFirstOccurrence) {
  const Tensor x = f32({6}, {2, 1, 1, 3, 4, 3});
  OpTest sorted("Unique", 11);
  sorted.input(x);
  auto s = sorted.run(4);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  expectFloats(s.value()[0], {4}, {1, 2, 3, 4});
  expectInts(s.value()[1], {4}, {1, 0, 3, 4});
  expectInts(s.value()[2], {6}, {1, 0, 0, 2, 3, 2});
  expectInts(s.value()[3], {4}, {2, 1, 2, 1});
  OpTest unsorted("Unique", 11);
  unsorted.attr("sorted", int64_t{0}).input(x);
  auto u = unsorted.run(4);
  ASSERT_TRUE(u.isOk()) << u.status().toString();
  expectFloats(u.value()[0], {4}, {2, 1, 3, 4});
  expectInts(u.value()[2], {6}, {0, 1, 1, 2, 3, 2});
  OpTest rows("Unique", 11);
  rows.attr("axis", int64_t{0}).input(f32({3, 2}, {3, 1, 1, 2, 3, 1}));
  auto r = rows.run(4);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  expectFloats(r.value()[0], {2, 2}, {1, 2, 3, 1});
  expectInts(r.value()[3], {2}, {1, 2});
}

// ---- resize.cpp ------------------------------------------------------------------------

TEST(Resize, NearestHalfPixelUpsample) {
  OpTest op("Resize", 13);
  op.attr("mode", std::string("nearest"))
      .input(f32({1, 1, 2, 2}, {1, 2, 3, 4}))
      .missingInput()
      .input(f32({4}, {1, 1, 2, 3}));
  expectFloats(runOk(op), {1, 1, 4, 6},
               {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
}

TEST(Resize, LinearHalfPixelAndAlignCorners) {
  OpTest op("Resize", 13);
  op.attr("mode", std::string("linear"))
      .input(f32({1, 1, 2, 2}, {1, 2, 3, 4}))
      .missingInput()
      .input(f32({4}, {1, 1, 2, 2}));
  expectFloats(
      runOk(op), {1, 1, 4, 4},
      {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
  OpTest corners("Resize", 13);
  corners.attr("mode", std::string("linear"))
      .attr("coordinate_transformation_mode", std::string("align_corners"))
      .input(f32({2}, {0, 10}))
      .missingInput()
      .missingInput()
      .input(ints({5}));
  expectFloats(runOk(corners), {5}, {0, 2.5f, 5, 7.5f, 10});
}

TEST(Resize, CubicAntialiasAndCropAndResize) {
  OpTest cubic("Resize", 13);
  cubic.attr("mode", std::string("cubic"))
      .attr("coordinate_transformation_mode", std::string("asymmetric"))
      .input(f32({4}, {1, 2, 4, 8}))
      .missingInput()
      .input(f32({1}, {2}));
  Tensor up = runOk(cubic);
  ASSERT_EQ(up.shape(), (Shape{8}));
  EXPECT_NEAR(up.data<float>()[3], 2.71875f, 1e-5);  // x = 1.5: taps -3/32, 19/32, 19/32, -3/32
  OpTest aa("Resize", 18);
  aa.attr("mode", std::string("linear"))
      .attr("antialias", int64_t{1})
      .input(f32({4}, {0, 1, 2, 3}))
      .missingInput()
      .missingInput()
      .input(ints({2}));
  expectFloats(runOk(aa), {2}, {0.625f, 2.375f});
  OpTest crop("Resize", 13);
  crop.attr("mode", std::string("linear"))
      .attr("coordinate_transformation_mode", std::string("tf_crop_and_resize"))
      .attr("extrapolation_value", -1.f)
      .input(f32({4}, {0, 10, 20, 30}))
      .input(f32({2}, {0.5f, 1.5f}))
      .missingInput()
      .input(ints({3}));
  expectFloats(runOk(crop), {3}, {15, 30, -1});
}

TEST(Resize, UpsampleAndErrors) {
  OpTest up("Upsample", 9);
  up.input(f32({1, 2}, {1, 2})).input(f32({2}, {2, 2}));
  expectFloats(runOk(up), {2, 4}, {1, 1, 2, 2, 1, 1, 2, 2});
  const Tensor x = f32({2}, {1, 2});
  EXPECT_FALSE(OpTest("Resize", 13)
                   .input(x)
                   .missingInput()
                   .input(f32({1}, {2}))
                   .input(ints({4}))
                   .run()
                   .isOk());
  EXPECT_FALSE(OpTest("Resize", 13).input(x).missingInput().input(f32({2}, {2, 2})).run().isOk());
  EXPECT_FALSE(OpTest("Resize", 13)
                   .attr("mode", std::string("area"))
                   .input(x)
                   .missingInput()
                   .input(f32({1}, {2}))
                   .run()
                   .isOk());
}

TEST(Resize, HostileRoiScalesAndSizes) {
  const Tensor x = f32({1, 4}, {1, 2, 3, 4});
  // tf_crop_and_resize with a roi of 1e30: the linear taps cast the coordinate to int64.
  OpTest far("Resize", 18);
  far.attr("mode", std::string("linear"))
      .attr("coordinate_transformation_mode", std::string("tf_crop_and_resize"))
      .attr("extrapolation_value", 7.f)
      .input(x)
      .input(f32({4}, {0, 0, 1, 1e30f}))
      .missingInput()
      .input(ints({1, 3}));
  expectFloats(runOk(far), {1, 3}, {1, 7, 7});
  // A NaN roi start makes every coordinate NaN; nearest reads the first element.
  OpTest nan("Resize", 18);
  nan.attr("coordinate_transformation_mode", std::string("tf_crop_and_resize"))
      .input(x)
      .input(f32({4}, {0, std::numeric_limits<float>::quiet_NaN(), 1, 1}))
      .missingInput()
      .input(ints({1, 2}));
  expectFloats(runOk(nan), {1, 2}, {1, 1});
  // Antialias over an axis resized to 0: the scale 0 made the tap width infinite.
  OpTest empty("Resize", 18);
  empty.attr("mode", std::string("linear"))
      .attr("antialias", int64_t{1})
      .input(x)
      .missingInput()
      .missingInput()
      .input(ints({1, 0}));
  EXPECT_EQ(runOk(empty).shape(), (Shape{1, 0}));
}

TEST(Resize, KeepAspectRatioPastInt64IsAnError) {
  // not_smaller takes axis 1's scale 2^32 for axis 2 of 2^31 elements: 2^63 passed int64
  // before the cast. The input is empty (axis 0), so it holds no data.
  auto in = allocateTensor(DataType::kUInt8, {0, 1, int64_t{1} << 31}, "input");
  if (!in.isOk()) GTEST_SKIP() << in.status().toString();
  OpTest op("Resize", 18);
  op.attr("keep_aspect_ratio_policy", std::string("not_smaller"))
      .attr("axes", std::vector<int64_t>{1, 2})
      .input(in.value())
      .missingInput()
      .missingInput()
      .input(ints({int64_t{1} << 32, 1}));
  EXPECT_FALSE(op.run().isOk());
}

}  // namespace
}  // namespace kiln::test
