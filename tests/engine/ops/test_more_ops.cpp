// Tests for the later additions: the sub-byte and E8M0 data types (core conversions,
// TensorProto packing, Cast/Quantize), SpaceToDepth CRD, the losses, ReverseSequence,
// TensorScatter, BitCast, CumProd, the string ops, TfIdfVectorizer, AffineGrid,
// DeformConv, Swish/SwiGLU, the ai.onnx.ml ops and Scan-8. Hand-computed values on small
// inputs plus error cases. See tests/support/op_test.h.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "onnx/tensor_proto.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

const char kMl[] = "ai.onnx.ml";

Tensor codes(DataType type, const Shape& shape, const std::vector<uint8_t>& bytes) {
  return Tensor::fromVector(type, shape, bytes);
}

std::vector<int> bytesAsInts(const Tensor& t) {
  std::vector<int> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(static_cast<int8_t>(t.data<uint8_t>()[i]));
  return out;
}

Tensor runOk(OpTest& t, int outputs = 1, int which = 0) {
  auto out = t.run(outputs);
  EXPECT_TRUE(out.isOk()) << out.status().toString();
  return out.isOk() ? out.value()[which] : Tensor();
}

void setTensorAttr(OpTest& t, const std::string& name, const Tensor& value) {
  Attribute a;
  a.kind = Attribute::Kind::kTensor;
  a.t = value;
  t.node().attributes[name] = a;
}

void setStringsAttr(OpTest& t, const std::string& name, const std::vector<std::string>& values) {
  Attribute a;
  a.kind = Attribute::Kind::kStrings;
  a.strings = values;
  t.node().attributes[name] = a;
}

// ---- Data types ----

TEST(MoreDataTypes, Float4E2M1RoundsToEvenAndSaturates) {
  EXPECT_EQ(float4E2M1ToFloat(0x7), 6.0f);
  EXPECT_EQ(float4E2M1ToFloat(0xB), -1.5f);
  EXPECT_EQ(floatToFloat4E2M1(0.25f), 0x0);  // tie 0 / 0.5 -> even 0
  EXPECT_EQ(floatToFloat4E2M1(0.75f), 0x2);  // tie 0.5 / 1 -> 1
  EXPECT_EQ(floatToFloat4E2M1(-3.5f), 0xE);  // tie 3 / 4 -> -4
  EXPECT_EQ(floatToFloat4E2M1(2.5f), 0x4);   // tie 2 / 3 -> 2
  EXPECT_EQ(floatToFloat4E2M1(1e6f), 0x7);
  EXPECT_EQ(floatToFloat4E2M1(-INFINITY), 0xF);
  EXPECT_EQ(floatToFloat4E2M1(NAN), 0x8);
}

TEST(MoreDataTypes, Float8E8M0RoundingModes) {
  EXPECT_EQ(fp8E8M0ToFloat(127), 1.0f);
  EXPECT_TRUE(std::isnan(fp8E8M0ToFloat(0xFF)));
  EXPECT_EQ(floatToFp8E8M0(1.1f), 128);                             // up: 2
  EXPECT_EQ(floatToFp8E8M0(1.1f, true, E8M0Rounding::kDown), 127);  // 1
  EXPECT_EQ(floatToFp8E8M0(1.4f, true, E8M0Rounding::kNearest), 127);
  EXPECT_EQ(floatToFp8E8M0(1.6f, true, E8M0Rounding::kNearest), 128);
  EXPECT_EQ(floatToFp8E8M0(-4.0f), 129);  // the sign is dropped
  EXPECT_EQ(floatToFp8E8M0(INFINITY), 0xFF);
  EXPECT_EQ(floatToFp8E8M0(3.0e38f, true), 0xFE);
  EXPECT_EQ(floatToFp8E8M0(3.0e38f, false), 0xFF);
}

TEST(MoreDataTypes, SubByteTensorsRoundTripThroughTensorProto) {
  const Tensor int2 = codes(DataType::kInt2, {5}, {0xFF, 0xFE, 0x00, 0x01, 0xFF});  // -1 -2 0 1 -1
  onnx::TensorProto proto;
  onnx_import::tensorToProto(int2, "x", &proto);
  ASSERT_EQ(proto.raw_data().size(), 2u);                      // four per byte
  EXPECT_EQ(static_cast<uint8_t>(proto.raw_data()[0]), 0x4B);  // 11 10 00 01 from the low bits
  auto back = onnx_import::tensorFromProto(proto, "");
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(bytesAsInts(back.value()), (std::vector<int>{-1, -2, 0, 1, -1}));

  const Tensor fp4 = codes(DataType::kFloat4E2M1, {3}, {0x1, 0xF, 0x7});
  onnx::TensorProto proto4;
  onnx_import::tensorToProto(fp4, "y", &proto4);
  auto back4 = onnx_import::tensorFromProto(proto4, "");
  ASSERT_TRUE(back4.isOk());
  expectTensorNear(castTensor(back4.value(), DataType::kFloat32), floatTensor({3}, {0.5f, -6, 6}),
                   0, 0);
}

TEST(MoreDataTypes, CoreCastHandlesNewTypes) {
  const Tensor x = floatTensor({4}, {-3, 0.6f, 1, 5});
  EXPECT_EQ(bytesAsInts(castTensor(x, DataType::kInt2)), (std::vector<int>{-2, 1, 1, 1}));
  EXPECT_EQ(bytesAsInts(castTensor(x, DataType::kUInt2)), (std::vector<int>{0, 1, 1, 3}));
  expectTensorNear(castTensor(castTensor(x, DataType::kFloat4E2M1), DataType::kFloat32),
                   floatTensor({4}, {-3, 0.5f, 1, 4}), 0, 0);
}

// ---- Cast / Quantize ----

Tensor castTo(const Tensor& x, DataType to, int opset) {
  OpTest t("Cast", opset);
  t.attr("to", static_cast<int64_t>(to)).input(x);
  return runOk(t);
}

TEST(MoreCast, Int4SaturatesBeforeOpset24AndWrapsFrom24) {
  const Tensor x = floatTensor({5}, {-9, 8, 2.5f, 3.5f, -1});
  EXPECT_EQ(bytesAsInts(castTo(x, DataType::kInt4, 21)), (std::vector<int>{-8, 7, 2, 4, -1}));
  EXPECT_EQ(bytesAsInts(castTo(x, DataType::kInt4, 25)), (std::vector<int>{7, -8, 2, 4, -1}));
  EXPECT_EQ(bytesAsInts(castTo(x, DataType::kUInt4, 25)), (std::vector<int>{7, 8, 2, 4, 15}));
  EXPECT_EQ(bytesAsInts(castTo(x, DataType::kInt2, 25)), (std::vector<int>{-1, 0, -2, 0, -1}));
}

TEST(MoreCast, SubByteAndSmallFloatSources) {
  expectTensorNear(castTo(codes(DataType::kInt2, {3}, {0xFE, 0xFF, 0x01}), DataType::kFloat32, 25),
                   floatTensor({3}, {-2, -1, 1}), 0, 0);
  expectTensorNear(castTo(codes(DataType::kFp8E8M0, {2}, {125, 130}), DataType::kFloat32, 25),
                   floatTensor({2}, {0.25f, 8}), 0, 0);
  expectTensorNear(castTo(codes(DataType::kFloat4E2M1, {2}, {0x3, 0xD}), DataType::kFloat32, 25),
                   floatTensor({2}, {1.5f, -3}), 0, 0);
}

TEST(MoreCast, E8M0RoundModeAttribute) {
  OpTest t("Cast", 25);
  t.attr("to", int64_t{24})
      .attr("round_mode", std::string("down"))
      .input(floatTensor({2}, {3, 0.3f}));
  const Tensor y = runOk(t);
  EXPECT_EQ(y.data<uint8_t>()[0], 128);  // 3 -> 2
  EXPECT_EQ(y.data<uint8_t>()[1], 125);  // 0.3 -> 0.25
  OpTest bad("Cast", 25);
  bad.attr("to", int64_t{24})
      .attr("round_mode", std::string("sideways"))
      .input(floatTensor({1}, {3}));
  EXPECT_FALSE(bad.run().isOk());
}

TEST(MoreQuantize, Int2AndFloat4) {
  OpTest q("QuantizeLinear", 25);
  q.input(floatTensor({4}, {0, 2.5f, 9, -9}))
      .input(Tensor::scalarFloat(2))
      .input(codes(DataType::kInt2, {}, {0}));
  EXPECT_EQ(bytesAsInts(runOk(q)), (std::vector<int>{0, 1, 1, -2}));
  OpTest q4("QuantizeLinear", 25);
  q4.input(floatTensor({3}, {4.8f, -30, 1}))
      .input(Tensor::scalarFloat(2))
      .input(codes(DataType::kFloat4E2M1, {}, {0}));
  expectTensorNear(castTensor(runOk(q4), DataType::kFloat32), floatTensor({3}, {2, -6, 0.5f}), 0,
                   0);
  OpTest d("DequantizeLinear", 25);
  d.input(codes(DataType::kUInt2, {3}, {0, 1, 3}))
      .input(Tensor::scalarFloat(0.5f))
      .input(codes(DataType::kUInt2, {}, {1}));
  expectTensorNear(runOk(d), floatTensor({3}, {-0.5f, 0, 1}), 0, 0);
}

// ---- SpaceToDepth CRD ----

TEST(MoreShape, SpaceToDepthCrdKeepsChannelOutermost) {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = float(i);  // [1, 1, 4, 4]
  OpTest t("SpaceToDepth", 28);
  t.attr("blocksize", int64_t{2})
      .attr("mode", std::string("CRD"))
      .input(floatTensor({1, 1, 4, 4}, v));
  const Tensor y = runOk(t);
  ASSERT_EQ(y.shape(), (Shape{1, 4, 2, 2}));
  // Channel k = block offset (dy, dx) = (k / 2, k % 2).
  EXPECT_EQ(y.data<float>()[0], 0);
  EXPECT_EQ(y.data<float>()[4], 1);
  EXPECT_EQ(y.data<float>()[8], 4);
  EXPECT_EQ(y.data<float>()[15], 15);
  OpTest bad("SpaceToDepth", 28);
  bad.attr("blocksize", int64_t{2})
      .attr("mode", std::string("XYZ"))
      .input(floatTensor({1, 1, 4, 4}, v));
  EXPECT_FALSE(bad.run().isOk());
}

// ---- Losses ----

TEST(MoreLoss, NllMeanUsesWeightsAndIgnoreIndex) {
  // x [2, 3], targets {2, 0(ignored)}: loss = -x[0,2]*w2 / w2.
  OpTest t("NegativeLogLikelihoodLoss", 13);
  t.attr("ignore_index", int64_t{0})
      .input(floatTensor({2, 3}, {-1, -2, -3, -4, -5, -6}))
      .input(int64Tensor({2}, {2, 0}))
      .input(floatTensor({3}, {1, 1, 0.5f}));
  expectTensorNear(runOk(t), floatTensor({}, {3}), 1e-6, 0);
  OpTest none("NegativeLogLikelihoodLoss", 13);
  none.attr("reduction", std::string("none"))
      .input(floatTensor({2, 2}, {1, 2, 3, 4}))
      .input(int64Tensor({2}, {1, 0}));
  expectTensorNear(runOk(none), floatTensor({2}, {-2, -3}), 0, 0);
  OpTest bad("NegativeLogLikelihoodLoss", 13);
  bad.input(floatTensor({1, 2}, {1, 2})).input(int64Tensor({1}, {5}));
  EXPECT_FALSE(bad.run().isOk());
}

TEST(MoreLoss, SoftmaxCrossEntropyWithLogProb) {
  OpTest t("SoftmaxCrossEntropyLoss", 13);
  t.attr("reduction", std::string("sum"))
      .input(floatTensor({1, 2}, {0, 0}))
      .input(int64Tensor({1}, {1}));
  auto out = t.run(2);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  expectTensorNear(out.value()[0], floatTensor({}, {std::log(2.0f)}), 1e-6, 0);
  expectTensorNear(out.value()[1], floatTensor({1, 2}, {-std::log(2.0f), -std::log(2.0f)}), 1e-6,
                   0);
}

// ---- ReverseSequence, TensorScatter, BitCast, CumProd ----

TEST(MoreTensor, ReverseSequenceBatchMajor) {
  OpTest t("ReverseSequence", 10);
  t.attr("batch_axis", int64_t{0})
      .attr("time_axis", int64_t{1})
      .input(floatTensor({2, 3}, {1, 2, 3, 4, 5, 6}))
      .input(int64Tensor({2}, {3, 2}));
  expectTensorNear(runOk(t), floatTensor({2, 3}, {3, 2, 1, 5, 4, 6}), 0, 0);
  OpTest bad("ReverseSequence", 10);
  bad.attr("batch_axis", int64_t{0})
      .attr("time_axis", int64_t{1})
      .input(floatTensor({2, 3}, {1, 2, 3, 4, 5, 6}))
      .input(int64Tensor({2}, {4, 1}));
  EXPECT_FALSE(bad.run().isOk());
}

TEST(MoreTensor, TensorScatterLinearAndCircular) {
  const Tensor cache = floatTensor({2, 3, 1}, {0, 0, 0, 0, 0, 0});
  const Tensor update = floatTensor({2, 2, 1}, {1, 2, 3, 4});
  OpTest lin("TensorScatter", 24);
  lin.input(cache).input(update).input(int64Tensor({2}, {1, 0}));
  expectTensorNear(runOk(lin), floatTensor({2, 3, 1}, {0, 1, 2, 3, 4, 0}), 0, 0);
  OpTest circ("TensorScatter", 24);
  circ.attr("mode", std::string("circular"))
      .input(cache)
      .input(update)
      .input(int64Tensor({2}, {2, 0}));
  expectTensorNear(runOk(circ), floatTensor({2, 3, 1}, {2, 0, 1, 3, 4, 0}), 0, 0);
  OpTest overflow("TensorScatter", 24);
  overflow.input(cache).input(update).input(int64Tensor({2}, {2, 0}));
  EXPECT_FALSE(overflow.run().isOk());
  // A write index of INT64_MAX overflowed `start + seqLen` (linear) and `start + s`
  // (circular, where it is INT64_MAX % 3 = 1).
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  OpTest farLinear("TensorScatter", 24);
  farLinear.input(cache).input(update).input(int64Tensor({2}, {kMax, 0}));
  EXPECT_FALSE(farLinear.run().isOk());
  OpTest farCircular("TensorScatter", 24);
  farCircular.attr("mode", std::string("circular"))
      .input(cache)
      .input(update)
      .input(int64Tensor({2}, {kMax, 0}));
  expectTensorNear(runOk(farCircular), floatTensor({2, 3, 1}, {0, 1, 2, 3, 4, 0}), 0, 0);
}

TEST(MoreTensor, BitCastKeepsBits) {
  OpTest t("BitCast", 26);
  t.attr("to", int64_t{6}).input(floatTensor({2}, {1.0f, -2.5f}));
  const Tensor y = runOk(t);
  EXPECT_EQ(y.data<int32_t>()[0], 0x3F800000);
  EXPECT_EQ(y.data<int32_t>()[1], static_cast<int32_t>(0xC0200000u));
  OpTest wide("BitCast", 26);
  wide.attr("to", int64_t{7}).input(floatTensor({1}, {1}));
  EXPECT_FALSE(wide.run().isOk());
}

TEST(MoreTensor, CumProdExclusiveReverse) {
  OpTest t("CumProd", 26);
  t.attr("exclusive", int64_t{1})
      .attr("reverse", int64_t{1})
      .input(floatTensor({2, 3}, {1, 2, 3, 4, 5, 6}))
      .input(int64Tensor({}, {1}));
  expectTensorNear(runOk(t), floatTensor({2, 3}, {6, 3, 1, 30, 6, 1}), 0, 0);
  OpTest bad("CumProd", 26);
  bad.input(floatTensor({2}, {1, 2})).input(int64Tensor({}, {3}));
  EXPECT_FALSE(bad.run().isOk());
}

TEST(MoreTensor, OptionalOpsOnTensors) {
  OpTest has("OptionalHasElement", 18);
  has.input(floatTensor({1}, {1}));
  EXPECT_TRUE(runOk(has).data<bool>()[0]);
  OpTest empty("OptionalHasElement", 18);
  empty.missingInput();
  EXPECT_FALSE(runOk(empty).data<bool>()[0]);
  OpTest get("OptionalGetElement", 18);
  get.input(floatTensor({2}, {1, 2}));
  expectTensorNear(runOk(get), floatTensor({2}, {1, 2}), 0, 0);
  OpTest getEmpty("OptionalGetElement", 18);
  getEmpty.missingInput();
  EXPECT_FALSE(getEmpty.run().isOk());
}

// ---- Strings, TfIdfVectorizer ----

TEST(MoreText, StringSplitLikePython) {
  OpTest t("StringSplit", 20);
  t.attr("maxsplit", int64_t{1}).input(stringTensor({2}, {"  a  b c ", "x"}));
  auto out = t.run(2);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  ASSERT_EQ(out.value()[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(out.value()[0].strings(), (std::vector<std::string>{"a", "b c ", "x", ""}));
  EXPECT_EQ(out.value()[1].toInt64Vector(), (std::vector<int64_t>{2, 1}));
  OpTest d("StringSplit", 20);
  d.attr("delimiter", std::string("--")).input(stringTensor({1}, {"a----b"}));
  EXPECT_EQ(runOk(d, 2).strings(), (std::vector<std::string>{"a", "", "b"}));
}

TEST(MoreText, StringConcatBroadcastsAndRegexMatchesWhole) {
  OpTest c("StringConcat", 20);
  c.input(stringTensor({2}, {"a", "b"})).input(stringTensor({}, {"!"}));
  EXPECT_EQ(runOk(c).strings(), (std::vector<std::string>{"a!", "b!"}));
  OpTest r("RegexFullMatch", 20);
  r.attr("pattern", std::string("[a-z]+\\d")).input(stringTensor({3}, {"abc1", "abc12", "1"}));
  const Tensor m = runOk(r);
  EXPECT_TRUE(m.data<bool>()[0]);
  EXPECT_FALSE(m.data<bool>()[1]);
  EXPECT_FALSE(m.data<bool>()[2]);
  OpTest bad("RegexFullMatch", 20);
  bad.attr("pattern", std::string("(unclosed")).input(stringTensor({1}, {"x"}));
  EXPECT_FALSE(bad.run().isOk());
}

TEST(MoreText, TfIdfCountsUnigramsAndSkipBigrams) {
  OpTest t("TfIdfVectorizer", 9);
  t.attr("mode", std::string("TF"))
      .attr("min_gram_length", int64_t{1})
      .attr("max_gram_length", int64_t{2})
      .attr("max_skip_count", int64_t{1})
      .attr("ngram_counts", std::vector<int64_t>{0, 2})
      .attr("ngram_indexes", std::vector<int64_t>{0, 1, 2})
      .attr("pool_int64s", std::vector<int64_t>{5, 7, 5, 7})
      .input(Tensor::fromVector(DataType::kInt32, {5}, std::vector<int32_t>{5, 9, 7, 5, 7}));
  // Unigrams 5 and 7 twice each; bigram (5, 7) adjacent at 3-4 and with one skip at 0-2.
  expectTensorNear(runOk(t), floatTensor({3}, {2, 2, 2}), 0, 0);
  OpTest bad("TfIdfVectorizer", 9);
  bad.attr("mode", std::string("BM25"))
      .attr("min_gram_length", int64_t{1})
      .attr("max_gram_length", int64_t{1})
      .attr("ngram_counts", std::vector<int64_t>{0})
      .attr("ngram_indexes", std::vector<int64_t>{0})
      .attr("pool_int64s", std::vector<int64_t>{1})
      .input(int64Tensor({1}, {1}));
  EXPECT_FALSE(bad.run().isOk());
}

// ---- AffineGrid, DeformConv ----

TEST(MoreVision, AffineGridIdentity2D) {
  OpTest t("AffineGrid", 20);
  t.attr("align_corners", int64_t{1})
      .input(floatTensor({1, 2, 3}, {1, 0, 0, 0, 1, 0}))
      .input(int64Tensor({4}, {1, 1, 2, 2}));
  expectTensorNear(runOk(t), floatTensor({1, 2, 2, 2}, {-1, -1, 1, -1, -1, 1, 1, 1}), 1e-6, 0);
  OpTest shifted("AffineGrid", 20);
  shifted.input(floatTensor({1, 2, 3}, {1, 0, 0.5f, 0, 1, 0}))
      .input(int64Tensor({4}, {1, 1, 1, 2}));
  expectTensorNear(runOk(shifted), floatTensor({1, 1, 2, 2}, {0, 0, 1, 0}), 1e-6, 0);
  OpTest bad("AffineGrid", 20);
  bad.input(floatTensor({1, 3, 4}, std::vector<float>(12, 0)))
      .input(int64Tensor({4}, {1, 1, 2, 2}));
  EXPECT_FALSE(bad.run().isOk());
}

TEST(MoreVision, DeformConvSamplesAtOffsets) {
  // X 1x1x2x2, W 1x1x1x1 = 2: out[i, j] = 2 * X at (i + dy, j + dx).
  const Tensor x = floatTensor({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor w = floatTensor({1, 1, 1, 1}, {2});
  OpTest zero("DeformConv", 19);
  zero.input(x).input(w).input(floatTensor({1, 2, 2, 2}, std::vector<float>(8, 0)));
  expectTensorNear(runOk(zero), floatTensor({1, 1, 2, 2}, {2, 4, 6, 8}), 1e-6, 0);
  // dx = 0.5 everywhere: halfway to the right neighbour, which is zero past the edge.
  OpTest half("DeformConv", 19);
  half.input(x)
      .input(w)
      .input(floatTensor({1, 2, 2, 2}, {0, 0, 0, 0, 0.5f, 0.5f, 0.5f, 0.5f}))
      .input(floatTensor({1}, {1}))
      .input(floatTensor({1, 1, 2, 2}, {1, 1, 1, 0.5f}));
  // Samples 1.5, 1, 3.5, 2; times W = 2, times the mask, plus the bias 1.
  expectTensorNear(runOk(half), floatTensor({1, 1, 2, 2}, {4, 3, 8, 3}), 1e-6, 0);
  OpTest bad("DeformConv", 19);
  bad.input(x).input(w).input(floatTensor({1, 4, 2, 2}, std::vector<float>(16, 0)));
  EXPECT_FALSE(bad.run().isOk());
}

TEST(MoreVision, DeformConvHugeOffsetGroupIsAnError) {
  // No input channels are divisible by any offset_group: INT64_MAX overflowed
  // offset_group * taps * 2.
  OpTest op("DeformConv", 19);
  op.attr("offset_group", std::numeric_limits<int64_t>::max())
      .input(Tensor(DataType::kFloat32, {1, 0, 2, 2}))
      .input(Tensor(DataType::kFloat32, {1, 0, 1, 1}))
      .input(floatTensor({1, 2, 2, 2}, std::vector<float>(8, 0)));
  EXPECT_FALSE(op.run().isOk());
}

// ---- Swish, SwiGLU ----

TEST(MoreActivations, SwishAndSwiGlu) {
  OpTest s("Swish", 24);
  s.attr("alpha", 2.0f).input(floatTensor({2}, {0, 1}));
  expectTensorNear(runOk(s), floatTensor({2}, {0, 1.0f / (1.0f + std::exp(-2.0f))}), 1e-6, 0);
  OpTest g("SwiGLU", 28);
  g.input(floatTensor({2}, {1, -1})).input(floatTensor({2}, {2, 3}));
  const float s1 = 1.0f / (1.0f + std::exp(-1.0f));
  expectTensorNear(runOk(g), floatTensor({2}, {2 * s1, -3 * (1 - s1)}), 1e-6, 0);
  OpTest bad("SwiGLU", 28);
  bad.input(floatTensor({2}, {1, 2})).input(floatTensor({1}, {1}));
  EXPECT_FALSE(bad.run().isOk());
}

// ---- ai.onnx.ml ----

TEST(MoreMl, BinarizerAndArrayFeatureExtractor) {
  OpTest b("Binarizer", 1, kMl);
  b.attr("threshold", 0.5f).input(floatTensor({3}, {0.2f, 0.5f, 0.7f}));
  expectTensorNear(runOk(b), floatTensor({3}, {0, 0, 1}), 0, 0);
  OpTest a("ArrayFeatureExtractor", 1, kMl);
  a.input(floatTensor({2, 3}, {1, 2, 3, 4, 5, 6})).input(int64Tensor({2}, {2, 0}));
  expectTensorNear(runOk(a), floatTensor({2, 2}, {3, 1, 6, 4}), 0, 0);
  OpTest bad("ArrayFeatureExtractor", 1, kMl);
  bad.input(floatTensor({3}, {1, 2, 3})).input(int64Tensor({1}, {3}));
  EXPECT_FALSE(bad.run().isOk());
}

TEST(MoreMl, LabelEncoderListsAndTensors) {
  OpTest t("LabelEncoder", 4, kMl);
  setStringsAttr(t, "keys_strings", {"a", "b"});
  t.attr("values_int64s", std::vector<int64_t>{10, 20}).input(stringTensor({3}, {"b", "z", "a"}));
  EXPECT_EQ(runOk(t).toInt64Vector(), (std::vector<int64_t>{20, -1, 10}));
  OpTest tensors("LabelEncoder", 4, kMl);
  setTensorAttr(tensors, "keys_tensor", int64Tensor({2}, {3, 4}));
  setTensorAttr(tensors, "values_tensor", floatTensor({2}, {0.5f, 1.5f}));
  setTensorAttr(tensors, "default_tensor", floatTensor({1}, {9}));
  tensors.input(int64Tensor({3}, {4, 5, 3}));
  expectTensorNear(runOk(tensors), floatTensor({3}, {1.5f, 9, 0.5f}), 0, 0);
  OpTest v1("LabelEncoder", 1, kMl);
  setStringsAttr(v1, "classes_strings", {"x", "y"});
  v1.input(int64Tensor({2}, {1, 7}));
  EXPECT_EQ(runOk(v1).strings(), (std::vector<std::string>{"y", "_Unused"}));
  OpTest mismatch("LabelEncoder", 4, kMl);
  setStringsAttr(mismatch, "keys_strings", {"a"});
  mismatch.attr("values_int64s", std::vector<int64_t>{1}).input(int64Tensor({1}, {1}));
  EXPECT_FALSE(mismatch.run().isOk());
}

TEST(MoreMl, TreeEnsembleSumsLeavesAndAppliesLogistic) {
  // One tree: X[0] <= 1 ? leaf 0 (target 0, +2) : leaf 1 (target 1, -1); two copies of it.
  auto makeTree = [](OpTest& t) {
    t.attr("nodes_featureids", std::vector<int64_t>{0, 0})
        .attr("nodes_truenodeids", std::vector<int64_t>{0, 0})
        .attr("nodes_trueleafs", std::vector<int64_t>{1, 1})
        .attr("nodes_falsenodeids", std::vector<int64_t>{1, 1})
        .attr("nodes_falseleafs", std::vector<int64_t>{1, 1})
        .attr("leaf_targetids", std::vector<int64_t>{0, 1})
        .attr("tree_roots", std::vector<int64_t>{0, 1})
        .attr("n_targets", int64_t{2});
    setTensorAttr(t, "nodes_splits", floatTensor({2}, {1, 1}));
    setTensorAttr(t, "nodes_modes",
                  Tensor::fromVector(DataType::kUInt8, {2}, std::vector<uint8_t>{0, 0}));
    setTensorAttr(t, "leaf_weights", floatTensor({2}, {2, -1}));
  };
  OpTest sum("TreeEnsemble", 5, kMl);
  makeTree(sum);
  sum.input(floatTensor({2, 1}, {0.5f, 3}));
  expectTensorNear(runOk(sum), floatTensor({2, 2}, {4, 0, 0, -2}), 0, 0);
  OpTest logistic("TreeEnsemble", 5, kMl);
  makeTree(logistic);
  logistic.attr("post_transform", int64_t{2})
      .attr("aggregate_function", int64_t{0})
      .input(floatTensor({1, 1}, {0}));
  expectTensorNear(runOk(logistic), floatTensor({1, 2}, {1 / (1 + std::exp(-2.0f)), 0.5f}), 1e-6,
                   0);
  OpTest bad("TreeEnsemble", 5, kMl);
  makeTree(bad);
  bad.attr("nodes_featureids", std::vector<int64_t>{0, 4}).input(floatTensor({1, 1}, {0}));
  EXPECT_FALSE(bad.run().isOk());
  // n_targets 2^62 sized the score buffer before the output was checked; a NaN mode was
  // cast to int64.
  OpTest manyTargets("TreeEnsemble", 5, kMl);
  makeTree(manyTargets);
  manyTargets.attr("n_targets", int64_t{1} << 62).input(floatTensor({1, 1}, {0}));
  EXPECT_FALSE(manyTargets.run().isOk());
  OpTest nanMode("TreeEnsemble", 5, kMl);
  makeTree(nanMode);
  setTensorAttr(nanMode, "nodes_modes", floatTensor({2}, {0, std::nanf("")}));
  nanMode.input(floatTensor({1, 1}, {0}));
  const Status nanStatus = nanMode.run().status();
  EXPECT_FALSE(nanStatus.isOk());
  EXPECT_NE(nanStatus.message().find("nodes_modes[1]"), std::string::npos) << nanStatus.message();
}

// ---- Scan-8 (the body is simulated: state + x, emitted as the scan output) ----

TEST(MoreControlFlow, ScanV8RunsEachBatchEntryForItsLength) {
  Node node;
  node.opType = "Scan";
  node.opset = 8;
  node.inputs = {"lens", "init", "x"};
  node.outputs = {"final", "partial"};
  Attribute body;
  body.kind = Attribute::Kind::kGraph;
  body.g = std::make_shared<Graph>();
  body.g->outputs.resize(2);
  node.attributes["body"] = body;
  Attribute numScan;
  numScan.i = 1;
  node.attributes["num_scan_inputs"] = numScan;
  const Tensor lens = int64Tensor({2}, {2, 1});
  const Tensor init = floatTensor({2, 1}, {0, 100});
  const Tensor x = floatTensor({2, 2, 1}, {1, 2, 3, 4});
  cpu::SubgraphRunner add = [](const Graph&, const std::vector<Tensor>& in,
                               std::vector<Tensor>* out) {
    Tensor s = floatTensor({1}, {in[0].data<float>()[0] + in[1].data<float>()[0]});
    *out = {s, s};
    return Status::ok();
  };
  cpu::KernelContext ctx(node, {&lens, &init, &x}, add);
  const cpu::KernelEntry* entry = cpu::builtinKernels().find("", "Scan", 8);
  ASSERT_NE(entry, nullptr);
  ASSERT_TRUE(entry->fn(ctx).isOk());
  expectTensorNear(ctx.outputs()[0], floatTensor({2, 1}, {3, 103}), 0, 0);
  expectTensorNear(ctx.outputs()[1], floatTensor({2, 2, 1}, {1, 3, 103, 0}), 0, 0);
  const Tensor badLens = int64Tensor({2}, {3, 1});
  cpu::KernelContext badCtx(node, {&badLens, &init, &x}, add);
  EXPECT_FALSE(entry->fn(badCtx).isOk());
  // num_scan_inputs outside [1, inputs after sequence_lens] is a clean error; INT64_MIN
  // overflowed the state count's subtraction (UBSan, found by fuzz_onnx_import).
  for (int64_t hostile : {std::numeric_limits<int64_t>::min(), int64_t{0}, int64_t{3}}) {
    node.attributes["num_scan_inputs"].i = hostile;
    cpu::KernelContext hostileCtx(node, {&lens, &init, &x}, add);
    const Status s = entry->fn(hostileCtx);
    ASSERT_FALSE(s.isOk()) << hostile;
    EXPECT_NE(s.message().find("num_scan_inputs"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace kiln::test
