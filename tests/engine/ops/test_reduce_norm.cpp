// Tests for the reduce_norm op family: reductions, softmax, normalization, scans.
// See tests/support/op_test.h. Expected values are computed by hand.
#include <cmath>
#include <limits>

#include "support/op_test.h"

namespace kiln::test {
namespace {

const Tensor kMatrix = floatTensor({2, 3}, {1, 2, 3, 4, 5, 6});

Tensor runOne(OpTest& test) {
  auto out = test.run();
  EXPECT_TRUE(out.isOk()) << out.status().toString();
  return out.isOk() ? out.value()[0] : Tensor();
}

// ---- Reductions ----------------------------------------------------------------

TEST(Reduce, SumAxesInputDropsDims) {
  OpTest t("ReduceSum", 13);
  t.input(kMatrix).input(int64Tensor({1}, {1})).attr("keepdims", int64_t{0});
  expectTensorNear(runOne(t), floatTensor({2}, {6, 15}), 0, 0);
}

TEST(Reduce, MeanAxesAttributeKeepsDims) {
  OpTest t("ReduceMean", 11);
  t.input(kMatrix).attr("axes", std::vector<int64_t>{0});
  expectTensorNear(runOne(t), floatTensor({1, 3}, {2.5f, 3.5f, 4.5f}), 0, 0);
}

TEST(Reduce, MaxWithoutAxesReducesAll) {
  OpTest t("ReduceMax", 18);
  t.input(kMatrix);
  expectTensorNear(runOne(t), floatTensor({1, 1}, {6}), 0, 0);
}

TEST(Reduce, NoopWithEmptyAxesKeepsInput) {
  OpTest t("ReduceSumSquare", 18);
  t.input(kMatrix).input(int64Tensor({0}, {})).attr("noop_with_empty_axes", int64_t{1});
  // No axis is reduced, so each element is "summed" alone: its square.
  expectTensorNear(runOne(t), floatTensor({2, 3}, {1, 4, 9, 16, 25, 36}), 0, 0);
}

TEST(Reduce, NegativeAxesL1AndSumSquare) {
  const Tensor x = floatTensor({2, 2}, {-1, 2, -3, 4});
  OpTest l1("ReduceL1", 13);
  l1.input(x).attr("axes", std::vector<int64_t>{-1}).attr("keepdims", int64_t{0});
  expectTensorNear(runOne(l1), floatTensor({2}, {3, 7}), 0, 0);
  OpTest sq("ReduceSumSquare", 18);
  sq.input(x).input(int64Tensor({1}, {-2}));
  expectTensorNear(runOne(sq), floatTensor({1, 2}, {10, 20}), 0, 0);
}

TEST(Reduce, EmptySetGivesIdentity) {
  const Tensor empty(DataType::kFloat32, {2, 0, 4});
  OpTest prod("ReduceProd", 18);
  prod.input(empty).input(int64Tensor({1}, {1}));
  Tensor ones = floatTensor({2, 1, 4}, std::vector<float>(8, 1.f));
  expectTensorNear(runOne(prod), ones, 0, 0);
  OpTest mn("ReduceMin", 18);
  mn.input(empty).input(int64Tensor({1}, {1})).attr("keepdims", int64_t{0});
  const float inf = std::numeric_limits<float>::infinity();
  expectTensorNear(runOne(mn), floatTensor({2, 4}, std::vector<float>(8, inf)), 0, 0);
}

TEST(Reduce, LogSumExpIsStableForLargeValues) {
  OpTest t("ReduceLogSumExp", 13);
  t.input(floatTensor({2}, {1000, 1000}));
  expectTensorNear(runOne(t), floatTensor({1}, {1000 + std::log(2.f)}), 1e-3, 1e-6);
}

TEST(Reduce, IntegerL2AndLogSum) {
  OpTest l2("ReduceL2", 13);
  l2.input(Tensor::fromVector(DataType::kInt32, {2}, std::vector<int32_t>{3, 4}));
  expectTensorNear(runOne(l2), Tensor::fromVector(DataType::kInt32, {1}, std::vector<int32_t>{5}),
                   0, 0);
  OpTest ls("ReduceLogSum", 13);
  ls.input(floatTensor({3}, {1, 2, 4})).attr("keepdims", int64_t{0});
  expectTensorNear(runOne(ls), floatTensor({}, {std::log(7.f)}), 1e-6, 1e-6);
}

TEST(Reduce, BadAxesAreErrors) {
  EXPECT_FALSE(OpTest("ReduceSum", 13).input(kMatrix).input(int64Tensor({1}, {2})).run().isOk());
  EXPECT_FALSE(OpTest("ReduceMean", 13)
                   .input(kMatrix)
                   .attr("axes", std::vector<int64_t>{1, -1})
                   .run()
                   .isOk());
  EXPECT_FALSE(OpTest("ReduceL1", 18).input(Tensor(DataType::kBool, {2})).run().isOk());
}

TEST(ArgMax, KeepDimsAndSelectLastIndex) {
  const Tensor x = floatTensor({2, 3}, {1, 3, 3, 5, 2, 5});
  OpTest first("ArgMax", 13);
  first.input(x).attr("axis", int64_t{1});
  expectTensorNear(runOne(first), int64Tensor({2, 1}, {1, 0}), 0, 0);
  OpTest last("ArgMax", 13);
  last.input(x)
      .attr("axis", int64_t{-1})
      .attr("keepdims", int64_t{0})
      .attr("select_last_index", int64_t{1});
  expectTensorNear(runOne(last), int64Tensor({2}, {2, 2}), 0, 0);
}

TEST(ArgMin, AlongAxisZero) {
  OpTest t("ArgMin", 13);
  t.input(floatTensor({2, 3}, {1, 3, 3, 5, 2, 5})).attr("keepdims", int64_t{0});
  expectTensorNear(runOne(t), int64Tensor({3}, {0, 1, 0}), 0, 0);
  EXPECT_FALSE(OpTest("ArgMin", 13).input(kMatrix).attr("axis", int64_t{2}).run().isOk());
}

// ---- Softmax family ------------------------------------------------------------

TEST(Softmax, LastAxis) {
  OpTest t("Softmax", 13);
  t.input(floatTensor({1, 3}, {1, 2, 3}));
  expectTensorNear(runOne(t), floatTensor({1, 3}, {0.0900306f, 0.2447285f, 0.6652409f}), 1e-6,
                   1e-5);
}

TEST(Softmax, OldOpsetCoercesTo2D) {
  // Opset 11, axis 1 on [1, 2, 2]: one row of four elements.
  OpTest t("Softmax", 11);
  t.input(floatTensor({1, 2, 2}, {1, 2, 3, 4}));
  expectTensorNear(runOne(t),
                   floatTensor({1, 2, 2}, {0.0320586f, 0.0871443f, 0.2368828f, 0.6439143f}), 1e-6,
                   1e-5);
}

TEST(Softmax, InnerAxisIsStrided) {
  OpTest t("Softmax", 13);
  t.input(floatTensor({2, 2}, {1, 5, 2, 5})).attr("axis", int64_t{0});
  expectTensorNear(runOne(t), floatTensor({2, 2}, {0.2689414f, 0.5f, 0.7310586f, 0.5f}), 1e-6,
                   1e-5);
}

TEST(LogSoftmax, LargeNumbersStayFinite) {
  OpTest t("LogSoftmax", 13);
  t.input(floatTensor({2}, {1000, 1001}));
  expectTensorNear(runOne(t), floatTensor({2}, {-1.3132617f, -0.3132617f}), 1e-5, 1e-5);
}

TEST(Hardmax, FirstMaximumWins) {
  OpTest t("Hardmax", 13);
  t.input(floatTensor({2, 3}, {3, 1, 3, 0, 2, 1}));
  expectTensorNear(runOne(t), floatTensor({2, 3}, {1, 0, 0, 0, 1, 0}), 0, 0);
  EXPECT_FALSE(OpTest("Softmax", 13).input(int64Tensor({2}, {1, 2})).run().isOk());
  EXPECT_FALSE(OpTest("Softmax", 13).input(kMatrix).attr("axis", int64_t{2}).run().isOk());
}

// ---- Normalization -------------------------------------------------------------

TEST(BatchNormalization, Inference) {
  OpTest t("BatchNormalization", 15);
  t.input(floatTensor({1, 2, 1, 2}, {1, 2, 3, 4}))
      .input(floatTensor({2}, {1, 2}))
      .input(floatTensor({2}, {0, 1}))
      .input(floatTensor({2}, {1, 3}))
      .input(floatTensor({2}, {4, 1}))
      .attr("epsilon", 0.f);
  expectTensorNear(runOne(t), floatTensor({1, 2, 1, 2}, {0, 0.5f, 1, 3}), 1e-6, 1e-6);
}

TEST(BatchNormalization, TrainingModeUpdatesRunningStats) {
  OpTest t("BatchNormalization", 15);
  t.input(floatTensor({2, 1}, {1, 3}))
      .input(floatTensor({1}, {1}))
      .input(floatTensor({1}, {0}))
      .input(floatTensor({1}, {0}))
      .input(floatTensor({1}, {1}))
      .attr("epsilon", 0.f)
      .attr("training_mode", int64_t{1});
  auto out = t.run(3);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  expectTensorNear(out.value()[0], floatTensor({2, 1}, {-1, 1}), 1e-6, 1e-6);
  expectTensorNear(out.value()[1], floatTensor({1}, {0.2f}), 1e-6, 1e-6);  // 0 * 0.9 + 2 * 0.1
  expectTensorNear(out.value()[2], floatTensor({1}, {1.0f}), 1e-6, 1e-6);  // 1 * 0.9 + 1 * 0.1
}

TEST(BatchNormalization, WrongParameterSizeIsError) {
  OpTest t("BatchNormalization", 15);
  t.input(floatTensor({1, 2, 1, 1}, {1, 2}));
  for (int i = 0; i < 4; ++i) t.input(floatTensor({3}, {1, 1, 1}));
  EXPECT_FALSE(t.run().isOk());
}

TEST(InstanceNormalization, PerChannel) {
  OpTest t("InstanceNormalization", 6);
  t.input(floatTensor({1, 1, 4}, {1, 2, 3, 4}))
      .input(floatTensor({1}, {2}))
      .input(floatTensor({1}, {1}))
      .attr("epsilon", 0.f);
  expectTensorNear(runOne(t), floatTensor({1, 1, 4}, {-1.683282f, 0.105573f, 1.894427f, 3.683282f}),
                   1e-5, 1e-5);
}

// No channels: an empty output, not a division by zero (SIGFPE: one group per channel
// made c / groups divide by 0).
TEST(InstanceNormalization, NoChannelsGivesAnEmptyOutput) {
  OpTest t("InstanceNormalization", 6);
  t.input(floatTensor({2, 0, 3}, {})).input(floatTensor({0}, {})).input(floatTensor({0}, {}));
  const Tensor y = runOne(t);
  EXPECT_EQ(y.shape(), (Shape{2, 0, 3}));
  OpTest g("GroupNormalization", 21);
  g.input(floatTensor({2, 0, 3}, {}))
      .input(floatTensor({0}, {}))
      .input(floatTensor({0}, {}))
      .attr("num_groups", int64_t{1});
  EXPECT_EQ(runOne(g).shape(), (Shape{2, 0, 3}));
}

TEST(LayerNormalization, OutputsMeanAndInvStdDev) {
  OpTest t("LayerNormalization", 17);
  t.input(floatTensor({2, 2}, {1, 3, 2, 6}))
      .input(floatTensor({2}, {2, 3}))
      .input(floatTensor({2}, {1, 1}))
      .attr("epsilon", 0.f);
  auto out = t.run(3);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  expectTensorNear(out.value()[0], floatTensor({2, 2}, {-1, 4, -1, 4}), 1e-6, 1e-6);
  expectTensorNear(out.value()[1], floatTensor({2, 1}, {2, 4}), 1e-6, 1e-6);
  expectTensorNear(out.value()[2], floatTensor({2, 1}, {1, 0.5f}), 1e-6, 1e-6);
}

TEST(LayerNormalization, ScaleMustMatchNormalizedShape) {
  OpTest t("LayerNormalization", 17);
  t.input(floatTensor({2, 2}, {1, 3, 2, 6})).input(floatTensor({3}, {1, 1, 1}));
  EXPECT_FALSE(t.run().isOk());
}

TEST(GroupNormalization, PerChannelAndPerGroupParameters) {
  const Tensor x = floatTensor({1, 4, 1}, {1, 3, 10, 20});  // groups {1,3}, {10,20} -> -1, 1
  OpTest v21("GroupNormalization", 21);
  v21.input(x).input(floatTensor({4}, {1, 2, 3, 4})).input(floatTensor({4}, {0, 0, 0, 1}));
  v21.attr("num_groups", int64_t{2}).attr("epsilon", 0.f);
  expectTensorNear(runOne(v21), floatTensor({1, 4, 1}, {-1, 2, -3, 5}), 1e-5, 1e-5);
  OpTest v18("GroupNormalization", 18);
  v18.input(x).input(floatTensor({2}, {1, 2})).input(floatTensor({2}, {0, 1}));
  v18.attr("num_groups", int64_t{2}).attr("epsilon", 0.f);
  expectTensorNear(runOne(v18), floatTensor({1, 4, 1}, {-1, 1, -1, 3}), 1e-5, 1e-5);
  OpTest bad("GroupNormalization", 21);
  bad.input(x).input(floatTensor({4}, {1, 1, 1, 1})).input(floatTensor({4}, {0, 0, 0, 0}));
  EXPECT_FALSE(bad.attr("num_groups", int64_t{3}).run().isOk());
}

TEST(LpNormalization, L1AndL2) {
  OpTest l1("LpNormalization", 1);
  l1.input(floatTensor({2, 2}, {1, 3, 0, 0})).attr("p", int64_t{1});
  expectTensorNear(runOne(l1), floatTensor({2, 2}, {0.25f, 0.75f, 0, 0}), 1e-6, 1e-6);
  OpTest l2("LpNormalization", 22);
  l2.input(floatTensor({1, 2}, {3, -4}));
  expectTensorNear(runOne(l2), floatTensor({1, 2}, {0.6f, -0.8f}), 1e-6, 1e-6);
  EXPECT_FALSE(OpTest("LpNormalization", 22).input(kMatrix).attr("p", int64_t{3}).run().isOk());
}

TEST(MeanVarianceNormalization, DefaultAxes) {
  OpTest t("MeanVarianceNormalization", 13);
  t.input(floatTensor({1, 2, 1, 2}, {1, 3, 10, 14}));  // per channel: mean 2 std 1; mean 12 std 2
  expectTensorNear(runOne(t), floatTensor({1, 2, 1, 2}, {-1, 1, -1, 1}), 1e-6, 1e-6);
}

TEST(LRN, WindowAcrossChannels) {
  OpTest t("LRN", 13);
  t.input(floatTensor({1, 3, 1, 1}, {1, 2, 3}))
      .attr("size", int64_t{3})
      .attr("alpha", 3.f)
      .attr("beta", 1.f)
      .attr("bias", 1.f);
  // alpha / size = 1: y = x / (1 + sum of squares of the neighbouring channels).
  expectTensorNear(runOne(t), floatTensor({1, 3, 1, 1}, {1.f / 6, 2.f / 15, 3.f / 14}), 1e-6, 1e-6);
  EXPECT_FALSE(OpTest("LRN", 13).input(kMatrix).run().isOk());  // size is required
}

// ---- Scans ---------------------------------------------------------------------

TEST(CumSum, ExclusiveReverse) {
  OpTest t("CumSum", 14);
  t.input(floatTensor({4}, {1, 2, 3, 4})).input(int64Tensor({}, {0}));
  t.attr("exclusive", int64_t{1}).attr("reverse", int64_t{1});
  expectTensorNear(runOne(t), floatTensor({4}, {9, 7, 4, 0}), 0, 0);
}

TEST(CumSum, Int32AlongLastAxis) {
  OpTest t("CumSum", 14);
  t.input(Tensor::fromVector(DataType::kInt32, {2, 2}, std::vector<int32_t>{1, 2, 3, 4}));
  t.input(Tensor::fromVector(DataType::kInt32, {1}, std::vector<int32_t>{-1}));
  expectTensorNear(runOne(t),
                   Tensor::fromVector(DataType::kInt32, {2, 2}, std::vector<int32_t>{1, 3, 3, 7}),
                   0, 0);
  EXPECT_FALSE(OpTest("CumSum", 14).input(kMatrix).input(int64Tensor({}, {2})).run().isOk());
}

TEST(TopK, LargestKeepsLowerIndexOnTies) {
  OpTest t("TopK", 11);
  t.input(floatTensor({1, 4}, {1, 4, 4, 2})).input(int64Tensor({1}, {2}));
  auto out = t.run(2);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  expectTensorNear(out.value()[0], floatTensor({1, 2}, {4, 4}), 0, 0);
  expectTensorNear(out.value()[1], int64Tensor({1, 2}, {1, 2}), 0, 0);
}

TEST(TopK, SmallestAndOpset1Attribute) {
  OpTest small("TopK", 11);
  small.input(floatTensor({4, 1}, {1, 4, 4, 2})).input(int64Tensor({1}, {3}));
  small.attr("axis", int64_t{0}).attr("largest", int64_t{0});
  auto out = small.run(2);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  expectTensorNear(out.value()[0], floatTensor({3, 1}, {1, 2, 4}), 0, 0);
  expectTensorNear(out.value()[1], int64Tensor({3, 1}, {0, 3, 1}), 0, 0);
  OpTest v1("TopK", 1);
  v1.input(floatTensor({3}, {5, 7, 6})).attr("k", int64_t{1});
  auto out1 = v1.run(2);
  ASSERT_TRUE(out1.isOk()) << out1.status().toString();
  expectTensorNear(out1.value()[1], int64Tensor({1}, {1}), 0, 0);
  EXPECT_FALSE(OpTest("TopK", 11).input(kMatrix).input(int64Tensor({1}, {4})).run(2).isOk());
}

}  // namespace
}  // namespace kiln::test
