// Reading back what kiln compare --output writes (accuracyReportJson): the studio runs a
// comparison on a remote target through `kiln --remote ... compare` and shows the report
// that comes back as it shows one computed in process. The file is untrusted input: a
// wrong type is an error naming the field, never an exception.
#include <cmath>
#include <limits>

#include "compare/accuracy_compare.h"
#include "compare/error_stats.h"

namespace kiln::compare {
namespace {

using nlohmann::json;

// Field readers that leave `out` unchanged when the field is absent and fail on a wrong
// type (a missing optional field keeps the default).
class Reader {
 public:
  explicit Reader(std::string context) : m_context(std::move(context)) {}
  template <typename T>
  void get(const json& object, const char* field, T* out) {
    const auto it = object.find(field);
    if (it == object.end() || it->is_null()) return;
    try {
      *out = it->get<T>();
    } catch (const json::exception&) {
      fail(std::string("'") + field + "' has the wrong type");
    }
  }
  const json& object(const json& parent, const char* field) {
    static const json kEmpty = json::object();
    const auto it = parent.find(field);
    if (it == parent.end() || it->is_null()) return kEmpty;
    if (!it->is_object()) fail(std::string("'") + field + "' is not an object");
    return it->is_object() ? *it : kEmpty;
  }
  void fail(const std::string& why) {
    if (m_error.empty()) m_error = m_context + ": " + why;
  }
  const std::string& error() const { return m_error; }

 private:
  std::string m_context, m_error;
};

void readPlots(Reader& r, const json& j, ErrorStats* s) {
  const json& histogram = r.object(j, "histogram");
  r.get(histogram, "below_first", &s->histogram.belowFirst);
  r.get(histogram, "counts", &s->histogram.counts);
  if (!histogram.empty() && s->histogram.counts.size() != size_t(ErrorHistogram::kBins))
    r.fail("the histogram does not have " + std::to_string(ErrorHistogram::kBins) + " bins");
  const json& heatmap = r.object(j, "heatmap");
  r.get(heatmap, "rows", &s->heatmap.rows);
  r.get(heatmap, "columns", &s->heatmap.columns);
  r.get(heatmap, "tensor_rows", &s->heatmap.tensorRows);
  r.get(heatmap, "tensor_columns", &s->heatmap.tensorColumns);
  if (heatmap.empty()) return;
  const json cells = heatmap.value("cells", json::array());
  if (!cells.is_array() || s->heatmap.rows < 0 || s->heatmap.columns < 0 ||
      s->heatmap.rows > ErrorHeatmap::kMaxCells || s->heatmap.columns > ErrorHeatmap::kMaxCells ||
      cells.size() != size_t(s->heatmap.rows) * size_t(s->heatmap.columns))
    return r.fail("the heatmap's cells do not match its rows x columns");
  for (const json& cell : cells)  // null: a pair that was not finite
    s->heatmap.cells.push_back(cell.is_number() ? cell.get<double>()
                                                : std::numeric_limits<double>::quiet_NaN());
}

}  // namespace

Result<ErrorStats> errorStatsFromJson(const json& j) {
  if (!j.is_object()) return invalidArgument("compare report: a tensor entry is not an object");
  ErrorStats s;
  Reader r("compare report: tensor '" + j.value("name", std::string("?")) + "'");
  r.get(j, "name", &s.name);
  r.get(j, "pass", &s.pass);
  r.get(j, "dtype", &s.dtype);
  r.get(j, "shape", &s.shape);
  r.get(j, "elements", &s.elements);
  r.get(j, "finite_pairs", &s.finitePairs);
  r.get(j, "runs", &s.runs);
  for (auto [field, out] : {std::pair{"max_abs", &s.maxAbs},
                            {"mean_abs", &s.meanAbs},
                            {"median_abs", &s.medianAbs},
                            {"max_rel", &s.maxRel},
                            {"mean_rel", &s.meanRel},
                            {"median_rel", &s.medianRel},
                            {"cosine", &s.cosine}})
    r.get(j, field, out);
  r.get(j, "outside_tolerance", &s.outsideTolerance);
  r.get(r.object(j, "nan"), "actual", &s.nanActual);
  r.get(r.object(j, "nan"), "expected", &s.nanExpected);
  r.get(r.object(j, "inf"), "actual", &s.infActual);
  r.get(r.object(j, "inf"), "expected", &s.infExpected);
  if (j.contains("problem")) {
    s.comparable = false;
    r.get(j, "problem", &s.problem);
  }
  r.get(j, "reason", &s.reason);
  for (const auto& [key, value] : r.object(j, "abs_quantiles").items()) {
    // "p50", "p99.9": the quantile in percent.
    char* end = nullptr;
    const double percent = key.size() > 1 ? std::strtod(key.c_str() + 1, &end) : NAN;
    if (!value.is_number() || !end || *end || !(percent >= 0 && percent <= 100)) {
      r.fail("abs_quantiles '" + key + "' is not pN: number");
      break;
    }
    s.quantiles.push_back({percent / 100, value.get<double>()});
  }
  if (const json& worst = r.object(j, "worst"); !worst.empty()) {
    r.get(worst, "index", &s.worstIndex);
    r.get(worst, "actual", &s.worstActual);
    r.get(worst, "expected", &s.worstExpected);
  }
  if (const json& topK = r.object(j, "top_k"); !topK.empty()) {
    r.get(topK, "k", &s.topK);
    r.get(topK, "rows", &s.topRows);
    r.get(topK, "top1_agreement", &s.top1Agreement);
    r.get(topK, "top_k_overlap", &s.topKOverlap);
  }
  if (j.contains("histogram") || j.contains("heatmap")) readPlots(r, j, &s);
  if (!r.error().empty()) return invalidArgument(r.error());
  return s;
}

Result<AccuracyReport> accuracyReportFromJson(const json& j) {
  if (!j.is_object() || !j.contains("outputs") || !j["outputs"].is_array())
    return invalidArgument("not a kiln compare report (no 'outputs' list)");
  AccuracyReport report;
  Reader r("compare report");
  r.get(j, "a", &report.sideA);
  r.get(j, "b", &report.sideB);
  r.get(r.object(j, "tolerance"), "atol", &report.tolerance.atol);
  r.get(r.object(j, "tolerance"), "rtol", &report.tolerance.rtol);
  r.get(j, "runs", &report.runs);
  r.get(j, "pass", &report.pass);
  if (!r.error().empty()) return invalidArgument(r.error());
  for (const json& output : j["outputs"]) {
    KILN_ASSIGN_OR_RETURN(ErrorStats stats, errorStatsFromJson(output));
    report.outputs.push_back(std::move(stats));
  }
  report.perTensor = j.contains("intermediates");
  for (const json& entry : j.value("intermediates", json::array())) {
    ComparedTensor tensor;
    KILN_ASSIGN_OR_RETURN(tensor.stats, errorStatsFromJson(entry));
    r.get(entry, "layer_a", &tensor.layerA);
    r.get(entry, "layer_b", &tensor.layerB);
    r.get(entry, "onnx_nodes", &tensor.sourceNodes);
    report.intermediates.push_back(std::move(tensor));
  }
  if (const json& first = r.object(j, "first_divergence"); !first.empty()) {
    const std::string name = first.value("tensor", std::string());
    for (size_t i = 0; i < report.intermediates.size(); ++i)
      if (report.intermediates[i].stats.name == name) report.firstDivergent = int(i);
  }
  for (const json& entry : j.value("fused_away", json::array())) {
    FusedAwayTensor tensor;
    r.get(entry, "tensor", &tensor.tensor);
    r.get(entry, "present_in", &tensor.presentIn);
    r.get(entry, "producer", &tensor.producer);
    r.get(entry, "fused_into", &tensor.fusedInto);
    report.fusedAway.push_back(std::move(tensor));
  }
  r.get(j, "per_tensor_note", &report.perTensorNote);
  if (!r.error().empty()) return invalidArgument(r.error());
  return report;
}

}  // namespace kiln::compare
