// Reports shared by the CPU and CUDA paths of `kiln run`: latency statistics and
// output summaries (text and JSON).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "kiln/reference_backend.h"

namespace kiln::cli {

struct LatencyStats {
  double min = 0, mean = 0, median = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
};
// Order statistics of `ms` (empty -> all zero).
LatencyStats summarize(std::vector<double> ms);
// name, dtype, shape, min/max/mean, non_finite count; `withValues` adds every element.
nlohmann::json tensorSummary(const NamedTensor& out, bool withValues);
// One line per output: name, dtype, shape, stats and the first values.
void printSummary(const nlohmann::json& j, const Tensor& t);

}  // namespace kiln::cli
