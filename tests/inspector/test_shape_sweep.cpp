// The shape sweep's plan and judgement (inspector/shape_sweep.h): specs, the points of a
// range, and the profiles proposed from timing matrices built by hand.
#include <gtest/gtest.h>

#include "shape_sweep.h"

namespace kiln::sweep {
namespace {

TEST(ShapeSweep, ParsesInputAndRange) {
  auto spec = parseShapeSweep("input:ids:1..64");
  ASSERT_TRUE(spec.isOk()) << spec.status().message();
  EXPECT_EQ(spec->input, "input:ids");
  EXPECT_EQ(spec->lo, 1);
  EXPECT_EQ(spec->hi, 64);
  for (const char* bad : {"x", "x:1-64", ":1..4", "x:0..4", "x:8..4", "x:a..4", "x:1..", "x:..4"})
    EXPECT_FALSE(parseShapeSweep(bad).isOk()) << bad;
}

TEST(ShapeSweep, PointsArePowersOfTwoBetweenTheEnds) {
  EXPECT_EQ(shapeSweepPoints(1, 64), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(shapeSweepPoints(3, 100), (std::vector<int64_t>{3, 4, 8, 16, 32, 64, 100}));
  EXPECT_EQ(shapeSweepPoints(5, 5), (std::vector<int64_t>{5}));
  const std::vector<int64_t> thinned = shapeSweepPoints(1, 4096, 5);
  ASSERT_EQ(thinned.size(), 5u);
  EXPECT_EQ(thinned.front(), 1);
  EXPECT_EQ(thinned.back(), 4096);
  EXPECT_EQ(thinned[2], 64);  // the middle of 1..4096 in log scale
}

// ms[i][j]: the plan built with opt = points[i], run at points[j].
TEST(ShapeSweep, OneProfileWhenOneOptServesEveryPoint) {
  const std::vector<int64_t> points = {1, 2, 4, 8};
  const std::vector<std::vector<double>> ms = {
      {1.0, 2.2, 4.6, 9.5}, {1.05, 2.0, 4.3, 8.9}, {1.04, 2.05, 4.0, 8.3}, {1.3, 2.4, 4.2, 8.0}};
  const auto p = proposeProfiles(points, ms, 1, 8, 0.10);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].min, 1);
  EXPECT_EQ(p[0].max, 8);
  EXPECT_EQ(p[0].opt, 4);  // worst 1.04x (at 1); opt 2 is 1.11x at 8
  EXPECT_NEAR(p[0].worstSlowdown, 1.04, 1e-9);
}

TEST(ShapeSweep, TwoRegimesGiveTwoProfilesWithoutGaps) {
  const std::vector<int64_t> points = {1, 2, 4, 8, 16};
  // Small opts are slow at large points and the reverse.
  const std::vector<std::vector<double>> ms = {{1.0, 2.0, 4.1, 12.0, 30.0},
                                               {1.0, 2.0, 4.0, 12.0, 30.0},
                                               {1.05, 2.1, 4.0, 12.5, 31.0},
                                               {1.6, 3.0, 5.5, 8.0, 16.5},
                                               {1.7, 3.1, 5.8, 8.5, 16.0}};
  const auto p = proposeProfiles(points, ms, 1, 16, 0.10);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].min, 1);
  EXPECT_EQ(p[0].max, 4);
  EXPECT_EQ(p[0].opt, 2);
  EXPECT_EQ(p[1].min, 5);  // one above the first profile's max
  EXPECT_EQ(p[1].max, 16);
  EXPECT_EQ(p[1].opt, 8);
  EXPECT_NEAR(p[1].worstSlowdown, 16.5 / 16.0, 1e-9);
  const std::string text = formatShapeSweep(points, ms, p, 0.10);
  EXPECT_NE(text.find("2 profiles keep every point within 10%"), std::string::npos) << text;
  EXPECT_NE(text.find("5..16, opt 8 (worst 1.03x)"), std::string::npos) << text;
}

TEST(ShapeSweep, MissingTimingsAreCoveredButNotJudged) {
  const std::vector<int64_t> points = {1, 2, 4};
  // Plan 2 failed to build (its row is missing) and so has no own time at point 2.
  const std::vector<std::vector<double>> ms = {{1.0, 2.0, 4.0}, {-1, -1, -1}, {1.02, 2.1, 4.0}};
  const auto p = proposeProfiles(points, ms, 1, 4, 0.10);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].opt, 1);
  EXPECT_EQ(p[0].min, 1);
  EXPECT_EQ(p[0].max, 4);
  EXPECT_NE(formatShapeSweep(points, ms, p, 0.10).find("-"), std::string::npos);
}

}  // namespace
}  // namespace kiln::sweep
