// EngineReport from a Kiln plan, its shares and totals, and its CSV, text and JSON
// forms. The trtexec side lives in trtexec_import.cpp.
#include "engine_report.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "engine_inspector.h"
#include "kiln/passes.h"
#include "roofline.h"

namespace kiln::inspector {
namespace {
using nlohmann::json;

// TensorRT spells layer precisions in capitals ("FP16", "INT8").
std::string layerPrecision(DataType type) {
  std::string text = precisionSpelling(type);
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

ReportTensor reportTensor(const TensorRecord& t) {
  return {t.name, t.dimensions, formatDatatype(t), t.location};
}

// Bytes of a tensor at its recorded dimensions; 0 when a dimension is unknown.
int64_t tensorBytes(const TensorRecord& t) {
  for (int64_t d : t.dimensions)
    if (d < 0) return 0;
  return shapeNumel(t.dimensions) * static_cast<int64_t>(dataTypeSize(t.type));
}

ReportCandidate reportCandidate(const TacticCandidate& c) {
  return {c.tactic,       c.source,    precisionSpelling(c.precision),
          c.milliseconds, c.fromCache, c.rejected,
          c.detail,       c.choice};
}

ReportLayer layerFromRecord(const LayerRecord& r) {
  ReportLayer l;
  l.name = r.name;
  l.layerType = r.layerType;
  l.opType = r.opType;
  l.precision = layerPrecision(r.precision);
  l.precisionReason = r.precisionReason;
  l.tactic = r.tactic;
  if (!r.tactic.empty()) l.tacticValue = tacticValueHex(r.tacticValue);
  l.tacticSource = r.tacticSource;
  l.choice = r.choice;
  l.milliseconds = r.milliseconds;
  l.workspaceBytes = r.workspaceBytes;
  l.sourceNodes = r.sourceNodes;
  l.fusion = r.fusion;
  for (const TensorRecord& t : r.inputs) l.inputs.push_back(reportTensor(t));
  for (const TensorRecord& t : r.outputs) {
    l.outputs.push_back(reportTensor(t));
    l.outputBytes += tensorBytes(t);
  }
  for (const TacticCandidate& c : r.candidates) l.candidates.push_back(reportCandidate(c));
  l.parameters = r.parameters;
  if (r.outputType != r.precision) l.parameters["output type"] = layerPrecision(r.outputType);
  if (r.memoryOffset >= 0) l.parameters["memory offset"] = std::to_string(r.memoryOffset);
  return l;
}

// What a record trimmed by the profiling verbosity lacks, from the network node the
// layer runs (its name and provenance) and the plan's runtime entry (tactic, precision).
void complementLayer(const Node* node, const LayerImplementation& impl, ReportLayer* l) {
  if (node) {
    if (l->name.empty()) l->name = node->displayName();
    if (l->opType.empty()) l->opType = node->opType;
    if (l->layerType.empty()) l->layerType = node->opType;
    if (l->sourceNodes.empty()) {
      l->sourceNodes = node->attrStrings(kSourceNodesAttribute);
      if (l->sourceNodes.empty())
        l->sourceNodes = {node->displayName()};
      else
        l->fusion = node->attrString(kFusionPassAttribute, "");
    }
  }
  if (l->tactic.empty() && !impl.tactic.empty()) {
    l->tactic = impl.tactic;
    l->tacticValue = tacticValueHex(tacticValueOf(impl.tactic));
  }
  if (l->precision.empty()) l->precision = layerPrecision(impl.precision);
}

std::string formatMs(double ms) {
  if (ms < 0) return "";
  char text[32];
  std::snprintf(text, sizeof(text), "%.6f", ms);
  return text;
}

std::string formatPercent(double percent) {
  if (percent < 0) return "";
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", percent);
  return text;
}

// "" for a negative value (unknown, untimed), else `value` in `format`.
std::string formatNumber(double value, const char* format) {
  if (value < 0) return "";
  char text[48];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

std::string joined(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// RFC 4180: a field holding a comma, quote or line break is quoted, quotes doubled.
std::string csvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csvRow(const std::vector<std::string>& fields) {
  std::string row;
  for (size_t i = 0; i < fields.size(); ++i) row += (i ? "," : "") + csvField(fields[i]);
  return row + "\r\n";
}

std::string clipped(const std::string& text, size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 3) + "...";
}

std::string totalsLine(const EngineReport& report) {
  std::ostringstream out;
  out << report.layers.size() << " layers";
  if (report.totalMs >= 0) {
    out << "; total " << formatMs(report.totalMs) << " ms";
    if (report.profileIterations > 0)
      out << " (medians of a " << report.profileIterations << "-iteration profile)";
    else
      out << " (build timings)";
  } else {
    out << "; untimed";
  }
  std::map<std::string, int> mix;
  for (const ReportLayer& l : report.layers) ++mix[l.precision.empty() ? "?" : l.precision];
  out << "\nprecisions:";
  for (const auto& [name, count] : mix) out << " " << name << " " << count;
  return out.str() + "\n";
}

json tensorsJson(const std::vector<ReportTensor>& tensors) {
  json out = json::array();
  for (const ReportTensor& t : tensors)
    out.push_back({{"Name", t.name},
                   {"Location", t.location},
                   {"Dimensions", t.dimensions},
                   {"Format/Datatype", t.formatDatatype}});
  return out;
}

json candidatesJson(const std::vector<ReportCandidate>& candidates) {
  json out = json::array();
  for (const ReportCandidate& c : candidates) {
    json item = {{"TacticName", c.tactic}, {"Source", c.source}, {"Precision", c.precision}};
    if (c.milliseconds >= 0) item["TimeMs"] = c.milliseconds;
    if (c.fromCache) item["FromTimingCache"] = true;
    if (!c.rejected.empty()) item["Rejected"] = c.rejected;
    if (!c.detail.empty()) item["Detail"] = c.detail;
    if (!c.choice.empty()) item["Choice"] = c.choice;
    out.push_back(item);
  }
  return out;
}

json layerJson(const ReportLayer& l) {
  json j = {{"Name", l.name},
            {"LayerType", l.layerType},
            {"Inputs", tensorsJson(l.inputs)},
            {"Outputs", tensorsJson(l.outputs)},
            {"Precision", l.precision},
            {"OutputBytes", l.outputBytes},
            {"SourceNodes", l.sourceNodes}};
  const std::pair<const char*, const std::string*> texts[] = {
      {"OpType", &l.opType},
      {"PrecisionReason", &l.precisionReason},
      {"TacticName", &l.tactic},
      {"TacticValue", &l.tacticValue},
      {"TacticSource", &l.tacticSource},
      {"Choice", &l.choice},
      {"Fusion", &l.fusion}};
  for (const auto& [key, value] : texts)
    if (!value->empty()) j[key] = *value;
  if (l.milliseconds >= 0) j["TimeMs"] = l.milliseconds;
  if (l.averageMs >= 0) j["AverageMs"] = l.averageMs;
  if (l.percentage >= 0) j["Percentage"] = l.percentage;
  if (l.workspaceBytes >= 0) j["Workspace"] = l.workspaceBytes;
  if (!l.candidates.empty()) j["Candidates"] = candidatesJson(l.candidates);
  if (!l.parameters.empty()) j["Parameters"] = l.parameters;
  return j;
}

}  // namespace

EngineReport reportFromPlan(const Plan& plan, const std::string& title) {
  const BuildRecord& record = plan.record;
  EngineReport report;
  report.origin = "kiln plan";
  report.title = title;
  report.backend = record.backend.empty() ? plan.identity.backend : record.backend;
  const size_t count = std::max(plan.layers.size(), record.layers.size());
  const std::vector<Node>* nodes = plan.network ? &plan.network->graph.nodes : nullptr;
  for (size_t i = 0; i < count; ++i) {
    ReportLayer layer =
        i < record.layers.size() ? layerFromRecord(record.layers[i]) : ReportLayer{};
    const Node* node = nodes && i < nodes->size() ? &(*nodes)[i] : nullptr;
    complementLayer(node, i < plan.layers.size() ? plan.layers[i] : LayerImplementation{}, &layer);
    report.layers.push_back(std::move(layer));
  }
  if (record.config.profilingVerbosity != ProfilingVerbosity::kDetailed) {
    report.warnings.push_back(std::string("built with --profiling-verbosity ") +
                              profilingVerbosityName(record.config.profilingVerbosity) +
                              ": tensors, candidates and build timings were not recorded");
  }
  for (const std::string& w : record.warnings) report.warnings.push_back(w);
  report.bindings = record.inputNames;
  report.bindings.insert(report.bindings.end(), record.outputNames.begin(),
                         record.outputNames.end());
  report.activationBytes = record.activationBytes;
  report.weightBytes = record.weightBytes;
  report.summary = formatBuildSummary(plan);
  report.device = plan.identity.deviceName;
  annotatePlanFlops(plan, &report);
  updateShares(&report);
  return report;
}

void updateShares(EngineReport* report) {
  double total = 0;
  bool timed = false;
  for (const ReportLayer& l : report->layers) {
    if (l.milliseconds < 0) continue;
    total += l.milliseconds;
    timed = true;
  }
  report->totalMs = timed ? total : -1;
  for (ReportLayer& l : report->layers) {
    l.percentage = l.milliseconds < 0 ? -1 : total > 0 ? 100.0 * l.milliseconds / total : 0.0;
  }
}

std::string reportCsv(const EngineReport& report) {
  std::string out =
      csvRow({"name", "type", "precision", "tactic", "time_ms", "percent", "workspace_bytes",
              "output_bytes", "source_nodes", "flops", "bytes", "intensity", "achieved_tflops",
              "achieved_gbps", "percent_of_roofline"});
  const std::optional<DevicePeaks> peaks = peaksForDevice(report.device);
  const std::vector<LayerRoofline> roofs = layerRooflines(report, peaks ? &*peaks : nullptr);
  for (size_t i = 0; i < report.layers.size(); ++i) {
    const ReportLayer& l = report.layers[i];
    const LayerRoofline& r = roofs[i];
    out += csvRow({l.name, l.layerType, l.precision, l.tactic, formatMs(l.milliseconds),
                   formatPercent(l.percentage),
                   l.workspaceBytes >= 0 ? std::to_string(l.workspaceBytes) : "",
                   std::to_string(l.outputBytes), joined(l.sourceNodes, "; "),
                   formatNumber(r.flops, "%.0f"), formatNumber(r.bytes, "%.0f"),
                   formatNumber(r.intensity, "%.4f"), formatNumber(r.achievedFlops / 1e12, "%.6f"),
                   formatNumber(r.achievedBytesPerSecond / 1e9, "%.4f"),
                   formatNumber(r.percentOfRoof, "%.2f")});
  }
  return out;
}

std::string formatReportTable(const EngineReport& report) {
  constexpr size_t kNameWidth = 56, kTypeWidth = 24, kTacticWidth = 44;
  size_t nameWidth = 5, typeWidth = 4, tacticWidth = 6;
  for (const ReportLayer& l : report.layers) {
    nameWidth = std::max(nameWidth, std::min(l.name.size(), kNameWidth));
    typeWidth = std::max(typeWidth, std::min(l.layerType.size(), kTypeWidth));
    tacticWidth = std::max(tacticWidth, std::min(l.tactic.size(), kTacticWidth));
  }
  const int nw = static_cast<int>(nameWidth), yw = static_cast<int>(typeWidth),
            tw = static_cast<int>(tacticWidth);
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-*s  %-*s  %-9s  %-*s  %10s  %6s\n", nw, "layer", yw, "type",
                "precision", tw, "tactic", "time ms", "%");
  out << line;
  for (const ReportLayer& l : report.layers) {
    // A name too long for its column gets a line of its own: names are never cut.
    const bool ownLine = l.name.size() > nameWidth;
    if (ownLine) out << l.name << "\n";
    const std::string ms = l.milliseconds >= 0 ? formatMs(l.milliseconds) : "-";
    const std::string pct = l.percentage >= 0 ? formatPercent(l.percentage) : "-";
    std::snprintf(line, sizeof(line), "%-*s  %-*s  %-9s  %-*s  %10.10s  %6s\n", nw,
                  ownLine ? "" : l.name.c_str(), yw, clipped(l.layerType, typeWidth).c_str(),
                  l.precision.empty() ? "-" : l.precision.c_str(), tw,
                  l.tactic.empty() ? "-" : clipped(l.tactic, tacticWidth).c_str(), ms.c_str(),
                  pct.c_str());
    out << line;
  }
  return out.str() + totalsLine(report);
}

json reportJson(const EngineReport& report) {
  json layers = json::array();
  for (const ReportLayer& l : report.layers) layers.push_back(layerJson(l));
  json j = {{"Origin", report.origin},     {"Title", report.title},
            {"Backend", report.backend},   {"Layers", layers},
            {"Bindings", report.bindings}, {"Warnings", report.warnings},
            {"Summary", report.summary},   {"ProfileIterations", report.profileIterations}};
  if (report.activationBytes >= 0) j["ActivationBytes"] = report.activationBytes;
  if (report.weightBytes >= 0) j["WeightBytes"] = report.weightBytes;
  if (report.totalMs >= 0) j["TotalMs"] = report.totalMs;
  return j;
}

bool isConstantLayer(const ReportLayer& layer) {
  auto is = [&layer](const char* type) { return layer.opType == type || layer.layerType == type; };
  if (is("Constant") || is("Shape")) return true;
  if (!is("Identity")) return false;
  // An Identity that converts (FP32 in, FP16 out) does work; unknown formats count as equal.
  for (const ReportTensor& in : layer.inputs)
    for (const ReportTensor& out : layer.outputs)
      if (precisionOfFormat(in.formatDatatype) != precisionOfFormat(out.formatDatatype))
        return false;
  return true;
}

}  // namespace kiln::inspector
