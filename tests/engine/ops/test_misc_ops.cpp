// Tests for the misc_ops op family (Dropout, Det, NMS, RoiAlign, GridSample, Col2Im,
// random generators, StringNormalizer, optimizers, DFT/STFT, windows, mel matrix):
// hand-computed values on small inputs plus error cases. See tests/support/op_test.h.
#include <cmath>
#include <complex>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "kiln/reference_backend.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

Tensor boolScalar(bool v) {
  return Tensor::fromVector(DataType::kBool, {}, std::vector<uint8_t>{v});
}

std::vector<float> floats(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// ---- Dropout, Det ----

TEST(MiscOps, DropoutInferenceIsIdentityWithTrueMask) {
  auto out = OpTest("Dropout", 13).input(floatTensor({3}, {1.f, -2.f, 3.f})).run(2);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  expectTensorNear(out.value()[0], floatTensor({3}, {1.f, -2.f, 3.f}), 0, 0);
  ASSERT_EQ(out.value()[1].type(), DataType::kBool);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(out.value()[1].data<bool>()[i]);
}

TEST(MiscOps, DropoutTrainingScalesKeptElements) {
  const Tensor x = floatTensor({64}, std::vector<float>(64, 3.f));
  auto out = OpTest("Dropout", 13)
                 .attr("seed", int64_t{7})
                 .input(x)
                 .input(Tensor::scalarFloat(0.5f))
                 .input(boolScalar(true))
                 .run(2);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  int kept = 0;
  for (int i = 0; i < 64; ++i) {
    const bool keep = out.value()[1].data<bool>()[i];
    EXPECT_FLOAT_EQ(out.value()[0].data<float>()[i], keep ? 6.f : 0.f);
    kept += keep;
  }
  EXPECT_GT(kept, 10);
  EXPECT_LT(kept, 54);
}

TEST(MiscOps, DropoutRejectsRatioAboveOne) {
  auto out = OpTest("Dropout", 13)
                 .input(floatTensor({2}, {1.f, 2.f}))
                 .input(Tensor::scalarFloat(1.5f))
                 .input(boolScalar(true))
                 .run();
  EXPECT_FALSE(out.isOk());
}

TEST(MiscOps, DetOfBatchedMatrices) {
  const Tensor x = floatTensor({3, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0, 2, 0, 0, 5});
  auto out = OpTest("Det", 11).input(x).run();
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  expectTensorNear(out.value()[0], floatTensor({3}, {-2.f, -1.f, 10.f}), 1e-6, 1e-6);
  auto det3 = OpTest("Det", 11).input(floatTensor({3, 3}, {2, 0, 1, 1, 3, 2, 1, 1, 2})).run();
  ASSERT_TRUE(det3.isOk());
  expectTensorNear(det3.value()[0], floatTensor({}, {6.f}), 1e-5, 1e-5);
  EXPECT_FALSE(OpTest("Det", 11).input(floatTensor({2, 3}, {1, 2, 3, 4, 5, 6})).run().isOk());
}

// ---- NonMaxSuppression, RoiAlign ----

Tensor nmsBoxes() {
  // Box 1 overlaps box 0 with IoU 0.82; box 2 is far away.
  return floatTensor({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 5, 1, 6});
}

TEST(MiscOps, NonMaxSuppressionDropsOverlaps) {
  auto out = OpTest("NonMaxSuppression", 11)
                 .input(nmsBoxes())
                 .input(floatTensor({1, 1, 3}, {0.9f, 0.8f, 0.7f}))
                 .input(int64Tensor({1}, {3}))
                 .input(floatTensor({1}, {0.5f}))
                 .run();
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  const Tensor& sel = out.value()[0];
  ASSERT_EQ(sel.shape(), (Shape{2, 3}));
  EXPECT_EQ(sel.toInt64Vector(), (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));
}

TEST(MiscOps, NonMaxSuppressionScoreThresholdAndErrors) {
  auto out = OpTest("NonMaxSuppression", 11)
                 .input(nmsBoxes())
                 .input(floatTensor({1, 1, 3}, {0.9f, 0.8f, 0.7f}))
                 .input(int64Tensor({1}, {3}))
                 .input(floatTensor({1}, {0.5f}))
                 .input(floatTensor({1}, {0.75f}))
                 .run();
  ASSERT_TRUE(out.isOk());
  EXPECT_EQ(out.value()[0].toInt64Vector(), (std::vector<int64_t>{0, 0, 0}));
  auto bad = OpTest("NonMaxSuppression", 11)
                 .input(floatTensor({1, 1, 3}, {0, 0, 1}))
                 .input(floatTensor({1, 1, 1}, {0.9f}))
                 .run();
  EXPECT_FALSE(bad.isOk());
}

TEST(MiscOps, RoiAlignAveragesBilinearSamples) {
  const Tensor x = floatTensor({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor rois = floatTensor({1, 4}, {0, 0, 1, 1});
  auto shifted = OpTest("RoiAlign", 16)
                     .attr("sampling_ratio", int64_t{1})
                     .attr("coordinate_transformation_mode", std::string("output_half_pixel"))
                     .input(x)
                     .input(rois)
                     .input(int64Tensor({1}, {0}))
                     .run();
  ASSERT_TRUE(shifted.isOk()) << shifted.status().toString();
  expectTensorNear(shifted.value()[0], floatTensor({1, 1, 1, 1}, {2.5f}), 1e-6, 1e-6);
  // half_pixel moves the roi by -0.5: the single sample lands on pixel (0, 0).
  auto half = OpTest("RoiAlign", 16)
                  .attr("sampling_ratio", int64_t{1})
                  .input(x)
                  .input(rois)
                  .input(int64Tensor({1}, {0}))
                  .run();
  ASSERT_TRUE(half.isOk());
  expectTensorNear(half.value()[0], floatTensor({1, 1, 1, 1}, {1.f}), 1e-6, 1e-6);
  auto bad = OpTest("RoiAlign", 16).input(x).input(rois).input(int64Tensor({1}, {1})).run();
  EXPECT_FALSE(bad.isOk());
}

// ---- GridSample, Col2Im ----

TEST(MiscOps, GridSampleLinearAlignCorners) {
  const Tensor x = floatTensor({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor grid = floatTensor({1, 1, 3, 2}, {0, 0, -1, -1, 1, -1});
  auto out = OpTest("GridSample", 16).attr("align_corners", int64_t{1}).input(x).input(grid).run();
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  expectTensorNear(out.value()[0], floatTensor({1, 1, 1, 3}, {2.5f, 1.f, 2.f}), 1e-6, 1e-6);
}

TEST(MiscOps, GridSamplePaddingModesAndNearest) {
  const Tensor x = floatTensor({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor outside = floatTensor({1, 1, 1, 2}, {-2, 0});  // half a pixel left of column 0
  auto zeros =
      OpTest("GridSample", 20).attr("align_corners", int64_t{1}).input(x).input(outside).run();
  ASSERT_TRUE(zeros.isOk()) << zeros.status().toString();
  expectTensorNear(zeros.value()[0], floatTensor({1, 1, 1, 1}, {1.f}), 1e-6, 1e-6);
  auto border = OpTest("GridSample", 20)
                    .attr("align_corners", int64_t{1})
                    .attr("padding_mode", std::string("border"))
                    .input(x)
                    .input(outside)
                    .run();
  ASSERT_TRUE(border.isOk());
  expectTensorNear(border.value()[0], floatTensor({1, 1, 1, 1}, {2.f}), 1e-6, 1e-6);
  auto nearest = OpTest("GridSample", 20)
                     .attr("mode", std::string("nearest"))
                     .input(x)
                     .input(floatTensor({1, 1, 1, 2}, {-0.5f, 0.5f}))
                     .run();
  ASSERT_TRUE(nearest.isOk());
  expectTensorNear(nearest.value()[0], floatTensor({1, 1, 1, 1}, {3.f}), 0, 0);
  auto bad = OpTest("GridSample", 20).input(x).input(floatTensor({1, 1, 1, 3}, {0, 0, 0})).run();
  EXPECT_FALSE(bad.isOk());
}

TEST(MiscOps, Col2ImSumsOverlappingBlocks) {
  // Image 1x3, block 1x2, stride 1: two blocks overlap on the middle pixel.
  const Tensor cols = floatTensor({1, 2, 2}, {1, 2, 10, 20});
  auto out = OpTest("Col2Im", 18)
                 .input(cols)
                 .input(int64Tensor({2}, {1, 3}))
                 .input(int64Tensor({2}, {1, 2}))
                 .run();
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  expectTensorNear(out.value()[0], floatTensor({1, 1, 1, 3}, {1, 12, 20}), 0, 0);
  auto bad = OpTest("Col2Im", 18)
                 .input(floatTensor({1, 2, 3}, {1, 2, 3, 4, 5, 6}))
                 .input(int64Tensor({2}, {1, 3}))
                 .input(int64Tensor({2}, {1, 2}))
                 .run();
  EXPECT_FALSE(bad.isOk());
}

// ---- Random generators ----

TEST(MiscOps, Col2ImHugeDilationIsAnError) {
  // dilation * (block - 1) + 1 overflowed int64 for a dilation of INT64_MAX.
  auto out = OpTest("Col2Im", 18)
                 .attr("dilations", std::vector<int64_t>{1, std::numeric_limits<int64_t>::max()})
                 .input(floatTensor({1, 2, 2}, {1, 2, 10, 20}))
                 .input(int64Tensor({2}, {1, 3}))
                 .input(int64Tensor({2}, {1, 2}))
                 .run();
  EXPECT_FALSE(out.isOk());
}

TEST(MiscOps, RandomUniformIsSeededAndInRange) {
  auto run = [] {
    return OpTest("RandomUniform", 1)
        .attr("shape", std::vector<int64_t>{2, 3})
        .attr("low", 2.f)
        .attr("high", 3.f)
        .attr("seed", 4.f)
        .run();
  };
  auto a = run(), b = run();
  ASSERT_TRUE(a.isOk()) << a.status().toString();
  ASSERT_EQ(a.value()[0].shape(), (Shape{2, 3}));
  for (float v : floats(a.value()[0])) {
    EXPECT_GE(v, 2.f);
    EXPECT_LT(v, 3.f);
  }
  EXPECT_EQ(floats(a.value()[0]), floats(b.value()[0]));
}

// Seeded generators reproduce numpy's RandomState, as the ONNX reference does:
// RandomState(0).rand(2) and RandomState(0).randn(2).
TEST(MiscOps, SeededRandomMatchesNumpyStream) {
  auto uniform = OpTest("RandomUniform", 1)
                     .attr("shape", std::vector<int64_t>{2})
                     .attr("dtype", int64_t{11})
                     .attr("seed", 0.f)
                     .run();
  ASSERT_TRUE(uniform.isOk()) << uniform.status().toString();
  expectTensorNear(uniform.value()[0],
                   Tensor::fromVector(DataType::kFloat64, {2},
                                      std::vector<double>{0.5488135039273248, 0.7151893663724195}),
                   1e-15, 0);
  auto normal = OpTest("RandomNormal", 1)
                    .attr("shape", std::vector<int64_t>{2})
                    .attr("dtype", int64_t{11})
                    .attr("seed", 0.f)
                    .run();
  ASSERT_TRUE(normal.isOk());
  expectTensorNear(normal.value()[0],
                   Tensor::fromVector(DataType::kFloat64, {2},
                                      std::vector<double>{1.764052345967664, 0.4001572083672233}),
                   1e-14, 0);
}

TEST(MiscOps, RandomNormalLikeTakesShapeAndDtype) {
  auto out = OpTest("RandomNormalLike", 1)
                 .attr("dtype", int64_t{11})
                 .attr("seed", 1.f)
                 .input(int64Tensor({4}, {0, 0, 0, 0}))
                 .run();
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(out.value()[0].type(), DataType::kFloat64);
  EXPECT_EQ(out.value()[0].shape(), (Shape{4}));
  // Without dtype, an integer input has no float type to copy.
  EXPECT_FALSE(OpTest("RandomNormalLike", 1).input(int64Tensor({1}, {0})).run().isOk());
}

TEST(MiscOps, BernoulliWithCertainProbabilities) {
  auto out =
      OpTest("Bernoulli", 15).attr("dtype", int64_t{7}).input(floatTensor({4}, {0, 1, 0, 1})).run();
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(out.value()[0].toInt64Vector(), (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_FALSE(OpTest("Bernoulli", 15).input(floatTensor({1}, {1.5f})).run().isOk());
}

TEST(MiscOps, MultinomialPicksTheOnlyLikelyClass) {
  auto out = OpTest("Multinomial", 7)
                 .attr("sample_size", int64_t{5})
                 .input(floatTensor({1, 3}, {-1000.f, 0.f, -1000.f}))
                 .run();
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(out.value()[0].type(), DataType::kInt32);
  EXPECT_EQ(out.value()[0].toInt64Vector(), (std::vector<int64_t>(5, 1)));
}

// ---- StringNormalizer ----

TEST(MiscOps, StringNormalizerRemovesStopwordsAndChangesCase) {
  OpTest op("StringNormalizer", 10);
  op.attr("case_change_action", std::string("UPPER"));
  Attribute stops;
  stops.kind = Attribute::Kind::kStrings;
  stops.strings = {"monday"};
  op.node().attributes["stopwords"] = stops;
  auto out = op.input(stringTensor({1, 3}, {"Monday", "tuesday", "\xC3\xA9t\xC3\xA9"})).run();
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(out.value()[0].shape(), (Shape{1, 2}));
  EXPECT_EQ(out.value()[0].strings(), (std::vector<std::string>{"TUESDAY", "\xC3\x89T\xC3\x89"}));
  auto bad = OpTest("StringNormalizer", 10).input(stringTensor({2, 1}, {"a", "b"})).run();
  EXPECT_FALSE(bad.isOk());
}

// ---- Optimizers (ai.onnx.preview.training) ----

const char kTraining[] = "ai.onnx.preview.training";

TEST(MiscOps, AdagradStep) {
  auto out = OpTest("Adagrad", 1, kTraining)
                 .input(Tensor::scalarFloat(0.1f))
                 .input(Tensor::scalarInt64(0))
                 .input(floatTensor({1}, {1.f}))
                 .input(floatTensor({1}, {0.5f}))
                 .input(floatTensor({1}, {0.f}))
                 .run(2);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  expectTensorNear(out.value()[0], floatTensor({1}, {0.9f}), 1e-6, 1e-6);
  expectTensorNear(out.value()[1], floatTensor({1}, {0.25f}), 1e-6, 1e-6);
}

TEST(MiscOps, MomentumStandardAndNesterov) {
  auto run = [](const std::string& mode) {
    return OpTest("Momentum", 1, kTraining)
        .attr("alpha", 0.5f)
        .attr("beta", 0.5f)
        .attr("mode", mode)
        .attr("norm_coefficient", 0.f)
        .input(Tensor::scalarFloat(0.1f))
        .input(Tensor::scalarInt64(1))
        .input(floatTensor({1}, {1.f}))
        .input(floatTensor({1}, {2.f}))
        .input(floatTensor({1}, {1.f}))
        .run(2);
  };
  auto standard = run("standard");
  ASSERT_TRUE(standard.isOk()) << standard.status().toString();
  expectTensorNear(standard.value()[0], floatTensor({1}, {0.85f}), 1e-6, 1e-6);
  expectTensorNear(standard.value()[1], floatTensor({1}, {1.5f}), 1e-6, 1e-6);
  auto nesterov = run("nesterov");
  ASSERT_TRUE(nesterov.isOk());
  expectTensorNear(nesterov.value()[0], floatTensor({1}, {0.725f}), 1e-6, 1e-6);
}

TEST(MiscOps, AdamStepAndInputCountError) {
  auto out = OpTest("Adam", 1, kTraining)
                 .attr("alpha", 0.5f)
                 .attr("beta", 0.5f)
                 .input(Tensor::scalarFloat(0.1f))
                 .input(Tensor::scalarInt64(0))
                 .input(floatTensor({1}, {1.f}))
                 .input(floatTensor({1}, {1.f}))
                 .input(floatTensor({1}, {0.f}))
                 .input(floatTensor({1}, {0.f}))
                 .run(3);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  expectTensorNear(out.value()[0], floatTensor({1}, {1.f - 0.1f * 0.5f / std::sqrt(0.5f)}), 1e-6,
                   1e-6);
  expectTensorNear(out.value()[1], floatTensor({1}, {0.5f}), 1e-6, 1e-6);
  expectTensorNear(out.value()[2], floatTensor({1}, {0.5f}), 1e-6, 1e-6);
  auto bad = OpTest("Adam", 1, kTraining)
                 .input(Tensor::scalarFloat(0.1f))
                 .input(Tensor::scalarInt64(0))
                 .input(floatTensor({1}, {1.f}))
                 .input(floatTensor({1}, {1.f}))
                 .input(floatTensor({1}, {0.f}))
                 .run(3);
  EXPECT_FALSE(bad.isOk());
}

// ---- DFT, STFT ----

TEST(MiscOps, DftForwardInverseAndOnesided) {
  const Tensor x = floatTensor({1, 4, 1}, {1, 2, 3, 4});
  const Tensor spectrum = floatTensor({1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2});
  auto forward = OpTest("DFT", 17).input(x).run();
  ASSERT_TRUE(forward.isOk()) << forward.status().toString();
  expectTensorNear(forward.value()[0], spectrum, 1e-5, 1e-5);
  auto inverse = OpTest("DFT", 20)
                     .attr("inverse", int64_t{1})
                     .input(spectrum)
                     .missingInput()
                     .input(Tensor::scalarInt64(1))
                     .run();
  ASSERT_TRUE(inverse.isOk()) << inverse.status().toString();
  expectTensorNear(inverse.value()[0], floatTensor({1, 4, 2}, {1, 0, 2, 0, 3, 0, 4, 0}), 1e-5,
                   1e-5);
  auto onesided = OpTest("DFT", 20).attr("onesided", int64_t{1}).input(x).run();
  ASSERT_TRUE(onesided.isOk());
  expectTensorNear(onesided.value()[0], floatTensor({1, 3, 2}, {10, 0, -2, 2, -2, 0}), 1e-5, 1e-5);
  // The inverse of a one-sided spectrum is the real signal again.
  auto real = OpTest("DFT", 20)
                  .attr("inverse", int64_t{1})
                  .attr("onesided", int64_t{1})
                  .input(onesided.value()[0])
                  .run();
  ASSERT_TRUE(real.isOk()) << real.status().toString();
  expectTensorNear(real.value()[0], floatTensor({1, 4, 1}, {1, 2, 3, 4}), 1e-5, 1e-5);
  // An odd length needs dft_length: the default rebuilds 2 * (bins - 1) samples.
  const Tensor odd = floatTensor({1, 5, 1}, {1, -2, 3, 5, 0.5f});
  auto oddSpectrum = OpTest("DFT", 20).attr("onesided", int64_t{1}).input(odd).run();
  ASSERT_TRUE(oddSpectrum.isOk());
  auto oddBack = OpTest("DFT", 20)
                     .attr("inverse", int64_t{1})
                     .attr("onesided", int64_t{1})
                     .input(oddSpectrum.value()[0])
                     .input(Tensor::scalarInt64(5))
                     .run();
  ASSERT_TRUE(oddBack.isOk()) << oddBack.status().toString();
  expectTensorNear(oddBack.value()[0], odd, 1e-5, 1e-5);
  EXPECT_FALSE(
      OpTest("DFT", 20).input(floatTensor({1, 4, 3}, std::vector<float>(12, 1.f))).run().isOk());
}

// The mixed-radix FFT against a direct O(n^2) DFT, for smooth and prime lengths.
TEST(MiscOps, DftMatchesDirectSumForAnyLength) {
  for (int64_t n : {6, 7, 12, 25, 31}) {
    const Tensor x = randomTensor(DataType::kFloat32, {1, n, 2}, static_cast<uint32_t>(n));
    std::vector<float> expected;
    for (int64_t k = 0; k < n; ++k) {
      std::complex<double> sum;
      for (int64_t j = 0; j < n; ++j) {
        const std::complex<double> v(x.data<float>()[2 * j], x.data<float>()[2 * j + 1]);
        sum += v * std::polar(1.0, -2.0 * M_PI * double(j * k) / double(n));
      }
      expected.push_back(static_cast<float>(sum.real()));
      expected.push_back(static_cast<float>(sum.imag()));
    }
    auto out = OpTest("DFT", 17).input(x).run();
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    expectTensorNear(out.value()[0], floatTensor({1, n, 2}, expected), 1e-4, 1e-4);
  }
}

TEST(MiscOps, StftFramesWithoutWindow) {
  const Tensor signal = floatTensor({1, 4, 1}, {1, 2, 3, 4});
  auto out = OpTest("STFT", 17)
                 .input(signal)
                 .input(Tensor::scalarInt64(2))
                 .missingInput()
                 .input(Tensor::scalarInt64(2))
                 .run();
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  expectTensorNear(out.value()[0], floatTensor({1, 2, 2, 2}, {3, 0, -1, 0, 7, 0, -1, 0}), 1e-5,
                   1e-5);
  auto bad = OpTest("STFT", 17)
                 .input(signal)
                 .input(Tensor::scalarInt64(0))
                 .missingInput()
                 .input(Tensor::scalarInt64(2))
                 .run();
  EXPECT_FALSE(bad.isOk());
}

// ---- Windows, MelWeightMatrix ----

TEST(MiscOps, WindowFunctions) {
  auto hann = OpTest("HannWindow", 17).input(Tensor::scalarInt64(4)).run();
  ASSERT_TRUE(hann.isOk()) << hann.status().toString();
  expectTensorNear(hann.value()[0], floatTensor({4}, {0, 0.5f, 1, 0.5f}), 1e-6, 1e-6);
  auto symmetric =
      OpTest("HannWindow", 17).attr("periodic", int64_t{0}).input(Tensor::scalarInt64(3)).run();
  ASSERT_TRUE(symmetric.isOk());
  expectTensorNear(symmetric.value()[0], floatTensor({3}, {0, 1, 0}), 1e-6, 1e-6);
  auto hamming = OpTest("HammingWindow", 17).input(Tensor::scalarInt64(4)).run();
  ASSERT_TRUE(hamming.isOk());
  expectTensorNear(hamming.value()[0], floatTensor({4}, {4.f / 46, 25.f / 46, 1, 25.f / 46}), 1e-6,
                   1e-6);
  auto blackman = OpTest("BlackmanWindow", 17)
                      .attr("output_datatype", int64_t{11})
                      .input(Tensor::scalarInt64(4))
                      .run();
  ASSERT_TRUE(blackman.isOk());
  expectTensorNear(
      blackman.value()[0],
      Tensor::fromVector(DataType::kFloat64, {4}, std::vector<double>{0, 0.34, 1, 0.34}), 1e-12,
      1e-12);
  EXPECT_FALSE(OpTest("HannWindow", 17).input(Tensor::scalarInt64(-1)).run().isOk());
}

TEST(MiscOps, MelWeightMatrixTriangles) {
  auto out = OpTest("MelWeightMatrix", 17)
                 .input(Tensor::scalarInt64(3))
                 .input(Tensor::scalarInt64(16))
                 .input(Tensor::scalarInt64(16000))
                 .input(Tensor::scalarFloat(100.f))
                 .input(Tensor::scalarFloat(7000.f))
                 .run();
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  std::vector<float> expected(9 * 3, 0.f);
  expected[0 * 3 + 0] = 1;
  expected[1 * 3 + 1] = 1;
  expected[2 * 3 + 2] = 1;
  expected[3 * 3 + 2] = 0.5f;
  expectTensorNear(out.value()[0], floatTensor({9, 3}, expected), 1e-6, 1e-6);
  auto bad = OpTest("MelWeightMatrix", 17)
                 .input(Tensor::scalarInt64(0))
                 .input(Tensor::scalarInt64(16))
                 .input(Tensor::scalarInt64(16000))
                 .input(Tensor::scalarFloat(100.f))
                 .input(Tensor::scalarFloat(7000.f))
                 .run();
  EXPECT_FALSE(bad.isOk());
}

// A Loop whose trip count is near INT64_MAX and whose condition stays true stops at the
// iteration limit with an error naming the node, instead of running without end.
TEST(Loop, EndlessLoopStopsAtTheIterationLimit) {
  auto body = std::make_shared<Graph>();
  body->name = "body";
  body->inputs = {ValueInfo{"iter", DataType::kInt64, true, {}},
                  ValueInfo{"cond_in", DataType::kBool, true, {}},
                  ValueInfo{"x_in", DataType::kFloat32, true, {DimExpr(1)}}};
  for (auto [in, out] : {std::pair<const char*, const char*>{"cond_in", "cond_out"},
                         std::pair<const char*, const char*>{"x_in", "x_out"}}) {
    Node identity;
    identity.opType = "Identity";
    identity.opset = 16;
    identity.name = std::string("id_") + out;
    identity.inputs = {in};
    identity.outputs = {out};
    identity.index = static_cast<int>(body->nodes.size());
    body->nodes.push_back(identity);
  }
  body->outputs = {ValueInfo{"cond_out", DataType::kBool, true, {}},
                   ValueInfo{"x_out", DataType::kFloat32, true, {DimExpr(1)}}};
  Node loop;
  loop.opType = "Loop";
  loop.opset = 16;
  loop.name = "endless";
  loop.inputs = {"M", "cond", "x"};
  loop.outputs = {"x_final"};
  Attribute graph;
  graph.kind = Attribute::Kind::kGraph;
  graph.g = body;
  loop.attributes["body"] = graph;
  auto run = [&](int64_t trips) -> Result<std::vector<Tensor>> {
    const std::map<std::string, Tensor> values = {
        {"M", int64Tensor({}, {trips})},
        {"cond", Tensor::fromVector(DataType::kBool, {}, std::vector<uint8_t>{1})},
        {"x", floatTensor({1}, {0.75f})}};
    std::vector<Tensor> outputs;
    KILN_RETURN_IF_ERROR(runReferenceNode(loop, values, &outputs));
    return outputs;
  };
  setenv("KILN_MAX_LOOP_ITERATIONS", "1000", 1);
  auto refused = run(std::numeric_limits<int64_t>::max());
  auto ok = run(999);
  unsetenv("KILN_MAX_LOOP_ITERATIONS");
  ASSERT_FALSE(refused.isOk());
  const std::string message = refused.status().message();
  EXPECT_NE(message.find("endless"), std::string::npos) << message;
  EXPECT_NE(message.find("loop iteration limit (KILN_MAX_LOOP_ITERATIONS=1000)"), std::string::npos)
      << message;
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ(ok.value()[0].data<float>()[0], 0.75f);
}

}  // namespace
}  // namespace kiln::test
