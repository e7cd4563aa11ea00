// A kiln compare report read back from its JSON (accuracyReportFromJson: the studio's
// remote comparisons come back as files): a real report with intermediates, fused-away
// tensors, a first divergence, top-k and plots survives the round trip field for field,
// and malformed files are refused with the field named.
#include <gtest/gtest.h>

#include "compare/accuracy_compare.h"
#include "inspector/compare/compare_fixture.h"

namespace kiln::compare {
namespace {

AccuracyReport perturbedPlanReport() {
  auto plan = test::buildCpu(test::perturbedSmallCnn(0.5f), BuilderConfig{});
  EXPECT_TRUE(plan);
  auto engine = cpuPlanRunner(plan, "perturbed.kiln");
  EXPECT_TRUE(engine.isOk());
  auto original = referenceRunner(test::smallCnn(), "small_cnn.onnx");
  CompareOptions options;
  options.perTensor = true;
  auto report =
      compareAccuracy(**engine, *original, {test::randomInputs(*test::smallCnn(), 3)}, options);
  EXPECT_TRUE(report.isOk()) << report.status().toString();
  return report.value();
}

TEST(AccuracyJson, ReportSurvivesTheRoundTrip) {
  const AccuracyReport report = perturbedPlanReport();
  ASSERT_FALSE(report.pass);
  ASSERT_GE(report.firstDivergent, 0);
  ASSERT_FALSE(report.fusedAway.empty());
  const nlohmann::json written = accuracyReportJson(report, true);
  auto back = accuracyReportFromJson(nlohmann::json::parse(written.dump()));
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(accuracyReportJson(back.value(), true), written);
  EXPECT_EQ(back->firstDivergent, report.firstDivergent);
  EXPECT_EQ(back->sideA, report.sideA);
  ASSERT_EQ(back->outputs.size(), 1u);
  const ErrorStats& logits = back->outputs[0];
  EXPECT_EQ(logits.maxAbs, report.outputs[0].maxAbs);
  EXPECT_GT(logits.maxAbs, 1e-3);
  EXPECT_EQ(logits.histogram.counts, report.outputs[0].histogram.counts);
  EXPECT_EQ(logits.heatmap.cells.size(), report.outputs[0].heatmap.cells.size());
  EXPECT_FALSE(logits.heatmap.cells.empty());
  EXPECT_EQ(logits.quantiles.size(), report.outputs[0].quantiles.size());
  EXPECT_EQ(logits.topK, report.outputs[0].topK);
  EXPECT_EQ(logits.shape, report.outputs[0].shape);
}

TEST(AccuracyJson, MalformedReportsAreRefusedNamingTheField) {
  nlohmann::json good = accuracyReportJson(perturbedPlanReport(), true);
  struct Case {
    const char* what;
    std::function<void(nlohmann::json&)> spoil;
    const char* needle;
  };
  const Case cases[] = {
      {"not an object", [](nlohmann::json& j) { j = nlohmann::json::array(); }, "outputs"},
      {"no outputs", [](nlohmann::json& j) { j.erase("outputs"); }, "outputs"},
      {"runs a string", [](nlohmann::json& j) { j["runs"] = "two"; }, "'runs'"},
      {"max_abs a string", [](nlohmann::json& j) { j["outputs"][0]["max_abs"] = "x"; },
       "tensor 'logits': 'max_abs'"},
      {"heatmap cells", [](nlohmann::json& j) { j["outputs"][0]["heatmap"]["rows"] = 64; },
       "heatmap"},
      {"histogram bins", [](nlohmann::json& j) { j["outputs"][0]["histogram"]["counts"] = {1}; },
       "bins"},
      {"quantile key", [](nlohmann::json& j) { j["outputs"][0]["abs_quantiles"]["q"] = 1; },
       "abs_quantiles"},
      {"tensor not an object", [](nlohmann::json& j) { j["intermediates"][0] = 3; },
       "not an object"},
  };
  for (const Case& c : cases) {
    nlohmann::json spoiled = good;
    c.spoil(spoiled);
    auto read = accuracyReportFromJson(spoiled);
    ASSERT_FALSE(read.isOk()) << c.what;
    EXPECT_NE(read.status().message().find(c.needle), std::string::npos)
        << c.what << ": " << read.status().message();
  }
}

}  // namespace
}  // namespace kiln::compare
