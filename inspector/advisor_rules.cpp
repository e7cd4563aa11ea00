// The advisor's rules for host fallback, type-changing slices, unfused Q/DQ,
// convolutions off tensor cores, opt shapes far from the run and layers below their
// roofline (advisor.h lists every rule; docs/advisor.md the thresholds and limits).
#include <algorithm>
#include <cstdio>
#include <set>

#include "advisor_rules.h"

namespace kiln::inspector::advice {
namespace {

bool startsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

std::string parameter(const ReportLayer& l, const std::string& key) {
  auto it = l.parameters.find(key);
  return it == l.parameters.end() ? "" : it->second;
}

// The layer runs on the host: `kiln run --json` placed it there, or the build detail of
// its winning tactic (what the CUDA build backend saw when it timed it) says so. Several
// candidates share the layer's tactic id (one per precision the build timed; the stem
// kernel's fp16 and its fp32 host fallback): the one that runs is of the layer's own
// precision, the fastest valid one where several (or none) are.
bool runsOnHost(const ReportLayer& l) {
  if (parameter(l, "placement") == "host-fallback") return true;
  const std::string precision = asciiLower(l.precision);
  const ReportCandidate* winner = nullptr;
  auto better = [&](const ReportCandidate& c) {
    if (!winner) return true;
    const bool mine = asciiLower(c.precision) == precision;
    const bool theirs = asciiLower(winner->precision) == precision;
    if (mine != theirs) return mine;
    return c.milliseconds >= 0 &&
           (winner->milliseconds < 0 || c.milliseconds < winner->milliseconds);
  };
  for (const ReportCandidate& c : l.candidates)
    if (c.tactic == l.tactic && c.rejected.empty() && (l.choice.empty() || c.choice == l.choice) &&
        better(c))
      winner = &c;
  return winner && startsWith(winner->detail, "host-fallback");
}

bool isQdqLayer(const ReportLayer& l) {
  static const std::set<std::string> kTypes = {"Quantize", "Dequantize", "QuantizeLinear",
                                               "DequantizeLinear"};
  if (kTypes.count(l.opType) || kTypes.count(l.layerType) ||
      kTypes.count(parameter(l, "ParameterType")))
    return true;
  // TensorRT runs an unfused Q/DQ as a Scale layer named after it.
  if (l.layerType != "Scale" || l.sourceNodes.empty()) return false;
  return std::all_of(l.sourceNodes.begin(), l.sourceNodes.end(), [](const std::string& n) {
    return n.find("QuantizeLinear") != std::string::npos;  // also DequantizeLinear
  });
}

// Tensor-core kernels name their MMA instruction or family: HMMA/IMMA/GMMA, xmma,
// "s1688"/"h16816"/"i8816" tiles, cuDNN's "tensorop".
bool namesTensorCoreKernel(std::string tactic) {
  for (char& c : tactic) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const char* kMarks[] = {"hmma", "imma",  "gmma",     "xmma",      "1688", "16816",
                                 "8816", "16832", "tensorop", "tensor_op", "_mma", "mma_"};
  return std::any_of(std::begin(kMarks), std::end(kMarks),
                     [&](const char* m) { return tactic.find(m) != std::string::npos; });
}

// A kernel's name, not Kiln's tactic family ("cuda.cudnn", "cpu.conv.direct").
bool isKernelName(const std::string& tactic) {
  return !tactic.empty() && !startsWith(tactic, "cuda.") && !startsWith(tactic, "cpu.") &&
         tactic.find('.') == std::string::npos;
}

int64_t groupsOf(const ReportLayer& l) {
  for (const char* key : {"Groups", "group"}) {
    const std::string text = parameter(l, key);
    if (!text.empty() && std::isdigit(static_cast<unsigned char>(text[0])))
      return std::stoll(text.substr(0, 18));
  }
  return 1;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "x" : "") + std::to_string(dims[i]);
  return out;
}

// A run shape inside the profile's range (same rank, min <= run <= max).
bool inRange(const ReportIoTensor::Profile& p, const Shape& run) {
  if (p.min.size() != run.size() || p.max.size() != run.size()) return false;
  for (size_t d = 0; d < run.size(); ++d)
    if (run[d] < p.min[d] || (p.max[d] >= 0 && run[d] > p.max[d])) return false;
  return true;
}

bool farApart(const std::vector<int64_t>& opt, const Shape& run) {
  if (opt.size() != run.size()) return false;
  for (size_t d = 0; d < run.size(); ++d) {
    if (opt[d] <= 0 || run[d] <= 0) continue;
    const double ratio = static_cast<double>(std::max(opt[d], run[d])) /
                         static_cast<double>(std::min(opt[d], run[d]));
    if (ratio > 2.0) return true;
  }
  return false;
}

std::vector<size_t> allLayers(const EngineReport& report) {
  std::vector<size_t> all;
  for (size_t i = 0; i < report.layers.size(); ++i)
    if (!isConstantLayer(report.layers[i])) all.push_back(i);
  return all;
}

}  // namespace

void hostFallback(const EngineReport& report, std::vector<Finding>* out) {
  std::vector<size_t> hits;
  for (size_t i = 0; i < report.layers.size(); ++i)
    if (runsOnHost(report.layers[i])) hits.push_back(i);
  if (hits.empty()) return;
  out->push_back(finding(
      report, "host-fallback", AdviceSeverity::kError,
      counted(hits.size(), "layer runs", "layers run") +
          " on the host (no GPU kernel for the op or data type): each copies its inputs to the "
          "host and its outputs back, and the stream waits",
      hits,
      "`kiln ops` lists the ops with GPU kernels; rewrite the op in the model (or fold it: "
      "constant inputs), change its data type, or load a plugin with a CUDA implementation "
      "(kiln --plugins LIB.so build ...)"));
}

void slicesChangingType(const EngineReport& report, std::vector<Finding>* out) {
  std::vector<size_t> hits;
  for (size_t i = 0; i < report.layers.size(); ++i) {
    const ReportLayer& l = report.layers[i];
    const bool slice = l.layerType == "Slice" || l.opType == "Slice" || l.opType == "Split" ||
                       parameter(l, "ParameterType") == "Slice";
    if (!slice || l.inputs.empty() || l.outputs.empty()) continue;
    const std::string in = tensorPrecision(l.inputs[0]), outType = tensorPrecision(l.outputs[0]);
    if (!in.empty() && !outType.empty() && in != outType) hits.push_back(i);
  }
  if (hits.empty()) return;
  out->push_back(finding(report, "slice-changes-type", AdviceSeverity::kWarning,
                         counted(hits.size(), "Slice converts", "Slices convert") +
                             " the data type: a copy that is also a precision boundary",
                         hits,
                         "keep the sliced tensor in one precision on both sides (kiln build "
                         "--layer-precisions 'NAME:fp16' on the producer or the consumer)"));
}

void unfusedQdq(const EngineReport& report, std::vector<Finding>* out) {
  std::vector<size_t> hits;
  for (size_t i = 0; i < report.layers.size(); ++i)
    if (isQdqLayer(report.layers[i])) hits.push_back(i);
  if (hits.empty()) return;
  out->push_back(finding(
      report, "unfused-qdq", AdviceSeverity::kWarning,
      counted(hits.size(), "Quantize/Dequantize layer stands", "Quantize/Dequantize layers stand") +
          " alone: a pass over the tensor that should have folded into the compute layer "
          "beside it",
      hits,
      "place Q/DQ pairs on the inputs (and weights) of Conv/MatMul/Gemm so they fold "
      "(`kiln inspect PLAN --fusions` shows what folded); a Q/DQ on a layer with no INT8 kernel "
      "cannot fold: remove it"));
}

void convNotOnTensorCores(const EngineReport& report, std::vector<Finding>* out) {
  std::vector<size_t> hits, grouped;
  int byName = 0, byChannels = 0;
  for (size_t i = 0; i < report.layers.size(); ++i) {
    const ReportLayer& l = report.layers[i];
    if (!isConvolution(l) || l.precision.empty() || l.precision == "FP32") continue;
    if (report.backend == "cpu") continue;  // no tensor cores to miss
    const int64_t c = l.inputs.empty() ? -1 : channelsOf(l.inputs[0]);
    const int64_t groups = std::max<int64_t>(groupsOf(l), 1);
    if (groups > 1 && c > 0 && c / groups < 8) {
      grouped.push_back(i);  // depthwise / narrow groups: CUDA-core kernels by design
    } else if (isKernelName(l.tactic) && !namesTensorCoreKernel(l.tactic)) {
      hits.push_back(i);
      ++byName;
    } else if (c > 0 && c < 8) {
      hits.push_back(i);
      ++byChannels;
    }
  }
  if (!hits.empty()) {
    std::string why;
    if (byName) why += std::to_string(byName) + " by kernel name";
    if (byChannels) why += (why.empty() ? "" : ", ") + std::to_string(byChannels) + " with C < 8";
    out->push_back(finding(
        report, "conv-not-on-tensor-cores", AdviceSeverity::kWarning,
        counted(hits.size(), "reduced-precision convolution does",
                "reduced-precision convolutions do") +
            " not run on tensor cores (" + why + ")",
        hits,
        "pad C and K to multiples of 8 (16 for INT8) in the model; for TensorRT, rebuild with "
        "--builderOptimizationLevel=5 and check the tactic; a stem of 3 channels is cheap "
        "unless it dominates"));
  }
  if (!grouped.empty())
    out->push_back(finding(report, "conv-not-on-tensor-cores", AdviceSeverity::kInfo,
                           counted(grouped.size(), "grouped or depthwise convolution runs",
                                   "grouped or depthwise convolutions run") +
                               " on CUDA cores (fewer than 8 channels per group): expected",
                           grouped, "nothing to do unless they dominate the time"));
}

void optShapeFar(const EngineReport& report, const AdviseOptions& options,
                 std::vector<Finding>* out) {
  std::string far, flags;
  for (const auto& [input, run] : options.runShapes) {
    for (const ReportIoTensor& io : report.ioTensors) {
      if (io.name != input || io.profiles.empty()) continue;
      size_t chosen = 0;  // the profile the run falls in, else the first
      for (size_t p = 0; p < io.profiles.size(); ++p)
        if (inRange(io.profiles[p], run)) {
          chosen = p;
          break;
        }
      const std::vector<int64_t>& opt = io.profiles[chosen].opt;
      if (!farApart(opt, run)) continue;
      far += (far.empty() ? "" : "; ") + input + " ran at " + dimsText(run) + ", profile " +
             std::to_string(chosen) + "'s opt is " + dimsText(opt);
      flags += (flags.empty() ? "" : ",") + input + ":" + dimsText(run);
    }
  }
  if (far.empty()) return;
  out->push_back(finding(report, "opt-shape-far", AdviceSeverity::kWarning,
                         "the engine was tuned at an opt shape more than 2x away from the "
                         "shapes it runs at (" +
                             far + "): its tactics were timed for other shapes",
                         allLayers(report),
                         "rebuild with --opt-shapes " + flags +
                             " (keeping --min-shapes/--max-shapes; trtexec: --optShapes=" + flags +
                             "), or add a profile around these shapes"));
}

void belowRoofline(const EngineReport& report, const AdviseOptions& options,
                   std::vector<Finding>* out) {
  std::optional<DevicePeaks> known;
  const DevicePeaks* peaks = options.peaks;
  if (!peaks && (known = peaksForDevice(report.device))) peaks = &*known;
  if (!peaks || report.totalMs <= 0) return;
  const std::vector<LayerRoofline> roofs = layerRooflines(report, peaks);
  std::vector<size_t> hits;
  for (size_t i = 0; i < roofs.size(); ++i) {
    const double ms = report.layers[i].milliseconds;
    if (roofs[i].percentOfRoof >= 0 && roofs[i].percentOfRoof < 10 && ms > 0.05 * report.totalMs)
      hits.push_back(i);
  }
  if (hits.empty()) return;
  char share[96];
  std::snprintf(share, sizeof(share), " (%.1f%% of the time)",
                100.0 * std::max(sumMs(report, hits), 0.0) / report.totalMs);
  out->push_back(finding(
      report, "below-roofline", AdviceSeverity::kWarning,
      counted(hits.size(), "costly layer reaches", "costly layers reach") +
          " under 10% of the roofline on " + peaks->name + " (peaks: " + peaks->source + ")" +
          share,
      hits,
      "look at the layers' tactics and candidates (kiln inspect PLAN --candidates; --roofline "
      "for the numbers), their precision and channel alignment; TensorRT: rebuild with "
      "--builderOptimizationLevel=5"));
}

}  // namespace kiln::inspector::advice
