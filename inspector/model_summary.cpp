#include "model_summary.h"

#include <cstdio>

#include "flops.h"
#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"

namespace kiln::inspector {
namespace {

nlohmann::json valueJson(const std::string& name, const InferredValue* v,
                         const ValueInfo* declared) {
  nlohmann::json j = {{"name", name}};
  DataType type = v ? v->type : declared ? declared->type : DataType::kUndefined;
  j["dtype"] = dataTypeName(type);
  const SymbolicShape* shape = v && v->hasShape                 ? &v->shape
                               : declared && declared->hasShape ? &declared->shape
                                                                : nullptr;
  if (shape) {
    nlohmann::json dims = nlohmann::json::array();
    for (const DimExpr& d : *shape) {
      if (d.isConst())
        dims.push_back(d.constValue());
      else
        dims.push_back(d.toString());
    }
    j["shape"] = dims;
  } else {
    j["shape"] = nullptr;
  }
  return j;
}

std::string shapeText(const nlohmann::json& shape) {
  if (shape.is_null()) return "?";
  if (shape.empty()) return "scalar";
  std::string s;
  for (const auto& d : shape)
    s += (s.empty() ? "" : "x") +
         (d.is_string() ? d.get<std::string>() : std::to_string(d.get<int64_t>()));
  return s;
}

}  // namespace

Result<nlohmann::json> summarizeModel(const Network& network,
                                      const std::map<std::string, Shape>& inputShapes) {
  KILN_ASSIGN_OR_RETURN(ShapeInferenceResult shapes, inferShapes(network, inputShapes));
  const Graph& g = network.graph;
  nlohmann::json j;
  // Every key formatModelSummary reads is present, empty where the model has none
  // (a model with no graph inputs, such as ONNX's test_constant).
  j["opsets"] = nlohmann::json::object();
  j["inputs"] = nlohmann::json::array();
  j["outputs"] = nlohmann::json::array();
  j["model"] = network.sourcePath;
  j["ir_version"] = network.irVersion;
  j["producer"] =
      network.producerName + (network.producerVersion.empty() ? "" : " " + network.producerVersion);
  for (const auto& [domain, version] : network.opsets)
    j["opsets"][domain.empty() ? "ai.onnx" : domain] = version;
  for (const ValueInfo& in : g.inputs) {
    auto it = shapes.values.find(in.name);
    j["inputs"].push_back(
        valueJson(in.name, it == shapes.values.end() ? nullptr : &it->second, &in));
  }
  for (const ValueInfo& out : g.outputs) {
    auto it = shapes.values.find(out.name);
    j["outputs"].push_back(
        valueJson(out.name, it == shapes.values.end() ? nullptr : &it->second, &out));
  }
  std::map<std::string, int> histogram;
  double flops = 0;
  bool flopsKnown = true;
  for (const Node& node : g.nodes) {
    ++histogram[(node.domain.empty() ? "" : node.domain + ".") + node.opType];
    auto f = nodeFlops(node, shapes);
    if (f)
      flops += *f;
    else
      flopsKnown = false;
  }
  j["node_count"] = g.nodes.size();
  j["op_histogram"] = histogram;
  j["parameters"] = g.parameterCount();
  j["parameter_bytes"] = g.parameterBytes();
  j["flops"] = flopsKnown ? nlohmann::json(flops) : nlohmann::json(nullptr);
  j["shape_unresolved"] = shapes.unresolved;
  j["unsupported_nodes"] = findUnsupportedNodes(network);
  return j;
}

std::string formatModelSummary(const nlohmann::json& summary) {
  // A key missing from `summary` reads as null, never as operator[] on a const object
  // (undefined behaviour: an abort).
  nlohmann::json j = summary;
  for (const char* key : {"opsets", "op_histogram"})
    if (!j.contains(key)) j[key] = nlohmann::json::object();
  for (const char* key : {"inputs", "outputs", "unsupported_nodes", "shape_unresolved"})
    if (!j.contains(key)) j[key] = nlohmann::json::array();
  std::string s;
  char buf[512];
  s += "model:      " + escapeControlCharacters(j["model"].get<std::string>()) + "\n";
  s += "producer:   " + escapeControlCharacters(j["producer"].get<std::string>()) + "\n";
  s += "ir version: " + std::to_string(j["ir_version"].get<int64_t>()) + "\n";
  s += "opsets:    ";
  for (const auto& [domain, version] : j["opsets"].items())
    s += " " + domain + "=" + std::to_string(version.get<int>());
  s += "\ninputs:\n";
  for (const auto& in : j["inputs"]) {
    std::snprintf(buf, sizeof buf, "  %-28s %-8s %s\n",
                  escapeControlCharacters(in["name"].get<std::string>()).c_str(),
                  in["dtype"].get<std::string>().c_str(), shapeText(in["shape"]).c_str());
    s += buf;
  }
  s += "outputs:\n";
  for (const auto& out : j["outputs"]) {
    std::snprintf(buf, sizeof buf, "  %-28s %-8s %s\n",
                  escapeControlCharacters(out["name"].get<std::string>()).c_str(),
                  out["dtype"].get<std::string>().c_str(), shapeText(out["shape"]).c_str());
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "nodes:      %zu\nparameters: %lld (%.2f MB)\n",
                j["node_count"].get<size_t>(),
                static_cast<long long>(j["parameters"].get<int64_t>()),
                j["parameter_bytes"].get<int64_t>() / 1e6);
  s += buf;
  if (j["flops"].is_null())
    s += "FLOPs:      unknown (dynamic shapes: give --shapes)\n";
  else {
    std::snprintf(buf, sizeof buf, "FLOPs:      %.4g GFLOP\n", j["flops"].get<double>() / 1e9);
    s += buf;
  }
  s += "op histogram:\n";
  for (const auto& [op, count] : j["op_histogram"].items()) {
    std::snprintf(buf, sizeof buf, "  %-28s %d\n", escapeControlCharacters(op).c_str(),
                  count.get<int>());
    s += buf;
  }
  if (!j["unsupported_nodes"].empty()) {
    s += "unsupported nodes:\n";
    for (const auto& n : j["unsupported_nodes"])
      s += "  " + escapeControlCharacters(n.get<std::string>()) + "\n";
  }
  if (!j["shape_unresolved"].empty()) {
    s += "shapes not inferred (" + std::to_string(j["shape_unresolved"].size()) +
         " nodes), first:\n";
    s += "  " + escapeControlCharacters(j["shape_unresolved"][0].get<std::string>()) + "\n";
  }
  return s;
}

}  // namespace kiln::inspector
