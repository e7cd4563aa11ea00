// EngineReport from trtexec's exports of a real TensorRT engine: the
// --exportLayerInfo graph JSON (layers as objects at detailed verbosity, as plain
// names at layer-names-only verbosity) and the --exportProfile JSON. Kiln's own
// layer JSON (reportJson, engineInspectorJson) reads through the same path.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engine_report.h"
#include "kiln/json_reader.h"

namespace kiln::inspector {

int64_t elementBytes(const std::string& precision) {
  if (precision == "FP32" || precision == "INT32") return 4;
  if (precision == "FP16" || precision == "BF16") return 2;
  if (precision == "INT8" || precision == "FP8" || precision == "UINT8" || precision == "BOOL")
    return 1;
  return precision == "INT64" ? 8 : 0;
}

namespace {
using nlohmann::json;

std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(' ');
  const size_t last = text.find_last_not_of(' ');
  return first == std::string::npos ? "" : text.substr(first, last - first + 1);
}

// Splits on `separator` outside parentheses ("PWN(a, b) + c" on " + ").
std::vector<std::string> splitOutsideParens(const std::string& text, const std::string& separator) {
  std::vector<std::string> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')') depth = std::max(0, depth - 1);
    if (depth == 0 && text.compare(i, separator.size(), separator) == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + separator.size();
      i = start - 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

// Pieces of a fused name that TensorRT made up rather than took from the ONNX model.
bool isTensorRtGenerated(const std::string& piece) {
  return piece.find("(Unnamed Layer*") != std::string::npos ||
         piece.rfind("Reformatting CopyNode", 0) == 0 ||
         piece.rfind("copied_squeeze_after_", 0) == 0 ||
         piece.rfind("unsqueeze_node_after_", 0) == 0;
}

void collectSourceNames(const std::string& piece, std::vector<std::string>* out) {
  const std::string name = trimmed(piece);
  if (name.rfind("PWN(", 0) == 0 && name.back() == ')') {
    // A pointwise fusion: PWN(PWN(Sigmoid_3), Mul_4) holds Sigmoid_3 and Mul_4.
    for (const std::string& inner : splitOutsideParens(name.substr(4, name.size() - 5), ","))
      collectSourceNames(inner, out);
    return;
  }
  if (!name.empty() && !isTensorRtGenerated(name)) out->push_back(name);
}

// trtexec exports carry no provenance before TensorRT's Metadata key, so the ONNX
// nodes of a layer are inferred from its fused name: "w + QuantizeLinear_8 + Conv_12 +
// PWN(Clip_16)" gives w, QuantizeLinear_8, Conv_12, Clip_16. Initializer names (w)
// stay in: they are ONNX names, and a view simply finds no node for them.
std::vector<std::string> sourceNodesFromName(const std::string& layerName) {
  std::vector<std::string> nodes;
  // A reformat TensorRT inserted before a layer names that layer, fused name and all
  // ("Reformatting CopyNode for Input Tensor 0 to Conv_5 + Add_6 + Relu_7"): it moves
  // data for it but is none of its ONNX nodes (split on " + ", it read as Add_6, Relu_7).
  for (const char* prefix :
       {"Reformatting CopyNode", "Reformatted Input Tensor", "Reformatted Output Tensor"})
    if (layerName.rfind(prefix, 0) == 0) return nodes;
  for (const std::string& piece : splitOutsideParens(layerName, " + "))
    collectSourceNames(piece, &nodes);
  return nodes;
}

// TensorRT's Metadata: "[ONNX Layer: Conv_0]" per node (several joined by \x1E);
// Kiln's engine inspector lists them in one bracket, comma-separated.
std::vector<std::string> sourceNodesFromMetadata(const std::string& metadata) {
  static const std::string kTag = "[ONNX Layer: ";
  std::vector<std::string> nodes;
  for (size_t at = metadata.find(kTag); at != std::string::npos; at = metadata.find(kTag, at)) {
    const size_t begin = at + kTag.size();
    const size_t end = metadata.find(']', begin);
    if (end == std::string::npos) break;
    for (const std::string& name : splitOutsideParens(metadata.substr(begin, end - begin), ", "))
      if (!trimmed(name).empty()) nodes.push_back(trimmed(name));
    at = end;
  }
  return nodes;
}

std::string text(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string tacticValueText(const json& value) {
  if (!value.is_number_unsigned() && !value.is_number_integer()) return text(value);
  char hex[24];
  std::snprintf(hex, sizeof(hex), "0x%016llx",
                static_cast<unsigned long long>(value.get<uint64_t>()));
  return hex;
}

// A JSON array of dims; a dim that is not an integer (a symbolic or damaged one) is -1.
std::vector<int64_t> dimensionsOf(const json& dims) {
  std::vector<int64_t> out;
  if (!dims.is_array()) return out;
  for (const json& d : dims) out.push_back(d.is_number_integer() ? d.get<int64_t>() : -1);
  return out;
}

ReportTensor tensorFromJson(const json& j) {
  ReportTensor t;
  if (!j.is_object()) return t;
  t.name = text(j.value("Name", json("")));
  t.location = text(j.value("Location", json("Device")));
  if (j.contains("Format/Datatype")) {
    t.formatDatatype = text(j["Format/Datatype"]);
  } else {  // TensorRT 11.x: "Format": "Row major linear", "DataType": "Float"
    const std::string format = trimmed(text(j.value("Format", json(""))));
    const std::string type = trimmed(text(j.value("DataType", json(""))));
    t.formatDatatype = format.empty() ? type : type.empty() ? format : format + " " + type;
  }
  t.dimensions = dimensionsOf(j.value("Dimensions", json::array()));
  return t;
}

// TensorRT 11.x's "I/O Tensors" entry.
ReportIoTensor ioTensorFromJson(const json& j) {
  ReportIoTensor t;
  if (!j.is_object()) {
    t.name = text(j);
    return t;
  }
  t.name = text(j.value("Name", json("")));
  t.ioMode = text(j.value("IOMode", json("")));
  t.dataType = text(j.value("DataType", json("")));
  t.location = text(j.value("Location", json("Device")));
  t.dimensions = dimensionsOf(j.value("Dimensions", json::array()));
  const json shapeIo = j.value("IsShapeInferenceIO", json(false));
  t.shapeInference = shapeIo.is_boolean() && shapeIo.get<bool>();
  const json profiles = j.value("ProfileInfo", json::array());
  if (profiles.is_array())
    for (const json& p : profiles) {
      if (!p.is_object()) continue;
      t.profiles.push_back({dimensionsOf(p.value("MinShape", json::array())),
                            dimensionsOf(p.value("OptShape", json::array())),
                            dimensionsOf(p.value("MaxShape", json::array())),
                            text(p.value("Format", json("")))});
    }
  return t;
}

int64_t tensorBytes(const ReportTensor& t) {
  int64_t count = 1;
  for (int64_t d : t.dimensions) {
    if (d < 0) return 0;
    count *= d;
  }
  return count * elementBytes(precisionOfFormat(t.formatDatatype));
}

// Bytes of a TensorRT "Weights"/"Bias" entry ({"Type": "Int8", "Count": 864}).
int64_t weightEntryBytes(const json& entry) {
  if (!entry.is_object() || !entry.contains("Count") || !entry["Count"].is_number()) return 0;
  return entry["Count"].get<int64_t>() *
         elementBytes(precisionOfFormat(text(entry.value("Type", json("")))));
}

std::vector<ReportCandidate> candidatesFromJson(const json& list) {
  std::vector<ReportCandidate> out;
  for (const json& c : list) {
    if (!c.is_object()) continue;
    ReportCandidate candidate;
    candidate.tactic = text(c.value("TacticName", json("")));
    candidate.source = text(c.value("Source", json("")));
    std::string precision = precisionOfFormat(text(c.value("Precision", json(""))));
    for (char& ch : precision) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    candidate.precision = precision;
    candidate.milliseconds = c.value("TimeMs", -1.0);
    candidate.fromCache = c.value("FromTimingCache", false);
    candidate.rejected = text(c.value("Rejected", json("")));
    candidate.detail = text(c.value("Detail", json("")));
    candidate.choice = text(c.value("Choice", json("")));
    out.push_back(std::move(candidate));
  }
  return out;
}

// Keys read into ReportLayer fields; every other key lands in `parameters` as text.
void readKnownKey(const std::string& key, const json& value, ReportLayer* l, bool* known) {
  *known = true;
  if (key == "LayerType")
    l->layerType = text(value);
  else if (key == "OpType")
    l->opType = text(value);
  else if (key == "TacticName")
    l->tactic = text(value);
  else if (key == "TacticValue")
    l->tacticValue = tacticValueText(value);
  else if (key == "TacticSource")
    l->tacticSource = text(value);
  else if (key == "Choice")
    l->choice = text(value);
  else if (key == "Precision")
    l->precision = precisionOfFormat(text(value));
  else if (key == "PrecisionReason")
    l->precisionReason = text(value);
  else if (key == "Fusion")
    l->fusion = value.is_null() ? "" : text(value);
  else if (key == "TimeMs" && value.is_number())
    l->milliseconds = value.get<double>();
  else if (key == "AverageMs" && value.is_number())
    l->averageMs = value.get<double>();
  else if (key == "Workspace" && value.is_number())
    l->workspaceBytes = value.get<int64_t>();
  else if (key == "Candidates" && value.is_array())
    l->candidates = candidatesFromJson(value);
  else if (key == "SourceNodes" && value.is_array())
    for (const json& n : value) l->sourceNodes.push_back(text(n));
  else if (key == "Parameters" && value.is_object())
    for (const auto& [k, v] : value.items()) l->parameters[k] = text(v);
  else if (key != "Name" && key != "Inputs" && key != "Outputs" && key != "Percentage" &&
           key != "OutputBytes")  // those are read elsewhere, or recomputed
    *known = false;
}

// Reformat, Shuffle and copies move data and compute nothing.
bool movesDataOnly(const ReportLayer& l) {
  static const std::set<std::string> kTypes = {"Reformat", "Shuffle", "NoOp", "Copy"};
  const auto parameterType = l.parameters.find("ParameterType");
  return kTypes.count(l.layerType) ||
         (parameterType != l.parameters.end() && kTypes.count(parameterType->second)) ||
         l.layerType.find("Copy") != std::string::npos;
}

// The precision a trtexec layer computes in, TensorRT's and TensorRT Engine Explorer's
// convention, not the type it writes. A layer with an INT8 (FP8) activation among its
// inputs or INT8 (FP8) weights ("Weights": {"Type": "Int8", ...}) computes in INT8
// (FP8): a QAT convolution with a fused dequantize writes FP16 or FP32 from INT8
// arithmetic. A Reformat, Shuffle or copy takes its output's type (a quantizing
// Reformat FP32 -> Int8 reads INT8). Any other layer computes in its first input's
// precision, or its output's when it has no typed input.
std::string computePrecision(const ReportLayer& l, const json& weights) {
  const auto first = [](const std::vector<ReportTensor>& tensors) {
    return tensors.empty() ? std::string() : precisionOfFormat(tensors[0].formatDatatype);
  };
  if (movesDataOnly(l)) {
    const std::string out = first(l.outputs);
    return out.empty() ? first(l.inputs) : out;
  }
  std::vector<std::string> operands;
  if (weights.is_object())
    operands.push_back(precisionOfFormat(text(weights.value("Type", json("")))));
  for (const ReportTensor& t : l.inputs) operands.push_back(precisionOfFormat(t.formatDatatype));
  for (const char* quantized : {"INT8", "FP8"})
    if (std::find(operands.begin(), operands.end(), quantized) != operands.end()) return quantized;
  const std::string in = first(l.inputs);
  return in.empty() ? first(l.outputs) : in;
}

ReportLayer layerFromJson(const json& j, int64_t* weightBytes) {
  ReportLayer l;
  l.name = j["Name"].get<std::string>();
  for (const json& t : j.value("Inputs", json::array())) l.inputs.push_back(tensorFromJson(t));
  for (const json& t : j.value("Outputs", json::array())) {
    l.outputs.push_back(tensorFromJson(t));
    l.outputBytes += tensorBytes(l.outputs.back());
  }
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    readKnownKey(key, value, &l, &known);
    if (!known) l.parameters[key] = text(value);
  }
  // A Precision key, where the export has one (Kiln's own JSON), wins.
  if (l.precision.empty()) l.precision = computePrecision(l, j.value("Weights", json()));
  if (l.sourceNodes.empty() && j.contains("Metadata"))
    l.sourceNodes = sourceNodesFromMetadata(text(j["Metadata"]));
  if (l.sourceNodes.empty()) l.sourceNodes = sourceNodesFromName(l.name);
  for (const char* key : {"Weights", "Bias"})
    if (j.contains(key))
      *weightBytes = std::max<int64_t>(*weightBytes, 0) + weightEntryBytes(j[key]);
  return l;
}

Result<ReportLayer> parseLayer(const json& j, size_t index, const std::string& title,
                               int64_t* weightBytes) {
  const std::string where = title + ": layer #" + std::to_string(index);
  if (j.is_string()) {
    ReportLayer l;  // layer-names-only verbosity: the name is all there is
    l.name = j.get<std::string>();
    l.sourceNodes = sourceNodesFromName(l.name);
    return l;
  }
  if (!j.is_object()) return parseError(where + " is neither an object nor a name");
  if (!j.contains("Name") || !j["Name"].is_string())
    return parseError(where + " has no \"Name\" string");
  try {
    return layerFromJson(j, weightBytes);
  } catch (const json::exception& e) {
    return parseError(where + " ('" + j["Name"].get<std::string>() + "'): " + e.what());
  }
}

// "1x3x224x224" ("?" for a dynamic dim, "[]" for a scalar or no dims).
std::string shapeText(const std::vector<int64_t>& dims) {
  if (dims.empty()) return "[]";
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += 'x';
    out += dims[i] < 0 ? std::string("?") : std::to_string(dims[i]);
  }
  return out;
}

std::string summaryOf(const EngineReport& report) {
  std::ostringstream out;
  out << report.origin << ": " << report.layers.size() << " layers, " << report.bindings.size()
      << " bindings";
  for (size_t i = 0; i < report.bindings.size(); ++i)
    out << (i ? ", " : " (") << report.bindings[i] << (i + 1 == report.bindings.size() ? ")" : "");
  if (!report.inspectorLayout.empty()) out << "\nlayout: " << report.inspectorLayout;
  for (const ReportIoTensor& t : report.ioTensors) {
    out << "\n  " << (t.ioMode.empty() ? "tensor" : t.ioMode) << " " << t.name << ": " << t.dataType
        << " " << shapeText(t.dimensions) << " (" << t.location
        << (t.shapeInference ? ", shape inference I/O" : "") << ")";
    for (size_t p = 0; p < t.profiles.size(); ++p)
      out << "\n    profile " << p << ": min " << shapeText(t.profiles[p].min) << " opt "
          << shapeText(t.profiles[p].opt) << " max " << shapeText(t.profiles[p].max)
          << (t.profiles[p].format.empty() ? "" : ", " + t.profiles[p].format);
  }
  std::map<std::string, int> mix;
  for (const ReportLayer& l : report.layers) ++mix[l.precision.empty() ? "?" : l.precision];
  out << "\nprecisions:";
  for (const auto& [name, count] : mix) out << " " << name << " " << count;
  if (report.weightBytes >= 0) {
    char line[96];
    std::snprintf(line, sizeof(line), "\nweights: %.2f MiB (the layers' Weights and Bias counts)",
                  static_cast<double>(report.weightBytes) / (1 << 20));
    out << line;
  }
  return out.str() + "\n";
}

double numberOr(const json& entry, const char* key, double fallback) {
  return entry.contains(key) && entry[key].is_number() ? entry[key].get<double>() : fallback;
}

}  // namespace

std::string precisionOfFormat(const std::string& text) {
  static const std::pair<const char*, const char*> kWords[] = {
      {"fp32", "FP32"},   {"float", "FP32"},   {"float32", "FP32"}, {"fp16", "FP16"},
      {"half", "FP16"},   {"float16", "FP16"}, {"bf16", "BF16"},    {"bfloat16", "BF16"},
      {"int8", "INT8"},   {"fp8", "FP8"},      {"fp4", "FP4"},      {"int4", "INT4"},
      {"int32", "INT32"}, {"int64", "INT64"},  {"uint8", "UINT8"},  {"bool", "BOOL"}};
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const auto& [spelling, precision] : kWords)
      if (word == spelling) return precision;
  }
  return "";
}

Result<EngineReport> reportFromTrtexecJson(const json& graph, const std::string& title) {
  if (!graph.is_object() || !graph.contains("Layers") || !graph["Layers"].is_array())
    return parseError(title + ": not a trtexec --exportLayerInfo export (no \"Layers\" array)");
  EngineReport report;
  report.title = title;
  report.origin = graph.contains("Origin") ? text(graph["Origin"]) : "trtexec export";
  report.backend = graph.contains("Backend") ? text(graph["Backend"]) : "tensorrt";
  const json& layers = graph["Layers"];
  for (size_t i = 0; i < layers.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(ReportLayer layer, parseLayer(layers[i], i, title, &report.weightBytes));
    report.layers.push_back(std::move(layer));
  }
  if (graph.contains("I/O Tensors") && graph["I/O Tensors"].is_array()) {
    report.inspectorLayout = "TensorRT 11.x";
    for (const json& t : graph["I/O Tensors"]) {
      report.ioTensors.push_back(ioTensorFromJson(t));
      report.bindings.push_back(report.ioTensors.back().name);
    }
  } else if (graph.contains("Bindings") && graph["Bindings"].is_array()) {
    report.inspectorLayout = "TensorRT 10.x";
    for (const json& b : graph["Bindings"]) report.bindings.push_back(text(b));
  }
  if (graph.contains("Warnings") && graph["Warnings"].is_array())
    for (const json& w : graph["Warnings"]) report.warnings.push_back(text(w));
  // Kiln's own reportJson documents carry these; trtexec's do not.
  if (graph.contains("WeightBytes") && graph["WeightBytes"].is_number())
    report.weightBytes = graph["WeightBytes"].get<int64_t>();
  if (graph.contains("ActivationBytes") && graph["ActivationBytes"].is_number())
    report.activationBytes = graph["ActivationBytes"].get<int64_t>();
  if (graph.contains("ProfileIterations") && graph["ProfileIterations"].is_number())
    report.profileIterations = graph["ProfileIterations"].get<int>();
  // `kiln inspect PLAN --json` names the plan's device: its roofs (measured or vendor).
  if (graph.contains("Device") && graph["Device"].is_string())
    report.device = graph["Device"].get<std::string>();
  report.summary = graph.contains("Summary") ? text(graph["Summary"]) : summaryOf(report);
  updateShares(&report);
  return report;
}

Status applyProfile(const json& profile, EngineReport* report) {
  if (!profile.is_array())
    return parseError("not a trtexec --exportProfile document (expected a JSON array)");
  std::map<std::string, size_t> byName;
  for (size_t i = 0; i < report->layers.size(); ++i) byName.emplace(report->layers[i].name, i);
  // A layer the profile does not time is untimed: build timings never mix with profile times.
  for (ReportLayer& l : report->layers) {
    l.milliseconds = l.averageMs = -1;
    l.profiledImplementation.clear();
  }
  int count = 0;
  for (size_t i = 0; i < profile.size(); ++i) {
    const json& entry = profile[i];
    const std::string where = "profile entry #" + std::to_string(i);
    if (!entry.is_object()) return parseError(where + " is not an object");
    if (!entry.contains("name") && entry.contains("count")) {
      count = static_cast<int>(numberOr(entry, "count", 0));
      continue;
    }
    if (!entry.contains("name") || !entry["name"].is_string())
      return parseError(where + " has no \"name\" string");
    const std::string name = entry["name"].get<std::string>();
    auto found = byName.find(name);
    if (found == byName.end())
      return notFound("profile names layer '" + name + "', which the engine graph lacks");
    ReportLayer& layer = report->layers[found->second];
    layer.averageMs = numberOr(entry, "averageMs", -1);
    const double total = numberOr(entry, "timeMs", -1);
    const double mean = layer.averageMs >= 0      ? layer.averageMs
                        : total >= 0 && count > 0 ? total / count
                                                  : -1;
    layer.milliseconds = numberOr(entry, "medianMs", mean);
    if (entry.contains("implementation") && entry["implementation"].is_string())
      layer.profiledImplementation = entry["implementation"].get<std::string>();
  }
  report->profileIterations = count;
  // Shares are recomputed from the medians (the profile's own percentages are shares
  // of the summed times), so the % column always matches the time column.
  updateShares(report);
  return Status::ok();
}

Result<EngineReport> reportFromTrtexec(const std::string& graphJsonPath,
                                       const std::string& profileJsonPath) {
  KILN_ASSIGN_OR_RETURN(json graph, readJsonFile(graphJsonPath));
  KILN_ASSIGN_OR_RETURN(EngineReport report, reportFromTrtexecJson(graph, graphJsonPath));
  report.title = std::filesystem::path(graphJsonPath).filename().string();
  if (!profileJsonPath.empty()) KILN_RETURN_IF_ERROR(applyProfileFile(profileJsonPath, &report));
  return report;
}

Status applyProfileFile(const std::string& profileJsonPath, EngineReport* report) {
  KILN_ASSIGN_OR_RETURN(json profile, readJsonFile(profileJsonPath));
  KILN_RETURN_IF_ERROR_CTX(applyProfile(profile, report), profileJsonPath);
  char line[160];
  std::snprintf(line, sizeof(line),
                "profile: %d iterations, %.4f ms per inference (sum of the layers' medians)\n",
                report->profileIterations, report->totalMs);
  report->summary += line;
  return Status::ok();
}

}  // namespace kiln::inspector
