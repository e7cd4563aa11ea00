// The activation memory planner: overlapping lifetimes never share bytes, disjoint
// ones reuse them, offsets are aligned, and the peak is what a hand count gives.
#include <gtest/gtest.h>

#include <random>

#include "plan/memory_planner.h"

namespace kiln {
namespace {

bool overlaps(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  return a0 < b1 && b0 < a1;
}

TEST(MemoryPlannerTest, ChainReusesBuffers) {
  // a -> b -> c -> d: each buffer lives across two steps; a and c can share.
  std::vector<BufferLifetime> buffers = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  MemoryPlan plan = planMemory(buffers, 256);
  EXPECT_EQ(plan.arenaBytes, 2 * 1024);
  EXPECT_EQ(plan.unsharedBytes, 4 * 1024);
  EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
}

TEST(MemoryPlannerTest, RandomLifetimesNeverCollide) {
  std::mt19937 rng(7);
  std::vector<BufferLifetime> buffers;
  for (int i = 0; i < 300; ++i) {
    int first = static_cast<int>(rng() % 100);
    int last = first + static_cast<int>(rng() % 20);
    buffers.push_back({static_cast<int64_t>(1 + rng() % 100000), first, last});
  }
  MemoryPlan plan = planMemory(buffers, 256);
  int64_t peakLive = 0;
  for (int step = 0; step < 120; ++step) {
    int64_t live = 0;
    for (const auto& b : buffers)
      if (b.firstStep <= step && step <= b.lastStep) live += (b.bytes + 255) / 256 * 256;
    peakLive = std::max(peakLive, live);
  }
  EXPECT_GE(plan.arenaBytes, peakLive);
  EXPECT_LT(plan.arenaBytes, plan.unsharedBytes);
  for (size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % 256, 0);
    EXPECT_LE(plan.offsets[i] + buffers[i].bytes, plan.arenaBytes);
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      bool sameTime = buffers[i].firstStep <= buffers[j].lastStep &&
                      buffers[j].firstStep <= buffers[i].lastStep;
      if (!sameTime) continue;
      EXPECT_FALSE(overlaps(plan.offsets[i], plan.offsets[i] + buffers[i].bytes, plan.offsets[j],
                            plan.offsets[j] + buffers[j].bytes))
          << "buffers " << i << " and " << j << " collide";
    }
  }
}

TEST(MemoryPlannerTest, EmptyAndZeroSized) {
  EXPECT_EQ(planMemory({}, 256).arenaBytes, 0);
  MemoryPlan plan = planMemory({{0, 0, 0}}, 256);
  EXPECT_EQ(plan.arenaBytes, 256);
}

}  // namespace
}  // namespace kiln
