// Sweep planning and judging: axes, the product, the build options of a configuration,
// the accuracy gate and the error metrics read from `kiln compare --json`.
#include "sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace kiln::sweep {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string::npos) end = text.size();
    if (end > start) parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// FNV-1a: a short, stable suffix that keeps folder names of distinct keys distinct
// after unsafe characters are replaced.
uint32_t fnv1a(const std::string& text) {
  uint32_t h = 2166136261u;
  for (unsigned char c : text) h = (h ^ c) * 16777619u;
  return h;
}

bool knownMetric(const std::string& m) {
  return m == "cosine" || m == "max-abs" || m == "max-rel" || m == "mean-abs";
}

double metricValue(const ErrorMetrics& e, const std::string& metric) {
  if (metric == "cosine") return e.cosine;
  if (metric == "max-abs") return e.maxAbs;
  if (metric == "max-rel") return e.maxRel;
  return e.meanAbs;
}

}  // namespace

Result<Axis> parseAxis(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    return invalidArgument("--vary '" + spec + "': expected NAME=V1,V2,...");
  Axis axis{spec.substr(0, eq), {}};
  const std::string list = spec.substr(eq + 1);
  axis.values = split(list, list.find(';') != std::string::npos ? ';' : ',');
  if (axis.values.empty()) return invalidArgument("--vary '" + spec + "': no values");
  for (size_t i = 0; i < axis.values.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (axis.values[i] == axis.values[j])
        return invalidArgument("--vary " + axis.name + ": '" + axis.values[i] + "' given twice");
  if (axis.name == "precision")
    for (const std::string& v : axis.values)
      if (v != "fp32" && v != "fp16" && v != "bf16" && v != "int8")
        return invalidArgument("--vary precision: '" + v + "' is not fp32, fp16, bf16 or int8");
  return axis;
}

std::vector<Configuration> expandAxes(const std::vector<Axis>& axes) {
  std::vector<Configuration> out(1);
  for (const Axis& axis : axes) {
    std::vector<Configuration> next;
    for (const Configuration& c : out)
      for (const std::string& v : axis.values) {
        Configuration n = c;
        n.values.emplace_back(axis.name, v);
        next.push_back(std::move(n));
      }
    out = std::move(next);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].index = static_cast<int>(i);
    for (const auto& [name, value] : out[i].values)
      out[i].key += (out[i].key.empty() ? "" : " ") + name + "=" + value;
  }
  return out;
}

std::string folderName(const Configuration& configuration) {
  std::string name;
  for (const auto& [axis, value] : configuration.values) {
    if (!name.empty()) name += "_";
    for (char c : axis + "-" + value)
      name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '+';
  }
  if (name.size() > 100) name.resize(100);
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "-%08x", fnv1a(configuration.key));
  return (name.empty() ? "default" : name) + suffix;
}

std::vector<std::string> buildOptions(const Configuration& configuration) {
  std::vector<std::string> options;
  for (const auto& [axis, value] : configuration.values) {
    if (axis == "precision") {
      if (value != "fp32") options.push_back("--" + value);
      continue;
    }
    options.push_back("--" + axis);
    options.push_back(value);
  }
  return options;
}

Result<Gate> parseGate(const std::string& spec) {
  Gate gate{{}, spec};
  for (const std::string& term : split(spec, ',')) {
    const size_t ge = term.find(">="), le = term.find("<=");
    const size_t at = ge != std::string::npos ? ge : le;
    if (at == std::string::npos || at == 0)
      return invalidArgument("--max-error '" + term +
                             "': expected METRIC>=X or METRIC<=X (cosine>=0.999, max-abs<=1e-2)");
    GateTerm t{term.substr(0, at), ge != std::string::npos, 0};
    if (!knownMetric(t.metric))
      return invalidArgument("--max-error: unknown metric '" + t.metric +
                             "' (cosine, max-abs, max-rel, mean-abs)");
    if (t.atLeast != (t.metric == "cosine"))
      return invalidArgument("--max-error: " + t.metric + (t.atLeast ? " takes <=" : " takes >="));
    const std::string number = term.substr(at + 2);
    char* end = nullptr;
    t.bound = std::strtod(number.c_str(), &end);
    if (number.empty() || *end != '\0' || !std::isfinite(t.bound))
      return invalidArgument("--max-error '" + term + "': '" + number + "' is not a number");
    gate.terms.push_back(t);
  }
  if (gate.terms.empty()) return invalidArgument("--max-error: empty");
  return gate;
}

Result<ErrorMetrics> metricsFromCompareJson(const nlohmann::json& report) {
  const auto outputs = report.find("outputs");
  if (outputs == report.end() || !outputs->is_array() || outputs->empty())
    return parseError("the accuracy report has no outputs");
  ErrorMetrics m;
  for (const nlohmann::json& o : *outputs) {
    auto number = [&](const char* name, double fallback) {
      const auto it = o.find(name);
      return it != o.end() && it->is_number() ? it->get<double>() : fallback;
    };
    m.maxAbs = std::max(m.maxAbs, number("max_abs", 0));
    m.meanAbs = std::max(m.meanAbs, number("mean_abs", 0));
    m.maxRel = std::max(m.maxRel, number("max_rel", 0));
    m.cosine = std::min(m.cosine, number("cosine", 0));
    // NaN or Inf the reference does not have: the comparison of finite pairs alone
    // would call an overflowed output exact.
    for (const char* kind : {"nan", "inf"}) {
      const nlohmann::json counts = o.value(kind, nlohmann::json::object());
      m.nonFinite += std::max<int64_t>(
          0, counts.value("actual", int64_t{0}) - counts.value("expected", int64_t{0}));
    }
  }
  return m;
}

nlohmann::json metricsJson(const ErrorMetrics& m) {
  return {{"max_abs", m.maxAbs},
          {"mean_abs", m.meanAbs},
          {"max_rel", m.maxRel},
          {"cosine", m.cosine},
          {"non_finite", m.nonFinite}};
}

std::string checkGate(const Gate& gate, const ErrorMetrics& metrics) {
  if (metrics.nonFinite > 0)
    return std::to_string(metrics.nonFinite) + " NaN/Inf values where FP32 has finite ones";
  for (const GateTerm& t : gate.terms) {
    const double v = metricValue(metrics, t.metric);
    if (t.atLeast ? v >= t.bound : v <= t.bound) continue;
    char text[128];
    std::snprintf(text, sizeof text, "%s %.6g %s %.6g", t.metric.c_str(), v, t.atLeast ? "<" : ">",
                  t.bound);
    return text;
  }
  return "";
}

double paretoError(const nlohmann::json& entry, const Gate& gate) {
  const nlohmann::json error = entry.value("error", nlohmann::json::object());
  const std::string metric = gate.terms.empty() ? "max-abs" : gate.terms[0].metric;
  std::string field = metric;
  std::replace(field.begin(), field.end(), '-', '_');
  const auto it = error.find(field);
  if (it == error.end() || !it->is_number()) return std::numeric_limits<double>::infinity();
  return metric == "cosine" ? 1.0 - it->get<double>() : it->get<double>();
}

}  // namespace kiln::sweep
