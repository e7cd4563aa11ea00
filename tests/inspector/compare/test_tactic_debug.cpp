// Tactic isolation: with a fault injected into one tactic of one layer (through the
// runner seam), forcing each tactic in turn reports exactly that tactic; rebuilds
// of a deterministic build agree with each other.
#include <gtest/gtest.h>

#include <set>

#include "compare/tactic_debug.h"
#include "inspector/compare/compare_fixture.h"

namespace kiln::compare {
namespace {

PlanRunnerFactory faultWhen(const std::string& layerNode, const std::string& tactic) {
  return test::shiftedOutputsWhen([=](const Plan& plan) {
    for (const LayerRecord& l : plan.record.layers) {
      const bool hasNode =
          std::find(l.sourceNodes.begin(), l.sourceNodes.end(), layerNode) != l.sourceNodes.end();
      if (hasNode && l.tactic == tactic) return true;
    }
    return false;
  });
}

TEST(TacticDebug, ForcingEachTacticReportsTheFaultyOne) {
  TacticDebugOptions options;
  options.config.optimizationLevel = 0;  // the baseline takes the reference tactics
  options.makeRunner = faultWhen("conv2", "cpu.conv.direct");
  int buildsSeen = 0;
  options.onBuild = [&](const std::string&, int build) { EXPECT_EQ(build, ++buildsSeen); };
  auto result = debugTactics(test::smallCnn(), {test::randomInputs(*test::smallCnn(), 7)}, options);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  EXPECT_TRUE(result->baselinePass);
  ASSERT_EQ(result->bad.size(), 1u);
  EXPECT_NE(result->bad[0].layer.find("conv2"), std::string::npos) << result->bad[0].layer;
  EXPECT_EQ(result->bad[0].tactic, "cpu.conv.direct");
  EXPECT_NEAR(result->bad[0].maxAbs, 1.0, 1e-4);
  // Three Conv layers with three tactics each and the Gemm with two were tried.
  int convTrials = 0, baselines = 0;
  std::set<std::string> layers;
  for (const TacticTrial& t : result->trials) {
    convTrials += t.tactic.rfind("cpu.conv.", 0) == 0;
    baselines += t.baseline;
    layers.insert(t.layer);
    const bool faulty = t.layer.find("conv2") != std::string::npos && t.tactic == "cpu.conv.direct";
    EXPECT_EQ(t.pass, !faulty) << t.layer << " " << t.tactic;
  }
  EXPECT_EQ(convTrials, 9);  // conv1..conv3, three tactics each
  EXPECT_EQ(baselines, static_cast<int>(layers.size()));
  EXPECT_EQ(result->builds, 1 + static_cast<int>(result->trials.size()) - baselines);
  EXPECT_EQ(buildsSeen, result->builds);
}

TEST(TacticDebug, SuspectLayersByOnnxNodeAndRebuilds) {
  TacticDebugOptions options;
  options.config.optimizationLevel = 0;
  options.layers = {"conv3"};
  options.rebuilds = 3;
  auto result = debugTactics(test::smallCnn(), {test::randomInputs(*test::smallCnn(), 8)}, options);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  ASSERT_EQ(result->trials.size(), 3u);
  for (const TacticTrial& t : result->trials) {
    EXPECT_NE(std::find(t.sourceNodes.begin(), t.sourceNodes.end(), "conv3"), t.sourceNodes.end());
    EXPECT_TRUE(t.pass) << t.tactic;
  }
  ASSERT_EQ(result->rebuilds.size(), 3u);
  for (const RebuildOutcome& b : result->rebuilds) {
    EXPECT_TRUE(b.changedLayers.empty());  // level 0 picks the same tactics every time
    EXPECT_EQ(b.maxAbsFromFirst, 0.0);
  }
  EXPECT_TRUE(result->flakyLayers.empty());

  options.layers = {"no_such_node"};
  auto missing =
      debugTactics(test::smallCnn(), {test::randomInputs(*test::smallCnn(), 8)}, options);
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("'no_such_node'"), std::string::npos);
}

}  // namespace
}  // namespace kiln::compare
