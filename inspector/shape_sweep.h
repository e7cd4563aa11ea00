// `kiln sweep MODEL --shape-sweep INPUT:lo..hi`: time a dynamic dimension across its range
// and propose optimization profiles. This file plans the points and judges the timings;
// app/cli/sweep_shapes.cpp builds and runs the plans. No Qt, no engine calls.
//
// The measurement: one plan per point p_i (min = lo, opt = p_i, max = hi, so every plan
// runs every point), each run at every point: ms[i][j] is plan i at point j. A plan
// runs its own opt best or nearly; how much worse the others do says how many profiles
// the range needs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/status.h"

namespace kiln::sweep {

struct ShapeSweepSpec {
  std::string input;  // the graph input whose first symbolic dimension is swept
  int64_t lo = 0, hi = 0;
};
// "x:1..64" (the name may contain ':'); lo >= 1, lo <= hi.
Result<ShapeSweepSpec> parseShapeSweep(const std::string& spec);

// lo, hi and the powers of two strictly between, thinned to at most `maxPoints`
// (lo and hi always kept; the rest evenly in log scale).
std::vector<int64_t> shapeSweepPoints(int64_t lo, int64_t hi, int maxPoints = 8);

// One proposed profile: the swept dimension's min..max, its opt, and the worst ratio of
// a covered point's time under this opt to its time under its own opt.
struct ProfileProposal {
  int64_t min = 0, opt = 0, max = 0;
  double worstSlowdown = 1;
};
// The fewest contiguous groups of points such that each group has an opt (one of its
// points) under which every point of the group runs within (1 + tolerance) of its own
// opt's time; the profiles cover lo..hi without gaps (a group reaches up to its last
// point; the next starts one above). Points whose own timing is missing (<= 0) are
// covered but not judged. `ms` is points x points (see above).
std::vector<ProfileProposal> proposeProfiles(const std::vector<int64_t>& points,
                                             const std::vector<std::vector<double>>& ms,
                                             int64_t lo, int64_t hi, double tolerance);

// The timing matrix as a table (rows: opt; columns: the run point, "-" where missing)
// and the proposed profiles' ranges of the swept dimension.
std::string formatShapeSweep(const std::vector<int64_t>& points,
                             const std::vector<std::vector<double>>& ms,
                             const std::vector<ProfileProposal>& proposals, double tolerance);

}  // namespace kiln::sweep
