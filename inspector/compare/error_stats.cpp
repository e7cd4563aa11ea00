#include "compare/error_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

namespace kiln::compare {
namespace {

std::vector<double> toDoubles(const Tensor& t) {
  std::vector<double> values(static_cast<size_t>(t.numel()));
  if (t.type() == DataType::kFloat32) {
    const float* data = t.data<float>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = data[i];
  } else {
    for (size_t i = 0; i < values.size(); ++i) values[i] = t.valueAsDouble(static_cast<int64_t>(i));
  }
  return values;
}

// Indices of the k largest values of row [begin, begin + n) (NaN ranks lowest), largest first.
std::vector<int64_t> topIndices(const std::vector<double>& v, int64_t begin, int64_t n, int k) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  auto key = [&](int64_t i) {
    const double x = v[begin + i];
    return std::isnan(x) ? -std::numeric_limits<double>::infinity() : x;
  };
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
    return key(a) > key(b) || (key(a) == key(b) && a < b);
  });
  order.resize(k);
  return order;
}

double quantileOf(std::vector<float>& values, double q) {
  if (values.empty()) return 0;
  const size_t index =
      std::min(values.size() - 1, static_cast<size_t>(std::ceil(q * values.size())) - (q > 0));
  std::nth_element(values.begin(), values.begin() + index, values.end());
  return values[index];
}

int histogramBin(double absError) {
  const int decade = static_cast<int>(std::floor(std::log10(absError)));
  return std::clamp(decade - ErrorHistogram::kFirstDecade, 0, ErrorHistogram::kBins - 1);
}

// "nan/inf 1/0 (expected 0/0)", or "" when both sides are finite throughout.
std::string nonFiniteCounts(const ErrorStats& s) {
  if (s.nanActual + s.infActual + s.nanExpected + s.infExpected == 0) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "nan/inf %lld/%lld (expected %lld/%lld)",
                static_cast<long long>(s.nanActual), static_cast<long long>(s.infActual),
                static_cast<long long>(s.nanExpected), static_cast<long long>(s.infExpected));
  return buf;
}

}  // namespace

ErrorAccumulator::ErrorAccumulator(std::string name, Tolerance tolerance, int topK)
    : m_tolerance(tolerance) {
  m_stats.name = std::move(name);
  m_stats.topK = std::max(0, topK);
}

void ErrorAccumulator::add(const Tensor& actual, const Tensor& expected) {
  ErrorStats& s = m_stats;
  if (!s.comparable) return;
  if (s.runs == 0) {
    s.dtype = dataTypeName(actual.type());
    s.shape = actual.shape();
  }
  ++s.runs;
  if (actual.type() != expected.type() || actual.shape() != expected.shape() ||
      actual.shape() != s.shape) {
    s.comparable = false;
    s.problem = std::string(dataTypeName(actual.type())) + " " + shapeToString(actual.shape()) +
                " against " + dataTypeName(expected.type()) + " " + shapeToString(expected.shape());
    return;
  }
  if (actual.type() == DataType::kString) {
    CompareResult exact = compareTensors(actual, expected, m_tolerance);
    s.elements += actual.numel();
    if (!exact.match && s.reason.empty()) s.reason = exact.reason;
    s.outsideTolerance += exact.match ? 0 : 1;
    return;
  }
  const std::vector<double> a = toDoubles(actual), e = toDoubles(expected);
  std::vector<double> absErrors(a.size(), std::numeric_limits<double>::quiet_NaN());
  for (size_t i = 0; i < a.size(); ++i) {
    s.nanActual += std::isnan(a[i]);
    s.infActual += std::isinf(a[i]);
    s.nanExpected += std::isnan(e[i]);
    s.infExpected += std::isinf(e[i]);
    if (!withinTolerance(a[i], e[i], m_tolerance)) {
      if (s.outsideTolerance++ == 0) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "element %zu: %.9g, expected %.9g", i, a[i], e[i]);
        s.reason = buf;
      }
    }
    if (!std::isfinite(a[i]) || !std::isfinite(e[i])) continue;
    const double abs = std::fabs(a[i] - e[i]);
    absErrors[i] = abs;
    m_abs.push_back(static_cast<float>(abs));
    m_sumAbs += abs;
    if (abs > s.maxAbs || s.worstIndex < 0) {
      s.maxAbs = abs;
      s.worstIndex = static_cast<int64_t>(i);
      s.worstActual = a[i];
      s.worstExpected = e[i];
    }
    if (e[i] != 0) {
      const double rel = abs / std::fabs(e[i]);
      m_rel.push_back(static_cast<float>(rel));
      m_sumRel += rel;
      s.maxRel = std::max(s.maxRel, rel);
    }
    m_dot += a[i] * e[i];
    m_normA += a[i] * a[i];
    m_normE += e[i] * e[i];
    if (abs < std::pow(10.0, ErrorHistogram::kFirstDecade))
      ++s.histogram.belowFirst;
    else
      ++s.histogram.counts[histogramBin(abs)];
  }
  s.elements += static_cast<int64_t>(a.size());
  const int64_t columns = s.shape.empty() ? 1 : std::max<int64_t>(1, s.shape.back());
  if (s.topK > 0 && columns >= 2 && !a.empty()) addTopK(a, e, columns);
  if (s.runs == 1 && !a.empty()) addHeatmap(absErrors, columns);
}

void ErrorAccumulator::addTopK(const std::vector<double>& a, const std::vector<double>& e,
                               int64_t columns) {
  const int k = static_cast<int>(std::min<int64_t>(m_stats.topK, columns));
  m_stats.topK = k;  // as computed: capped at the number of classes
  for (int64_t row = 0; row * columns < static_cast<int64_t>(a.size()); ++row) {
    std::vector<int64_t> ta = topIndices(a, row * columns, columns, k);
    std::vector<int64_t> te = topIndices(e, row * columns, columns, k);
    m_top1Agree += ta[0] == te[0];
    int found = 0;
    for (int64_t i : te) found += std::find(ta.begin(), ta.end(), i) != ta.end();
    m_topOverlapSum += static_cast<double>(found) / k;
    ++m_stats.topRows;
  }
}

void ErrorAccumulator::addHeatmap(const std::vector<double>& absErrors, int64_t columns) {
  ErrorHeatmap& h = m_stats.heatmap;
  h.tensorColumns = columns;
  h.tensorRows = static_cast<int64_t>(absErrors.size()) / columns;
  h.rows = static_cast<int>(std::min<int64_t>(h.tensorRows, ErrorHeatmap::kMaxCells));
  h.columns = static_cast<int>(std::min<int64_t>(h.tensorColumns, ErrorHeatmap::kMaxCells));
  h.cells.assign(static_cast<size_t>(h.rows) * h.columns, 0.0);
  for (size_t i = 0; i < absErrors.size(); ++i) {
    const int64_t row = static_cast<int64_t>(i) / columns,
                  column = static_cast<int64_t>(i) % columns;
    double& cell =
        h.cells[(row * h.rows / h.tensorRows) * h.columns + column * h.columns / h.tensorColumns];
    if (std::isnan(absErrors[i]) || std::isnan(cell))
      cell = std::numeric_limits<double>::quiet_NaN();
    else
      cell = std::max(cell, absErrors[i]);
  }
}

ErrorStats ErrorAccumulator::finish() {
  ErrorStats s = std::move(m_stats);
  if (!s.comparable) {
    s.pass = false;
    s.reason = "not comparable: " + s.problem;
    return s;
  }
  if (!m_abs.empty()) {
    s.meanAbs = m_sumAbs / m_abs.size();
    for (double q : {0.5, 0.9, 0.99, 0.999}) s.quantiles.push_back({q, quantileOf(m_abs, q)});
    s.medianAbs = s.quantiles[0].absError;
  }
  if (!m_rel.empty()) {
    s.meanRel = m_sumRel / m_rel.size();
    s.medianRel = quantileOf(m_rel, 0.5);
  }
  s.finitePairs = static_cast<int64_t>(m_abs.size());
  if (m_normA > 0 && m_normE > 0)
    s.cosine = m_dot / (std::sqrt(m_normA) * std::sqrt(m_normE));
  else  // both all zero: the same vector; one zero, or no finite pair at all: unrelated
    s.cosine = (m_normA == 0 && m_normE == 0 && s.finitePairs > 0) ? 1.0 : 0.0;
  if (s.topRows > 0) {
    s.top1Agreement = static_cast<double>(m_top1Agree) / s.topRows;
    s.topKOverlap = m_topOverlapSum / s.topRows;
  } else {
    s.topK = 0;
  }
  s.pass = s.outsideTolerance == 0;
  if (!s.pass && s.outsideTolerance > 1)
    s.reason += " (" + std::to_string(s.outsideTolerance) + " elements outside the tolerance)";
  return s;
}

ErrorStats computeErrorStats(const std::string& name, const Tensor& actual, const Tensor& expected,
                             const Tolerance& tolerance, int topK) {
  ErrorAccumulator accumulator(name, tolerance, topK);
  accumulator.add(actual, expected);
  return accumulator.finish();
}

Result<std::vector<ErrorStats>> compareOutputRuns(
    const std::vector<std::vector<NamedTensor>>& actual,
    const std::vector<std::vector<NamedTensor>>& expected, const Tolerance& tolerance, int topK) {
  if (actual.size() != expected.size() || expected.empty())
    return invalidArgument("comparing outputs: " + std::to_string(actual.size()) +
                           " runs against " + std::to_string(expected.size()) + " expected runs");
  std::vector<ErrorAccumulator> outputs;
  for (const NamedTensor& out : expected.front()) outputs.emplace_back(out.name, tolerance, topK);
  for (size_t run = 0; run < expected.size(); ++run) {
    if (actual[run].size() != outputs.size() || expected[run].size() != outputs.size())
      return invalidArgument("comparing outputs: run " + std::to_string(run) + " has " +
                             std::to_string(actual[run].size()) + " outputs, expected " +
                             std::to_string(outputs.size()));
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (actual[run][i].name != expected[run][i].name)
        return invalidArgument("comparing outputs: output '" + actual[run][i].name + "' where '" +
                               expected[run][i].name + "' was expected");
      outputs[i].add(actual[run][i].tensor, expected[run][i].tensor);
    }
  }
  std::vector<ErrorStats> stats;
  for (ErrorAccumulator& output : outputs) stats.push_back(output.finish());
  return stats;
}

nlohmann::json errorStatsJson(const ErrorStats& s, bool withPlots) {
  nlohmann::json j = {{"name", s.name},
                      {"pass", s.pass},
                      {"dtype", s.dtype},
                      {"shape", s.shape},
                      {"elements", s.elements},
                      {"finite_pairs", s.finitePairs},
                      {"runs", s.runs},
                      {"max_abs", s.maxAbs},
                      {"mean_abs", s.meanAbs},
                      {"median_abs", s.medianAbs},
                      {"max_rel", s.maxRel},
                      {"mean_rel", s.meanRel},
                      {"median_rel", s.medianRel},
                      {"cosine", s.cosine},
                      {"outside_tolerance", s.outsideTolerance},
                      {"nan", {{"actual", s.nanActual}, {"expected", s.nanExpected}}},
                      {"inf", {{"actual", s.infActual}, {"expected", s.infExpected}}}};
  if (!s.comparable) j["problem"] = s.problem;
  if (!s.reason.empty()) j["reason"] = s.reason;
  nlohmann::json quantiles = nlohmann::json::object();
  for (const ErrorQuantile& q : s.quantiles) {
    char key[16];
    std::snprintf(key, sizeof key, "p%g", q.quantile * 100);
    quantiles[key] = q.absError;
  }
  j["abs_quantiles"] = quantiles;
  if (s.worstIndex >= 0)
    j["worst"] = {
        {"index", s.worstIndex}, {"actual", s.worstActual}, {"expected", s.worstExpected}};
  if (s.topK > 0)
    j["top_k"] = {{"k", s.topK},
                  {"rows", s.topRows},
                  {"top1_agreement", s.top1Agreement},
                  {"top_k_overlap", s.topKOverlap}};
  if (withPlots) {
    j["histogram"] = {{"first_decade", ErrorHistogram::kFirstDecade},
                      {"below_first", s.histogram.belowFirst},
                      {"counts", s.histogram.counts}};
    nlohmann::json cells = nlohmann::json::array();
    for (double c : s.heatmap.cells)
      cells.push_back(std::isnan(c) ? nlohmann::json() : nlohmann::json(c));
    j["heatmap"] = {{"rows", s.heatmap.rows},
                    {"columns", s.heatmap.columns},
                    {"tensor_rows", s.heatmap.tensorRows},
                    {"tensor_columns", s.heatmap.tensorColumns},
                    {"cells", cells}};
  }
  return j;
}

std::string formatErrorStatsLine(const ErrorStats& s, size_t nameWidth) {
  char buf[400];
  if (!s.comparable) {
    std::snprintf(buf, sizeof buf, "%-*s FAIL %s", static_cast<int>(nameWidth), s.name.c_str(),
                  s.problem.c_str());
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "%-*s %-4s max_abs %-10.3e mean_abs %-10.3e median_abs %-10.3e max_rel %-10.3e "
                "cos %.6f",
                static_cast<int>(nameWidth), s.name.c_str(), s.pass ? "ok" : "FAIL", s.maxAbs,
                s.meanAbs, s.medianAbs, s.maxRel, s.cosine);
  std::string line = buf;
  const std::string nonFinite = nonFiniteCounts(s);
  if (!nonFinite.empty()) line += "  " + nonFinite;
  if (s.topK > 0) {
    std::snprintf(buf, sizeof buf, "  top1 %.1f%% top%d %.1f%%", 100 * s.top1Agreement, s.topK,
                  100 * s.topKOverlap);
    line += buf;
  }
  return line;
}

std::string formatAccuracySummary(const std::vector<ErrorStats>& stats) {
  std::string text;
  char line[320];
  for (const ErrorStats& s : stats) {
    if (!s.comparable) {
      text += s.name + ": not comparable: " + s.problem + "\n";
      continue;
    }
    std::snprintf(line, sizeof line,
                  "%s: max abs %.4g, mean abs %.4g, max rel %.3g%%, mean rel %.3g%%, cosine %.6f",
                  s.name.c_str(), s.maxAbs, s.meanAbs, 100 * s.maxRel, 100 * s.meanRel, s.cosine);
    text += line;
    const std::string nonFinite = nonFiniteCounts(s);
    if (!nonFinite.empty()) text += ", " + nonFinite;
    if (s.topK > 0) {
      const long long agreeing = std::llround(s.top1Agreement * static_cast<double>(s.topRows));
      std::snprintf(line, sizeof line, ", top-1 %lld/%lld (%.1f%%)", agreeing,
                    static_cast<long long>(s.topRows), 100 * s.top1Agreement);
      text += line;
    }
    text += "\n";
  }
  return text;
}

}  // namespace kiln::compare
