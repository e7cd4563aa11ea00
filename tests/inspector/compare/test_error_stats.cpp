// Error statistics on hand-computed cases: absolute/relative errors, quantiles,
// cosine, NaN/Inf counts, top-k agreement, histogram and heatmap, several runs.
#include <gtest/gtest.h>

#include <cmath>

#include "compare/error_stats.h"
#include "support/op_test.h"

namespace kiln::compare {
namespace {

using test::floatTensor;

TEST(ErrorStats, AbsoluteRelativeAndCosineByHand) {
  const Tensor expected = floatTensor({4}, {1.f, -2.f, 4.f, 8.f});
  const Tensor actual = floatTensor({4}, {1.f, -2.5f, 4.f, 9.f});
  const ErrorStats s = computeErrorStats("y", actual, expected, {0.1, 0.0});
  EXPECT_EQ(s.elements, 4);
  EXPECT_DOUBLE_EQ(s.maxAbs, 1.0);
  EXPECT_DOUBLE_EQ(s.meanAbs, 1.5 / 4);
  EXPECT_DOUBLE_EQ(s.maxRel, 0.25);  // 0.5 / 2
  EXPECT_DOUBLE_EQ(s.meanRel, (0.25 + 0.125) / 4);
  EXPECT_EQ(s.worstIndex, 3);
  EXPECT_EQ(s.outsideTolerance, 2);
  EXPECT_FALSE(s.pass);
  EXPECT_NE(s.reason.find("element 1: -2.5, expected -2"), std::string::npos) << s.reason;
  const double dot = 1 + 5 + 16 + 72, na = 1 + 6.25 + 16 + 81, ne = 1 + 4 + 16 + 64;
  EXPECT_NEAR(s.cosine, dot / std::sqrt(na * ne), 1e-12);
  ASSERT_EQ(s.quantiles.size(), 4u);
  EXPECT_DOUBLE_EQ(s.quantiles[0].absError, 0.0);  // nearest rank: errors 0, 0, 0.5, 1
  EXPECT_DOUBLE_EQ(s.quantiles[1].absError, 1.0);
  EXPECT_EQ(s.histogram.belowFirst, 2);                                 // the exact zeros
  EXPECT_EQ(s.histogram.counts[-1 - ErrorHistogram::kFirstDecade], 1);  // 0.5 in [0.1, 1)
  EXPECT_EQ(s.histogram.counts[0 - ErrorHistogram::kFirstDecade], 1);   // 1.0 in [1, 10)
}

TEST(ErrorStats, WithinToleranceByTheAllcloseRule) {
  const Tensor expected = floatTensor({3}, {100.f, 1.f, 0.f});
  const Tensor actual = floatTensor({3}, {100.1f, 1.001f, 1e-6f});
  EXPECT_TRUE(computeErrorStats("y", actual, expected, {1e-5, 1e-3}).pass);
  EXPECT_FALSE(computeErrorStats("y", actual, expected, {1e-5, 1e-4}).pass);
}

TEST(ErrorStats, NanAndInfAreCountedPerSide) {
  const Tensor expected = floatTensor({4}, {1.f, NAN, INFINITY, 2.f});
  const Tensor actual = floatTensor({4}, {NAN, NAN, INFINITY, -INFINITY});
  const ErrorStats s = computeErrorStats("y", actual, expected, {1, 1});
  EXPECT_EQ(s.nanActual, 2);
  EXPECT_EQ(s.nanExpected, 1);
  EXPECT_EQ(s.infActual, 2);
  EXPECT_EQ(s.infExpected, 1);
  EXPECT_EQ(s.finitePairs, 0);
  EXPECT_EQ(s.outsideTolerance, 2);  // NaN vs 1, -inf vs 2; NaN/NaN and inf/inf match
  EXPECT_DOUBLE_EQ(s.cosine, 0.0);
  EXPECT_FALSE(s.pass);
}

TEST(ErrorStats, TopKAgreementAlongTheLastAxis) {
  // Row 0: same arg-max (2), top-2 {2,0} vs {2,1}; row 1: arg-max 0 vs 1, top-2 equal sets.
  const Tensor expected = floatTensor({2, 3}, {0.3f, 0.1f, 0.6f, 0.5f, 0.4f, 0.1f});
  const Tensor actual = floatTensor({2, 3}, {0.1f, 0.3f, 0.6f, 0.4f, 0.5f, 0.1f});
  const ErrorStats s = computeErrorStats("logits", actual, expected, {0, 0}, 2);
  EXPECT_EQ(s.topK, 2);
  EXPECT_EQ(s.topRows, 2);
  EXPECT_DOUBLE_EQ(s.top1Agreement, 0.5);
  EXPECT_DOUBLE_EQ(s.topKOverlap, (0.5 + 1.0) / 2);
}

TEST(ErrorStats, HeatmapPoolsRowsAndColumnsByTheLargestError) {
  Tensor expected = test::randomTensor(DataType::kFloat32, {100, 130}, 4);
  Tensor actual = expected.clone();
  actual.data<float>()[57 * 130 + 129] += 3.f;  // row 57, last column
  const ErrorStats s = computeErrorStats("y", actual, expected, {0, 0});
  const ErrorHeatmap& h = s.heatmap;
  ASSERT_EQ(h.rows, 64);
  ASSERT_EQ(h.columns, 64);
  EXPECT_EQ(h.tensorRows, 100);
  EXPECT_EQ(h.tensorColumns, 130);
  const int row = 57 * 64 / 100, column = 129 * 64 / 130;
  EXPECT_NEAR(h.cells[row * 64 + column], 3.0, 1e-6);
  double others = 0;
  for (size_t i = 0; i < h.cells.size(); ++i)
    if (static_cast<int>(i) != row * 64 + column) others = std::max(others, h.cells[i]);
  EXPECT_EQ(others, 0.0);
}

TEST(ErrorStats, RunsAccumulateAndShapeChangesAreNotComparable) {
  ErrorAccumulator acc("y", {0.5, 0}, 0);
  acc.add(floatTensor({2}, {1.f, 2.f}), floatTensor({2}, {1.f, 2.f}));
  acc.add(floatTensor({2}, {1.f, 4.f}), floatTensor({2}, {1.f, 2.f}));
  const ErrorStats s = acc.finish();
  EXPECT_EQ(s.runs, 2);
  EXPECT_EQ(s.elements, 4);
  EXPECT_DOUBLE_EQ(s.maxAbs, 2.0);
  EXPECT_EQ(s.outsideTolerance, 1);

  const ErrorStats shape =
      computeErrorStats("y", floatTensor({2}, {1.f, 2.f}), floatTensor({1, 2}, {1.f, 2.f}), {});
  EXPECT_FALSE(shape.comparable);
  EXPECT_FALSE(shape.pass);
  EXPECT_NE(shape.problem.find("float32 2 against float32 1x2"), std::string::npos)
      << shape.problem;
}

TEST(ErrorStats, JsonCarriesTheStatisticsAndPlots) {
  const ErrorStats s = computeErrorStats("y", floatTensor({1, 2}, {1.f, 2.5f}),
                                         floatTensor({1, 2}, {1.f, 2.f}), {}, 5);
  const nlohmann::json j = errorStatsJson(s, true);
  EXPECT_EQ(j["name"], "y");
  EXPECT_DOUBLE_EQ(j["max_abs"].get<double>(), 0.5);
  EXPECT_EQ(j["pass"], false);
  EXPECT_EQ(j["top_k"]["k"], 2);  // capped at the 2 classes
  EXPECT_EQ(j["heatmap"]["cells"].size(), 2u);
  EXPECT_EQ(j["histogram"]["counts"].size(), static_cast<size_t>(ErrorHistogram::kBins));
}

TEST(ErrorStats, OutputRunsAccumulatePerOutputByName) {
  // Two runs of two outputs; top-1 per row of "logits" [2, 3], none for "aux" [2, 1].
  const std::vector<std::vector<NamedTensor>> expected = {
      {{"logits", floatTensor({2, 3}, {0.1f, 0.9f, 0.2f, 0.7f, 0.2f, 0.1f})},
       {"aux", floatTensor({2, 1}, {2.f, -4.f})}},
      {{"logits", floatTensor({2, 3}, {0.5f, 0.1f, 0.3f, 0.2f, 0.3f, 0.6f})},
       {"aux", floatTensor({2, 1}, {1.f, 8.f})}}};
  const std::vector<std::vector<NamedTensor>> actual = {
      {{"logits", floatTensor({2, 3}, {0.1f, 0.9f, 0.2f, 0.7f, 0.2f, 0.1f})},
       {"aux", floatTensor({2, 1}, {2.5f, -4.f})}},
      {{"logits", floatTensor({2, 3}, {0.5f, 0.6f, 0.3f, 0.2f, 0.3f, 0.6f})},
       {"aux", floatTensor({2, 1}, {1.f, 6.f})}}};
  auto stats = compareOutputRuns(actual, expected, {0.1, 0.0}, 1);
  ASSERT_TRUE(stats.isOk()) << stats.status().toString();
  ASSERT_EQ(stats->size(), 2u);
  const ErrorStats& logits = (*stats)[0];
  EXPECT_EQ(logits.name, "logits");
  EXPECT_EQ(logits.runs, 2);
  EXPECT_EQ(logits.elements, 12);
  EXPECT_EQ(logits.topRows, 4);
  EXPECT_DOUBLE_EQ(logits.top1Agreement, 0.75);  // run 1 row 0: arg-max 1 against 0
  EXPECT_NEAR(logits.maxAbs, 0.5, 1e-6);
  const ErrorStats& aux = (*stats)[1];
  EXPECT_EQ(aux.name, "aux");
  EXPECT_DOUBLE_EQ(aux.maxAbs, 2.0);
  EXPECT_DOUBLE_EQ(aux.meanAbs, 2.5 / 4);
  EXPECT_DOUBLE_EQ(aux.maxRel, 0.25);  // 0.5 / 2 and 2 / 8
  EXPECT_EQ(aux.outsideTolerance, 2);
  EXPECT_EQ(aux.topK, 0);  // one entry per row: no top-k

  const std::string text = formatAccuracySummary(*stats);
  EXPECT_NE(text.find("logits: max abs 0.5, mean abs "), std::string::npos) << text;
  EXPECT_NE(text.find("top-1 3/4 (75.0%)"), std::string::npos) << text;
  EXPECT_NE(text.find("aux: max abs 2, mean abs 0.625, max rel 25%"), std::string::npos) << text;
}

TEST(ErrorStats, OutputRunsRejectMismatchedRunsAndNames) {
  const std::vector<std::vector<NamedTensor>> one = {{{"y", floatTensor({1}, {1.f})}}};
  const std::vector<std::vector<NamedTensor>> renamed = {{{"z", floatTensor({1}, {1.f})}}};
  auto names = compareOutputRuns(renamed, one, {}, 0);
  ASSERT_FALSE(names.isOk());
  EXPECT_NE(names.status().message().find("output 'z' where 'y' was expected"), std::string::npos)
      << names.status().toString();
  auto runs = compareOutputRuns({}, one, {}, 0);
  ASSERT_FALSE(runs.isOk());
  EXPECT_NE(runs.status().message().find("0 runs against 1"), std::string::npos);
  auto counts = compareOutputRuns({{}}, one, {}, 0);
  ASSERT_FALSE(counts.isOk());
  EXPECT_NE(counts.status().message().find("run 0 has 0 outputs, expected 1"), std::string::npos);
}

TEST(ErrorStats, AccuracySummarySaysWhyATensorIsNotComparable) {
  const ErrorStats s =
      computeErrorStats("y", floatTensor({2}, {1.f, 2.f}), floatTensor({1, 2}, {1.f, 2.f}), {});
  EXPECT_EQ(formatAccuracySummary({s}), "y: not comparable: float32 2 against float32 1x2\n");
}

}  // namespace
}  // namespace kiln::compare
