// Planning and judging of `kiln sweep --shape-sweep` (shape_sweep.h).
#include "shape_sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace kiln::sweep {

Result<ShapeSweepSpec> parseShapeSweep(const std::string& spec) {
  const size_t colon = spec.rfind(':');
  const size_t dots = spec.find("..", colon == std::string::npos ? 0 : colon);
  auto bad = [&] {
    return invalidArgument("--shape-sweep '" + spec + "': write INPUT:LO..HI, e.g. x:1..64");
  };
  if (colon == std::string::npos || colon == 0 || dots == std::string::npos) return bad();
  ShapeSweepSpec out;
  out.input = spec.substr(0, colon);
  const std::string lo = spec.substr(colon + 1, dots - colon - 1), hi = spec.substr(dots + 2);
  auto number = [](const std::string& text, int64_t* value) {
    if (text.empty() || text.size() > 12 ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return false;
    *value = std::stoll(text);
    return true;
  };
  if (!number(lo, &out.lo) || !number(hi, &out.hi)) return bad();
  if (out.lo < 1 || out.lo > out.hi)
    return invalidArgument("--shape-sweep '" + spec + "': needs 1 <= LO <= HI");
  return out;
}

std::vector<int64_t> shapeSweepPoints(int64_t lo, int64_t hi, int maxPoints) {
  std::vector<int64_t> all = {lo};
  for (int64_t p = 1; p < hi && p <= (int64_t{1} << 40); p *= 2)
    if (p > lo) all.push_back(p);
  if (hi != lo) all.push_back(hi);
  if (static_cast<int>(all.size()) <= maxPoints || maxPoints < 2) return all;
  // Evenly in log scale: keep the ends, pick the nearest inner points.
  std::vector<int64_t> kept = {lo};
  const double a = std::log(static_cast<double>(lo)), b = std::log(static_cast<double>(hi));
  for (int k = 1; k + 1 < maxPoints; ++k) {
    const double target = std::exp(a + (b - a) * k / (maxPoints - 1));
    int64_t best = all[1];
    for (size_t i = 1; i + 1 < all.size(); ++i)
      if (std::fabs(std::log(static_cast<double>(all[i])) - std::log(target)) <
          std::fabs(std::log(static_cast<double>(best)) - std::log(target)))
        best = all[i];
    if (best != kept.back()) kept.push_back(best);
  }
  kept.push_back(hi);
  return kept;
}

namespace {

// The opt (an index in [a, b]) under which the group's worst slowdown is least, and
// that slowdown; infinity when no opt of the group ran every judged point.
std::pair<size_t, double> bestOpt(const std::vector<std::vector<double>>& ms, size_t a, size_t b) {
  std::pair<size_t, double> best{a, std::numeric_limits<double>::infinity()};
  for (size_t o = a; o <= b; ++o) {
    double worst = 1;
    for (size_t j = a; j <= b && worst < std::numeric_limits<double>::infinity(); ++j) {
      if (ms[j][j] <= 0) continue;  // its own time is missing: not judged
      worst = ms[o][j] > 0 ? std::max(worst, ms[o][j] / ms[j][j])
                           : std::numeric_limits<double>::infinity();
    }
    if (worst < best.second) best = {o, worst};
  }
  return best;
}

}  // namespace

std::vector<ProfileProposal> proposeProfiles(const std::vector<int64_t>& points,
                                             const std::vector<std::vector<double>>& ms, int64_t lo,
                                             int64_t hi, double tolerance) {
  std::vector<ProfileProposal> out;
  size_t a = 0;
  while (a < points.size()) {
    size_t b = a;
    auto best = bestOpt(ms, a, b);
    // Any subrange of a feasible group is feasible, so growing each group as far as it
    // goes gives the fewest groups.
    while (b + 1 < points.size()) {
      auto wider = bestOpt(ms, a, b + 1);
      if (wider.second > 1 + tolerance) break;
      ++b;
      best = wider;
    }
    ProfileProposal p;
    p.min = out.empty() ? lo : out.back().max + 1;
    p.max = b + 1 == points.size() ? hi : points[b];
    p.opt = points[best.first];
    p.worstSlowdown = best.second;
    out.push_back(p);
    a = b + 1;
  }
  return out;
}

std::string formatShapeSweep(const std::vector<int64_t>& points,
                             const std::vector<std::vector<double>>& ms,
                             const std::vector<ProfileProposal>& proposals, double tolerance) {
  std::string text = "median ms: rows built with opt = the value, columns run at the value\n";
  char cell[64];
  std::snprintf(cell, sizeof cell, "%10s", "opt \\ run");
  text += cell;
  for (int64_t p : points) {
    std::snprintf(cell, sizeof cell, " %10lld", static_cast<long long>(p));
    text += cell;
  }
  text += "\n";
  for (size_t i = 0; i < points.size(); ++i) {
    std::snprintf(cell, sizeof cell, "%10lld", static_cast<long long>(points[i]));
    text += cell;
    for (size_t j = 0; j < points.size(); ++j) {
      if (ms[i][j] > 0)
        std::snprintf(cell, sizeof cell, " %10.4f", ms[i][j]);
      else
        std::snprintf(cell, sizeof cell, " %10s", "-");
      text += cell;
    }
    text += "\n";
  }
  std::snprintf(cell, sizeof cell, "%.0f%%", tolerance * 100);
  text += std::to_string(proposals.size()) +
          (proposals.size() == 1 ? " profile keeps" : " profiles keep") + " every point within " +
          cell + " of its own opt:\n";
  for (const ProfileProposal& p : proposals) {
    std::snprintf(cell, sizeof cell, "%.2fx", p.worstSlowdown);
    text += "  " + std::to_string(p.min) + ".." + std::to_string(p.max) + ", opt " +
            std::to_string(p.opt) + " (worst " +
            (std::isfinite(p.worstSlowdown) ? std::string(cell) : std::string("unmeasured")) +
            ")\n";
  }
  return text;
}

}  // namespace kiln::sweep
