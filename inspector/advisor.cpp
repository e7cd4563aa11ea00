#include "advisor.h"
#include "advisor_rules.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace kiln::inspector {
namespace advice {

bool isConvolution(const ReportLayer& l) {
  const std::string t = l.layerType + " " + l.opType;
  return t.find("Conv") != std::string::npos || t.find("Convolution") != std::string::npos;
}

// A layer that only moves data. Kiln's layers name their ONNX op: a Shuffle that is a
// Reshape, Flatten or Squeeze is a view (the CUDA runtime aliases it), only a Transpose
// copies. trtexec's layers name no op: their Shuffle and Reformat layers count.
bool movesData(const ReportLayer& l) {
  if (!l.opType.empty()) return l.opType == "Transpose" || l.layerType == "Reformat";
  return l.layerType == "Reformat" || l.layerType == "Shuffle" || l.layerType == "Transpose";
}

std::string tensorPrecision(const ReportTensor& t) {
  return precisionOfFormat(t.formatDatatype);
}

// "1 layer runs" / "3 layers run": the count, the noun and the verb agreeing with it.
std::string counted(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

double sumMs(const EngineReport& report, const std::vector<size_t>& layers) {
  double total = 0;
  for (size_t i : layers) {
    if (report.layers[i].milliseconds < 0) return -1;
    total += report.layers[i].milliseconds;
  }
  return total;
}

Finding finding(const EngineReport& report, const char* rule, AdviceSeverity severity,
                const std::string& message, const std::vector<size_t>& layers,
                const std::string& fix) {
  Finding f;
  f.rule = rule;
  f.severity = severity;
  f.message = message;
  for (size_t i : layers) f.layers.push_back(report.layers[i].name);
  f.costMs = sumMs(report, layers);
  f.fix = fix;
  return f;
}

// Conv input [N, C, ...] / output [N, K, ...] (channels-first) or [N, ..., C] when the
// format names channels-last ("HWC").
int64_t channelsOf(const ReportTensor& t) {
  if (t.dimensions.size() < 3) return -1;
  const bool last = t.formatDatatype.find("HWC") != std::string::npos ||
                    t.formatDatatype.find("channels-last") != std::string::npos;
  return last ? t.dimensions.back() : t.dimensions[1];
}

}  // namespace advice

namespace {
using namespace advice;

void reformatsChangingType(const EngineReport& report, std::vector<Finding>* out) {
  std::vector<size_t> hits;
  std::map<std::string, int> pairs;
  for (size_t i = 0; i < report.layers.size(); ++i) {
    const ReportLayer& l = report.layers[i];
    if (!movesData(l) || l.inputs.empty() || l.outputs.empty()) continue;
    const std::string in = tensorPrecision(l.inputs[0]), outType = tensorPrecision(l.outputs[0]);
    if (in.empty() || outType.empty() || in == outType) continue;
    hits.push_back(i);
    ++pairs[in + " -> " + outType];
  }
  if (hits.empty()) return;
  std::string kinds;
  for (const auto& [pair, count] : pairs)
    kinds += (kinds.empty() ? "" : ", ") + std::to_string(count) + " " + pair;
  out->push_back(finding(
      report, "reformat-changes-type", AdviceSeverity::kWarning,
      counted(hits.size(), "data-movement layer changes", "data-movement layers change") +
          " the data type (" + kinds + "): precision boundaries, each a pass over its tensor",
      hits,
      "keep neighbouring layers in one precision (kiln debug precision "
      "MODEL.onnx; --layer-precisions to widen a region) or move the Q/DQ "
      "pair so the boundary falls on a compute layer"));
}

void layoutCopies(const EngineReport& report, std::vector<Finding>* out) {
  std::vector<size_t> hits;
  for (size_t i = 0; i < report.layers.size(); ++i)
    if (movesData(report.layers[i]) && report.layers[i].outputBytes > 0) hits.push_back(i);
  if (hits.empty()) return;
  const double ms = sumMs(report, hits);
  const bool costly = ms >= 0 && report.totalMs > 0 && ms > 0.05 * report.totalMs;
  char share[64] = "";
  if (ms >= 0 && report.totalMs > 0)
    std::snprintf(share, sizeof(share), " (%.1f%% of the time)", 100.0 * ms / report.totalMs);
  out->push_back(finding(report, "layout-copies",
                         costly ? AdviceSeverity::kWarning : AdviceSeverity::kInfo,
                         counted(hits.size(), "layer only moves", "layers only move") +
                             " data (Transpose, Shuffle, Reformat)" + share,
                         hits,
                         "export with the layout the engine runs in (channels-last for CNNs), "
                         "and look at `kiln inspect PLAN --fusions` for transposes the passes "
                         "could not cancel"));
}

void int8WideOutputs(const EngineReport& report, std::vector<Finding>* out) {
  std::vector<size_t> hits;
  for (size_t i = 0; i < report.layers.size(); ++i) {
    const ReportLayer& l = report.layers[i];
    if (!isConvolution(l) || l.inputs.empty() || l.outputs.empty()) continue;
    const std::string outType = tensorPrecision(l.outputs[0]);
    if (tensorPrecision(l.inputs[0]) == "INT8" && !outType.empty() && outType != "INT8")
      hits.push_back(i);
  }
  if (hits.empty()) return;
  out->push_back(
      finding(report, "int8-conv-wide-output", AdviceSeverity::kWarning,
              counted(hits.size(), "INT8 convolution writes", "INT8 convolutions write") +
                  " a wider output type: the next layer "
                  "reads 2-4x the bytes",
              hits,
              "quantize the output too (a Q/DQ pair after the convolution, or "
              "calibrate the tensor: kiln calibrate) so the layer writes INT8"));
}

void channelAlignment(const EngineReport& report, std::vector<Finding>* out) {
  std::vector<size_t> hits, stems;
  for (size_t i = 0; i < report.layers.size(); ++i) {
    const ReportLayer& l = report.layers[i];
    if (!isConvolution(l) || l.inputs.empty() || l.outputs.empty()) continue;
    const std::string p = l.precision.empty() ? tensorPrecision(l.inputs[0]) : l.precision;
    if (p != "INT8" && p != "FP16" && p != "BF16") continue;
    const int64_t multiple = p == "INT8" ? 16 : 8;
    const int64_t c = channelsOf(l.inputs[0]), k = channelsOf(l.outputs[0]);
    if (c <= 0 || k <= 0 || (c % multiple == 0 && k % multiple == 0)) continue;
    (c <= 4 ? stems : hits).push_back(i);
  }
  if (!hits.empty())
    out->push_back(finding(report, "channel-alignment", AdviceSeverity::kWarning,
                           counted(hits.size(), "reduced-precision convolution has",
                                   "reduced-precision convolutions have") +
                               " channel counts that are "
                               "not multiples of 8 (16 for INT8): tensor-core kernels pad or "
                               "fall back",
                           hits,
                           "round the channel counts up in the model (zero-padded "
                           "weights), or keep those layers in a precision that does not "
                           "need the alignment"));
  if (!stems.empty())
    out->push_back(finding(
        report, "channel-alignment", AdviceSeverity::kInfo,
        counted(stems.size(), "input-stem convolution reads", "input-stem convolutions read") +
            " 3-4 channels (images): expected; "
            "Kiln pads them on the GPU when that is faster",
        stems, "nothing to do unless the stem dominates the time"));
}

void fp32Islands(const EngineReport& report, std::vector<Finding>* out) {
  bool reduced = false;
  std::vector<size_t> hits;
  for (size_t i = 0; i < report.layers.size(); ++i) {
    const std::string& p = report.layers[i].precision;
    if (p == "FP16" || p == "BF16" || p == "INT8" || p == "FP8") reduced = true;
    if (p == "FP32" && !report.layers[i].inputs.empty() &&
        tensorPrecision(report.layers[i].inputs[0]) != "INT32")
      hits.push_back(i);
  }
  if (!reduced || hits.empty()) return;
  out->push_back(finding(report, "fp32-layers", AdviceSeverity::kInfo,
                         counted(hits.size(), "layer runs", "layers run") +
                             " in FP32 in an engine that runs reduced precision "
                             "elsewhere: each boundary converts the tensor",
                         hits,
                         "check why with `kiln inspect PLAN --layers` (the precision reason); "
                         "`kiln debug precision MODEL.onnx --fp16` tells which truly need FP32"));
}

}  // namespace

const char* adviceSeverityName(AdviceSeverity severity) {
  switch (severity) {
    case AdviceSeverity::kError:
      return "error";
    case AdviceSeverity::kWarning:
      return "warning";
    default:
      return "info";
  }
}

std::vector<Finding> adviseEngine(const EngineReport& report, const AdviseOptions& options) {
  std::vector<Finding> out;
  reformatsChangingType(report, &out);
  layoutCopies(report, &out);
  int8WideOutputs(report, &out);
  channelAlignment(report, &out);
  fp32Islands(report, &out);
  hostFallback(report, &out);
  slicesChangingType(report, &out);
  unfusedQdq(report, &out);
  convNotOnTensorCores(report, &out);
  optShapeFar(report, options, &out);
  belowRoofline(report, options, &out);
  precisionIslands(report, &out);
  weightsWiderThanCompute(report, &out);
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
    if ((a.costMs >= 0) != (b.costMs >= 0)) return a.costMs >= 0;
    if (a.costMs != b.costMs) return a.costMs > b.costMs;
    return a.rule < b.rule;
  });
  return out;
}

void addPlanProfiles(const Plan& plan, EngineReport* report) {
  for (size_t p = 0; p < plan.profiles.size(); ++p) {
    for (const auto& [name, range] : plan.profiles[p].inputs) {
      auto io = std::find_if(report->ioTensors.begin(), report->ioTensors.end(),
                             [&](const ReportIoTensor& t) { return t.name == name; });
      if (io == report->ioTensors.end()) {
        report->ioTensors.push_back({});
        io = report->ioTensors.end() - 1;
        io->name = name;
        io->ioMode = "Input";
      }
      // Profile p of an input sits at index p; a profile without it leaves an empty entry.
      io->profiles.resize(p);
      io->profiles.push_back({range.min, range.opt, range.max, ""});
    }
  }
}

Result<int> applyRunPlacements(const nlohmann::json& run, EngineReport* report) {
  if (!run.is_object() || !run.contains("layers") || !run["layers"].is_array())
    return Status(StatusCode::kParseError,
                  "not a `kiln run --json` document (no \"layers\" array)");
  int marked = 0;
  for (const nlohmann::json& entry : run["layers"]) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) continue;
    const nlohmann::json placement = entry.value("placement", nlohmann::json(""));
    if (!placement.is_string() || placement.get<std::string>() != "host-fallback") continue;
    const std::string name = entry["name"].get<std::string>();
    for (ReportLayer& l : report->layers) {
      if (l.name != name) continue;
      l.parameters["placement"] = "host-fallback";
      const nlohmann::json note = entry.value("note", nlohmann::json(""));
      if (note.is_string() && !note.get<std::string>().empty())
        l.parameters["placement note"] = note.get<std::string>();
      ++marked;
    }
  }
  return marked;
}

std::string formatAdvice(const std::vector<Finding>& findings) {
  std::ostringstream s;
  if (findings.empty()) s << "no findings\n";
  for (const Finding& f : findings) {
    s << adviceSeverityName(f.severity) << " [" << f.rule << "] " << f.message;
    if (f.costMs >= 0) {
      char cost[48];
      std::snprintf(cost, sizeof(cost), "; %.4f ms", f.costMs);
      s << cost;
    }
    s << "\n  layers: ";
    for (size_t i = 0; i < f.layers.size() && i < 5; ++i) s << (i ? ", " : "") << f.layers[i];
    if (f.layers.size() > 5) s << " and " << f.layers.size() - 5 << " more";
    s << "\n  fix: " << f.fix << "\n";
  }
  return s.str();
}

nlohmann::json adviceJson(const std::vector<Finding>& findings) {
  nlohmann::json list = nlohmann::json::array();
  for (const Finding& f : findings) {
    list.push_back({{"rule", f.rule},
                    {"severity", adviceSeverityName(f.severity)},
                    {"message", f.message},
                    {"layers", f.layers},
                    {"cost_ms", f.costMs >= 0 ? nlohmann::json(f.costMs) : nlohmann::json()},
                    {"fix", f.fix}});
    if (!f.applyLayerPrecisions.empty())
      list.back()["apply"] = {{"layer_precisions", f.applyLayerPrecisions}};
  }
  return {{"findings", list}};
}

}  // namespace kiln::inspector
