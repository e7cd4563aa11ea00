#include "engine_graph_onnx.h"

#include <map>
#include <set>

#include "kiln/file_io.h"
#include "kiln/onnx_export.h"

namespace kiln::inspector {
namespace {

// Sets attribute `key` of `n` in place (string, float or strings).
void setString(Node& n, const std::string& key, const std::string& value) {
  Attribute& a = n.attributes[key];
  a.kind = Attribute::Kind::kString;
  a.s = value;
}

void setFloat(Node& n, const std::string& key, double value) {
  Attribute& a = n.attributes[key];
  a.kind = Attribute::Kind::kFloat;
  a.f = static_cast<float>(value);
}

void setStrings(Node& n, const std::string& key, const std::vector<std::string>& values) {
  Attribute& a = n.attributes[key];
  a.kind = Attribute::Kind::kStrings;
  a.strings = values;
}

// The element type a "Format/Datatype" text names (kUndefined when none).
DataType typeOfFormat(const std::string& formatDatatype) {
  static const std::map<std::string, DataType> kTypes = {
      {"FP32", DataType::kFloat32}, {"FP16", DataType::kFloat16}, {"BF16", DataType::kBFloat16},
      {"INT8", DataType::kInt8},    {"FP8", DataType::kFp8E4M3},  {"INT32", DataType::kInt32},
      {"INT64", DataType::kInt64},  {"UINT8", DataType::kUInt8},  {"BOOL", DataType::kBool}};
  const auto it = kTypes.find(precisionOfFormat(formatDatatype));
  return it == kTypes.end() ? DataType::kUndefined : it->second;
}

ValueInfo valueInfoOf(const ReportTensor& t) {
  ValueInfo v;
  v.name = t.name;
  v.type = typeOfFormat(t.formatDatatype);
  v.hasShape = !t.dimensions.empty();
  for (int64_t d : t.dimensions) v.shape.push_back(d < 0 ? DimExpr::symbol("?") : DimExpr(d));
  return v;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    out += (i ? ", " : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  return out + "]";
}

}  // namespace

Network engineGraphNetwork(const EngineReport& report) {
  Network net;
  net.opsets[""] = 17;
  net.opsets[kEngineGraphDomain] = 1;
  net.producerName = "kiln engine graph";
  Graph& g = net.graph;
  g.name = (report.title.empty() ? std::string("engine") : report.title) + " (engine layers)";
  std::set<std::string> produced;
  std::map<std::string, const ReportTensor*> tensors;
  for (const ReportLayer& l : report.layers) {
    for (const ReportTensor& t : l.outputs) {
      produced.insert(t.name);
      tensors.emplace(t.name, &t);
    }
    for (const ReportTensor& t : l.inputs) tensors.emplace(t.name, &t);
  }
  const std::set<std::string> bound(report.bindings.begin(), report.bindings.end());
  std::set<std::string> declared;
  for (const std::string& name : report.bindings) {
    const auto it = tensors.find(name);
    ValueInfo v = it != tensors.end() ? valueInfoOf(*it->second) : ValueInfo{name};
    v.name = name;
    (produced.count(name) ? g.outputs : g.inputs).push_back(v);
    declared.insert(name);
  }
  std::set<std::string> names;
  for (size_t i = 0; i < report.layers.size(); ++i) {
    const ReportLayer& l = report.layers[i];
    Node n;
    n.name = l.name.empty() ? "layer_" + std::to_string(i) : l.name;
    while (!names.insert(n.name).second) n.name += "'";  // ONNX wants distinct names
    n.opType = l.layerType.empty() ? "Layer" : l.layerType;
    n.domain = kEngineGraphDomain;
    n.opset = 1;
    std::vector<std::string> weights;
    for (const ReportTensor& t : l.inputs) {
      if (produced.count(t.name) || bound.count(t.name))
        n.inputs.push_back(t.name);
      else
        weights.push_back(t.name + " " + dimsText(t.dimensions));
    }
    for (const ReportTensor& t : l.outputs) n.outputs.push_back(t.name);
    if (!l.precision.empty()) setString(n, "precision", l.precision);
    if (!l.precisionReason.empty()) setString(n, "precision_reason", l.precisionReason);
    if (!l.tactic.empty()) setString(n, "tactic", l.tactic);
    if (!l.tacticValue.empty()) setString(n, "tactic_value", l.tacticValue);
    if (!l.tacticSource.empty()) setString(n, "tactic_source", l.tacticSource);
    if (l.milliseconds >= 0) setFloat(n, "time_ms", l.milliseconds);
    if (l.percentage >= 0) setFloat(n, "percentage", l.percentage);
    if (!l.sourceNodes.empty()) setStrings(n, "source_nodes", l.sourceNodes);
    if (!l.fusion.empty()) setString(n, "fusion", l.fusion);
    if (!weights.empty()) setStrings(n, "weights", weights);
    for (const auto& [key, value] : l.parameters) setString(n, "param:" + key, value);
    for (const ReportTensor& t : l.outputs)
      if (declared.insert(t.name).second) g.valueInfo[t.name] = valueInfoOf(t);
    g.nodes.push_back(std::move(n));
  }
  return net;
}

Status exportEngineGraphOnnx(const EngineReport& report, const std::string& path) {
  KILN_ASSIGN_OR_RETURN(const std::string bytes, exportOnnxBytes(engineGraphNetwork(report)));
  return writeFileAtomically(path, bytes, "the engine graph");
}

}  // namespace kiln::inspector
