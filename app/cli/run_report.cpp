#include "cli/run_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kiln::cli {

LatencyStats summarize(std::vector<double> ms) {
  LatencyStats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) {
    return ms[std::min(ms.size() - 1, static_cast<size_t>(std::ceil(p * ms.size())) - 1)];
  };
  s.min = ms.front();
  s.max = ms.back();
  for (double v : ms) s.mean += v / ms.size();
  s.median = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  s.p90 = pct(0.90);
  s.p95 = pct(0.95);
  s.p99 = pct(0.99);
  return s;
}

nlohmann::json tensorSummary(const NamedTensor& out, bool withValues) {
  const Tensor& t = out.tensor;
  nlohmann::json j = {{"name", out.name}, {"dtype", dataTypeName(t.type())}, {"shape", t.shape()}};
  if (t.type() == DataType::kString) {
    if (withValues) j["values"] = t.strings();
    return j;
  }
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nonFinite = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.valueAsDouble(i);
    if (!std::isfinite(v)) {
      ++nonFinite;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  const int64_t finite = t.numel() - nonFinite;
  j["min"] = finite ? lo : 0.0;
  j["max"] = finite ? hi : 0.0;
  j["mean"] = finite ? sum / finite : 0.0;
  j["non_finite"] = nonFinite;
  if (withValues) {
    std::vector<double> values(t.numel());
    for (int64_t i = 0; i < t.numel(); ++i) values[i] = t.valueAsDouble(i);
    j["values"] = values;
  }
  return j;
}

void printSummary(const nlohmann::json& j, const Tensor& t) {
  std::printf("  %-24s %-8s %-18s", escapeControlCharacters(j["name"].get<std::string>()).c_str(),
              j["dtype"].get<std::string>().c_str(), shapeToString(t.shape()).c_str());
  if (t.type() != DataType::kString) {
    std::printf(" min %.6g max %.6g mean %.6g", j["min"].get<double>(), j["max"].get<double>(),
                j["mean"].get<double>());
    if (j["non_finite"].get<int64_t>() > 0)
      std::printf(" (%lld non-finite)", static_cast<long long>(j["non_finite"].get<int64_t>()));
    std::printf("  [");
    for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 5); ++i)
      std::printf("%s%.5g", i ? ", " : "", t.valueAsDouble(i));
    std::printf("%s]", t.numel() > 5 ? ", ..." : "");
  }
  std::printf("\n");
}

}  // namespace kiln::cli
