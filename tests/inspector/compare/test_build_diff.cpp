// Side-by-side builds: layers aligned through ONNX provenance (hand-made reports
// with different fusions, a layer only one build has, layers known by name only),
// and two real CPU builds of one model with different fusions, precisions and tactics.
#include <gtest/gtest.h>

#include "compare/build_diff.h"
#include "engine_report.h"
#include "inspector/compare/compare_fixture.h"

namespace kiln::compare {
namespace {

using inspector::EngineReport;
using inspector::ReportLayer;

ReportLayer layer(const std::string& name, std::vector<std::string> nodes,
                  const std::string& precision, const std::string& tactic, double ms) {
  ReportLayer l;
  l.name = name;
  l.sourceNodes = std::move(nodes);
  l.precision = precision;
  l.tactic = tactic;
  l.milliseconds = ms;
  return l;
}

const DiffRow* rowWith(const BuildDiff& diff, const std::string& node) {
  for (const DiffRow& row : diff.rows)
    for (const std::string& n : row.onnxNodes)
      if (n == node) return &row;
  return nullptr;
}

TEST(BuildDiff, AlignsDifferentFusionsThroughProvenance) {
  EngineReport a, b;
  a.title = "a";
  a.layers = {layer("conv + relu", {"conv", "relu"}, "FP32", "t.conv", 2.0),
              layer("pool", {"pool"}, "FP32", "t.pool", 0.5),
              layer("fc", {"fc"}, "FP32", "t.gemm", 1.0)};
  b.title = "b";
  b.layers = {layer("conv", {"conv"}, "FP16", "t.conv16", 0.75),
              layer("relu", {"relu"}, "FP16", "t.relu", 0.25),
              layer("reformat", {"reformat_0"}, "FP16", "t.copy", 0.1),
              layer("pool", {"pool"}, "FP32", "t.pool", 0.5),
              layer("fc", {}, "FP16", "t.gemm", 0.25)};  // no provenance: its name
  const BuildDiff diff = diffBuilds({&a, &b});
  ASSERT_EQ(diff.rows.size(), 4u);
  // Execution order: conv group, reformat (only in b, after it), pool, fc.
  EXPECT_EQ(diff.rows[0].onnxNodes, (std::vector<std::string>{"conv", "relu"}));
  EXPECT_EQ(diff.rows[1].onnxNodes, std::vector<std::string>{"reformat_0"});
  EXPECT_EQ(diff.rows[2].onnxNodes, std::vector<std::string>{"pool"});
  EXPECT_EQ(diff.rows[3].onnxNodes, std::vector<std::string>{"fc"});

  const DiffRow& conv = diff.rows[0];
  EXPECT_EQ(conv.cells[0].layers, std::vector<int>{0});
  EXPECT_EQ(conv.cells[1].layers, (std::vector<int>{0, 1}));
  EXPECT_EQ(conv.cells[1].precision, "FP16");
  EXPECT_EQ(conv.cells[1].tactic, "t.conv16 | t.relu");
  EXPECT_DOUBLE_EQ(conv.cells[1].milliseconds, 1.0);
  EXPECT_DOUBLE_EQ(conv.timeDeltas[1], -1.0);
  EXPECT_TRUE(conv.fusionChanged);
  EXPECT_TRUE(conv.precisionChanged);
  EXPECT_TRUE(conv.tacticChanged);
  EXPECT_FALSE(conv.missing);

  EXPECT_TRUE(diff.rows[1].missing);
  EXPECT_TRUE(diff.rows[1].cells[0].layers.empty());
  const DiffRow& pool = diff.rows[2];
  EXPECT_FALSE(pool.precisionChanged || pool.tacticChanged || pool.fusionChanged || pool.missing);
  EXPECT_DOUBLE_EQ(pool.timeDeltas[1], 0.0);
  EXPECT_TRUE(diff.rows[3].precisionChanged);
  EXPECT_FALSE(diff.rows[3].tacticChanged);
  EXPECT_DOUBLE_EQ(diff.rows[3].timeDeltas[1], -0.75);

  const auto byDelta = orderedRows(diff, DiffOrder::kTimeDelta);
  EXPECT_EQ(byDelta[0], &diff.rows[0]);
  EXPECT_EQ(byDelta[1], &diff.rows[3]);

  const nlohmann::json j = buildDiffJson(diff);
  EXPECT_EQ(j["rows"].size(), 4u);
  EXPECT_EQ(j["rows"][0]["builds"][1]["layers"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["fusion_changed"], true);
}

TEST(BuildDiff, ThreeBuildsShareOneRowPerNodeGroup) {
  EngineReport a, b, c;
  a.layers = {layer("x", {"n1"}, "FP32", "t", 1), layer("y", {"n2"}, "FP32", "t", 1)};
  b.layers = {layer("x + y", {"n1", "n2"}, "FP32", "t", 1.5)};
  c.layers = {layer("x", {"n1"}, "FP32", "t", 1), layer("y", {"n2"}, "FP32", "u", 2)};
  const BuildDiff diff = diffBuilds({&a, &b, &c});
  ASSERT_EQ(diff.rows.size(), 1u);
  EXPECT_EQ(diff.rows[0].cells[2].tactic, "t | u");
  EXPECT_DOUBLE_EQ(diff.rows[0].timeDeltas[1], -0.5);
  EXPECT_DOUBLE_EQ(diff.rows[0].timeDeltas[2], 1.0);
}

// Two CPU builds of the small CNN: the baseline as `kiln build` makes it (fp32,
// Conv+Relu fused); the other without that fusion, every layer fp16 (obeyed), no BLAS.
TEST(BuildDiff, TwoCpuBuildsWithDifferentTacticsAndPrecisions) {
  BuilderConfig base;
  BuilderConfig other;
  other.disabledPasses = {"fuse_conv_bias_activation"};
  other.fp16 = true;
  other.precisionConstraints = ConstraintMode::kObey;
  other.layerPrecisions = {{"*", DataType::kFloat16}};
  other.tacticSources = kAllTacticSources & ~kTacticBlas;
  auto planA = test::buildCpu(test::smallCnn(), base);
  auto planB = test::buildCpu(test::smallCnn(), other);
  ASSERT_TRUE(planA && planB);
  const EngineReport a = inspector::reportFromPlan(*planA, "a.kiln");
  const EngineReport b = inspector::reportFromPlan(*planB, "b.kiln");
  const BuildDiff diff = diffBuilds({&a, &b});

  // Every ONNX node of either build lies in exactly one row.
  std::map<std::string, int> rowsOfNode;
  for (const DiffRow& row : diff.rows)
    for (const std::string& n : row.onnxNodes) ++rowsOfNode[n];
  for (const EngineReport* r : {&a, &b})
    for (const ReportLayer& l : r->layers)
      for (const std::string& n : l.sourceNodes) EXPECT_EQ(rowsOfNode[n], 1) << n;

  const DiffRow* conv2 = rowWith(diff, "conv2");
  ASSERT_NE(conv2, nullptr);
  EXPECT_NE(std::find(conv2->onnxNodes.begin(), conv2->onnxNodes.end(), "conv2_relu"),
            conv2->onnxNodes.end());
  ASSERT_EQ(conv2->cells[0].layers.size(), 1u);  // fused in the baseline
  EXPECT_GE(conv2->cells[1].layers.size(), 2u);  // Conv and Relu apart
  EXPECT_TRUE(conv2->fusionChanged);
  EXPECT_EQ(conv2->cells[0].precision, "FP32");
  EXPECT_EQ(conv2->cells[1].precision, "FP16");
  EXPECT_TRUE(conv2->precisionChanged);
  EXPECT_NE(conv2->cells[1].tactic.find("cpu.conv."), std::string::npos);
  EXPECT_EQ(conv2->cells[1].tactic.find("blas"), std::string::npos) << conv2->cells[1].tactic;
  EXPECT_TRUE(conv2->tacticChanged);
  double sumB = 0;
  for (int i : conv2->cells[1].layers) sumB += b.layers[i].milliseconds;
  EXPECT_DOUBLE_EQ(conv2->cells[1].milliseconds, sumB);
  EXPECT_DOUBLE_EQ(conv2->timeDeltas[1], sumB - a.layers[conv2->cells[0].layers[0]].milliseconds);

  // Rows follow the baseline's execution order.
  int previous = -1;
  for (const DiffRow& row : diff.rows) {
    if (row.cells[0].layers.empty()) continue;
    EXPECT_GT(row.cells[0].layers.front(), previous);
    previous = row.cells[0].layers.front();
  }
  EXPECT_EQ(diff.builds[0].precisions.at("FP32"), static_cast<int>(a.layers.size()));
  EXPECT_GT(diff.builds[1].precisions.at("FP16"), 0);
  EXPECT_EQ(diff.builds[1].layers, static_cast<int>(b.layers.size()));
}

}  // namespace
}  // namespace kiln::compare
