#include "engine_inspector.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "kiln/cuda_generated_kernels.h"

namespace kiln::inspector {
namespace {
using nlohmann::json;

std::string trtTypeName(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return "FP32";
    case DataType::kFloat16:
      return "FP16";
    case DataType::kBFloat16:
      return "BF16";
    case DataType::kInt8:
      return "Int8";
    case DataType::kInt32:
      return "Int32";
    case DataType::kInt64:
      return "Int64";
    case DataType::kBool:
      return "Bool";
    case DataType::kUInt8:
      return "UInt8";
    case DataType::kFp8E4M3:
      return "FP8";
    default:
      return dataTypeName(t);
  }
}

json tensorsJson(const std::vector<TensorRecord>& tensors) {
  json out = json::array();
  for (const TensorRecord& t : tensors) {
    out.push_back({{"Name", t.name},
                   {"Location", t.location},
                   {"Dimensions", t.dimensions},
                   {"Format/Datatype", formatDatatype(t)}});
  }
  return out;
}

json candidatesJson(const std::vector<TacticCandidate>& candidates) {
  json out = json::array();
  for (const TacticCandidate& c : candidates) {
    json item = {{"TacticName", c.tactic},
                 {"TacticValue", tacticValueHex(c.tacticValue)},
                 {"Source", c.source},
                 {"Precision", trtTypeName(c.precision)}};
    if (c.milliseconds >= 0) item["TimeMs"] = c.milliseconds;
    if (c.fromCache) item["FromTimingCache"] = true;
    if (!c.rejected.empty()) item["Rejected"] = c.rejected;
    if (!c.detail.empty()) item["Detail"] = c.detail;
    if (!c.choice.empty()) item["Choice"] = c.choice;  // replayed by the plan's engine
    out.push_back(item);
  }
  return out;
}

json layerJson(const LayerRecord& l) {
  json layer = {{"Name", l.name},
                {"LayerType", l.layerType},
                {"Inputs", tensorsJson(l.inputs)},
                {"Outputs", tensorsJson(l.outputs)},
                {"ParameterType", l.layerType},
                {"TacticName", l.tactic},
                {"TacticValue", tacticValueHex(l.tacticValue)},
                {"Precision", trtTypeName(l.precision)},
                {"PrecisionReason", l.precisionReason},
                {"OutputType", trtTypeName(l.outputType)},
                {"TacticSource", l.tacticSource},
                {"Choice", l.choice},
                {"Candidates", candidatesJson(l.candidates)},
                {"Fusion", l.fusion.empty() ? json(nullptr) : json(l.fusion)},
                {"Workspace", l.workspaceBytes},
                {"MemoryOffset", l.memoryOffset}};
  std::string metadata;
  for (const std::string& node : l.sourceNodes) metadata += (metadata.empty() ? "" : ", ") + node;
  layer["Metadata"] = "[ONNX Layer: " + metadata + "]";
  if (l.milliseconds >= 0) layer["TimeMs"] = l.milliseconds;
  for (const auto& [key, value] : l.parameters) layer["Parameters"][key] = value;
  return layer;
}

std::string megabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

std::string kibibytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f KiB", static_cast<double>(bytes) / 1024);
  return text;
}

// A plan entry that records a cuDNN execution plan, not an NVRTC cubin.
bool isCudnnPlanEntry(const GeneratedKernelBinary& k) {
  return cuda::isCudnnPlanKey(k.key);
}

int64_t generatedKernelBytes(const Plan& plan) {
  int64_t bytes = 0;
  for (const GeneratedKernelBinary& k : plan.generatedKernels)
    bytes += static_cast<int64_t>(k.cubin.size());
  return bytes;
}

// The plan's NVRTC cubins: how many, their bytes and architecture, and per cubin
// its key and the layers that load it.
json generatedKernelsJson(const Plan& plan) {
  json kernels = json::array();
  for (const GeneratedKernelBinary& k : plan.generatedKernels)
    kernels.push_back({{"Key", k.key},
                       {"Kind", isCudnnPlanEntry(k) ? "cudnn execution plan" : "cubin"},
                       {"Bytes", k.cubin.size()},
                       {"Layers", k.layers}});
  return {{"Count", plan.generatedKernels.size()},
          {"Bytes", generatedKernelBytes(plan)},
          {"Architecture", plan.generatedKernels.empty()
                               ? json(nullptr)
                               : json(plan.generatedKernels.front().architecture)},
          {"Kernels", kernels}};
}

// Per layer name, "sm_90 cubin, 5120 B, in the plan" for layers whose kernel the plan holds.
std::map<std::string, std::string> generatedKernelOfLayer(const Plan& plan) {
  std::map<std::string, std::string> text;
  for (const GeneratedKernelBinary& k : plan.generatedKernels)
    for (const std::string& layer : k.layers)
      text[layer] = k.architecture +
                    (isCudnnPlanEntry(k) ? " cuDNN execution plan, " : " cubin, ") +
                    std::to_string(k.cubin.size()) + " B, in the plan";
  return text;
}

}  // namespace

std::string formatDatatype(const TensorRecord& tensor) {
  return tensor.format + " " + trtTypeName(tensor.type);
}

json engineInspectorJson(const Plan& plan) {
  json layers = json::array();
  const ProfilingVerbosity verbosity = plan.record.config.profilingVerbosity;
  const std::map<std::string, std::string> kernelOf = generatedKernelOfLayer(plan);
  for (const LayerRecord& l : plan.record.layers) {
    if (verbosity == ProfilingVerbosity::kLayerNamesOnly) {
      layers.push_back(l.name);
      continue;
    }
    json layer = layerJson(l);
    if (auto it = kernelOf.find(l.name); it != kernelOf.end())
      layer["GeneratedKernel"] = it->second;
    layers.push_back(std::move(layer));
  }
  json bindings = json::array();
  for (const std::string& name : plan.record.inputNames) bindings.push_back(name);
  for (const std::string& name : plan.record.outputNames) bindings.push_back(name);
  return {{"Layers", layers},
          {"Bindings", bindings},
          {"ProfilingVerbosity", profilingVerbosityName(verbosity)},
          {"LayerCount", plan.layers.size()},
          {"Backend", plan.identity.backend},
          {"Device", plan.identity.deviceName},
          {"GeneratedKernels", generatedKernelsJson(plan)}};
}

std::string formatBuildSummary(const Plan& plan) {
  const BuildRecord& r = plan.record;
  std::ostringstream out;
  out << "plan: " << plan.layers.size() << " layers for " << r.backend << " ("
      << plan.identity.deviceName << ")\n";
  std::map<std::string, int> mix;
  // The record names the type each layer computes in; the runtime entry of a layer that
  // runs in the graph's own types (strongly typed plans, an FP16 model's layers) says
  // float32: no rounding.
  if (r.layers.size() == plan.layers.size()) {
    for (const LayerRecord& l : r.layers) ++mix[trtTypeName(l.precision)];
  } else {
    for (const LayerImplementation& l : plan.layers) ++mix[trtTypeName(l.precision)];
  }
  out << "precisions:";
  for (const auto& [name, count] : mix) out << " " << name << " " << count;
  out << "\n";
  for (size_t p = 0; p < plan.profiles.size(); ++p) {
    out << "profile " << p << ":";
    for (const auto& [name, range] : plan.profiles[p].inputs)
      out << " " << name << " min " << shapeToString(range.min) << " opt "
          << shapeToString(range.opt) << " max " << shapeToString(range.max);
    out << "\n";
  }
  char line[256];
  std::snprintf(line, sizeof(line),
                "build: %.2f s (tactic timing %.2f s, %d candidates timed); timing cache: %d of "
                "%d lookups hit (%.0f%%)\n",
                r.buildSeconds, r.timingSeconds, r.candidatesTimed, r.timingCache.hits,
                r.timingCache.lookups, 100 * r.timingCache.hitRate());
  out << line;
  out << "memory: activations " << megabytes(r.activationBytes) << " (without reuse "
      << megabytes(r.activationBytesWithoutReuse) << "), weights " << megabytes(r.weightBytes)
      << "\n";
  if (!plan.generatedKernels.empty()) {
    const auto cudnnPlans =
        std::count_if(plan.generatedKernels.begin(), plan.generatedKernels.end(), isCudnnPlanEntry);
    out << "generated kernels: " << plan.generatedKernels.size() - cudnnPlans
        << " NVRTC cubin(s) and " << cudnnPlans << " cuDNN execution plan(s) for "
        << plan.generatedKernels.front().architecture << ", "
        << kibibytes(generatedKernelBytes(plan)) << " (loaded at run, not compiled or timed)\n";
  }
  if (!r.unreplayedLayers.empty())
    out << "not replayed: " << r.unreplayedLayers.size() << " layer(s)\n";
  for (const std::string& w : r.warnings) out << "warning: " << w << "\n";
  return out.str();
}

std::string formatFusions(const Plan& plan) {
  std::ostringstream out;
  if (plan.record.layers.empty())
    return "no layer information: the plan was built with --profiling-verbosity none\n";
  if (plan.record.layers[0].sourceNodes.empty())
    return "no provenance: the plan was built with --profiling-verbosity layer_names_only\n";
  out << "engine layer -> ONNX nodes\n";
  std::vector<std::pair<std::string, std::string>> nodeToLayer;
  for (const LayerRecord& l : plan.record.layers) {
    out << "  " << l.name;
    if (!l.fusion.empty()) out << "   [" << l.fusion << "]";
    out << "\n";
    for (const std::string& node : l.sourceNodes) {
      if (l.sourceNodes.size() > 1 || node != l.name) out << "      " << node << "\n";
      nodeToLayer.push_back({node, l.name});
    }
  }
  out << "ONNX node -> engine layer\n";
  for (const auto& [node, layer] : nodeToLayer) out << "  " << node << " -> " << layer << "\n";
  return out.str();
}

std::string formatLayerTable(const Plan& plan, bool candidates) {
  std::ostringstream out;
  const BuildRecord& r = plan.record;
  if (r.layers.empty()) {
    return "no layer information: the plan was built with --profiling-verbosity none (" +
           std::to_string(plan.layers.size()) + " layers)\n";
  }
  char line[512];
  std::snprintf(line, sizeof(line), "%-32s %-16s %-6s %-26s %10s\n", "layer", "type", "prec",
                "tactic", "time ms");
  out << line;
  for (const LayerRecord& l : r.layers) {
    std::snprintf(line, sizeof(line), "%-32.32s %-16.16s %-6s %-26.26s %10s\n", l.name.c_str(),
                  l.layerType.c_str(), trtTypeName(l.precision).c_str(),
                  l.tactic.empty() ? "-" : l.tactic.c_str(),
                  l.milliseconds >= 0 ? std::to_string(l.milliseconds).substr(0, 8).c_str() : "-");
    out << line;
    if (!candidates) continue;
    for (const TacticCandidate& c : l.candidates) {
      const std::string what = !c.rejected.empty()   ? "rejected: " + c.rejected
                               : c.milliseconds >= 0 ? std::to_string(c.milliseconds) + " ms" +
                                                           (c.fromCache ? " (cache)" : "")
                                                     : "not timed";
      std::snprintf(line, sizeof(line), "    %s %-26s %-5s %s\n",
                    &c == winningCandidate(l) ? "*" : " ", c.tactic.c_str(),
                    trtTypeName(c.precision).c_str(), what.c_str());
      out << line;
      if (!c.choice.empty()) out << "        choice: " << c.choice << "\n";
    }
    if (!l.precisionReason.empty()) out << "    precision: " << l.precisionReason << "\n";
  }
  return out.str();
}

}  // namespace kiln::inspector
