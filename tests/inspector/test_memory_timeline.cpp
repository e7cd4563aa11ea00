// The memory timeline of a plan (inspector/memory_timeline.h) against a hand count: tiny
// BERT built on the CPU at opt shape 2 x 16 (hidden 32, float32: 4 KiB per activation).
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/builder/builder_fixture.h"
#include "memory_timeline.h"

namespace kiln::inspector {
namespace {

TEST(MemoryTimeline, TinyBertPeakIsTheFiveTensorsAliveAtTheValueReshape) {
  BuilderConfig config;
  config.profiles = {test::bertProfile({1, 4}, {2, 16}, {4, 32})};
  const Plan plan = test::buildOnCpu(test::tinyBertNetwork(), config);
  const MemoryTimeline t = memoryTimeline(plan);
  ASSERT_EQ(t.steps.size(), plan.record.layers.size());
  // At v_reshape (layer 7): the embedding LayerNorm's output (read again by the first
  // residual), the Q and K head splits (read by attention), V's projection and its split.
  EXPECT_EQ(t.steps[t.peakStep].layer, "v_reshape");
  EXPECT_EQ(t.steps[t.peakStep].liveBytes, 5 * 2 * 16 * 32 * 4);
  std::vector<std::string> names;
  for (const auto& tensor : t.peakTensors) {
    names.push_back(tensor.name);
    EXPECT_EQ(tensor.bytes, 2 * 16 * 32 * 4) << tensor.name;
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"k_reshape", "ln_embed", "q_reshape", "v_bias",
                                             "v_reshape"}));
  // The first layer's output alone is alive at the first step; the arena holds the peak.
  EXPECT_EQ(t.steps[0].liveBytes, 2 * 16 * 32 * 4);
  EXPECT_GE(t.arenaBytes, t.steps[t.peakStep].liveBytes);
  const std::string text = formatMemoryTimeline(t);
  EXPECT_NE(text.find("peak: 20.00 KiB alive at layer 7 'v_reshape'"), std::string::npos) << text;
}

}  // namespace
}  // namespace kiln::inspector
