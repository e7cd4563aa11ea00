// The advisor's precision rules beyond TensorRT Engine Explorer's: precision islands
// whose boundaries cost reformat layers, and weights stored in a wider type than the
// layer computes in (advisor.h lists every rule; docs/advisor.md the thresholds).
#include <algorithm>
#include <map>
#include <set>

#include "advisor_rules.h"

namespace kiln::inspector::advice {
namespace {

// Compute layers an island is judged against: not data movement, not free.
bool computes(const ReportLayer& l) {
  return !movesData(l) && !isConstantLayer(l) && !l.precision.empty();
}

// Which layers write and read each tensor.
struct TensorEdges {
  std::map<std::string, size_t> producer;
  std::map<std::string, std::vector<size_t>> consumers;
  explicit TensorEdges(const EngineReport& report) {
    for (size_t i = 0; i < report.layers.size(); ++i) {
      for (const ReportTensor& t : report.layers[i].outputs) producer[t.name] = i;
      for (const ReportTensor& t : report.layers[i].inputs) consumers[t.name].push_back(i);
    }
  }
};

// The compute layers next to `layer`, upstream and downstream, walking through data
// movement layers; the type-changing data movement layers passed are the boundary's
// reformats.
void neighbours(const EngineReport& report, const TensorEdges& edges, size_t layer,
                std::set<size_t>* upstream, std::set<size_t>* downstream,
                std::set<size_t>* reformats) {
  std::vector<std::pair<size_t, bool>> stack;  // (layer, downstream)
  std::set<std::pair<size_t, bool>> seen;
  auto push = [&](size_t i, bool down) {
    if (seen.insert({i, down}).second) stack.push_back({i, down});
  };
  const ReportLayer& start = report.layers[layer];
  for (const ReportTensor& t : start.inputs)
    if (auto p = edges.producer.find(t.name); p != edges.producer.end()) push(p->second, false);
  for (const ReportTensor& t : start.outputs)
    if (auto c = edges.consumers.find(t.name); c != edges.consumers.end())
      for (size_t i : c->second) push(i, true);
  while (!stack.empty()) {
    const auto [i, down] = stack.back();
    stack.pop_back();
    const ReportLayer& l = report.layers[i];
    if (computes(l)) {
      (down ? downstream : upstream)->insert(i);
      continue;
    }
    if (!movesData(l)) continue;  // a constant: no boundary through it
    if (!l.inputs.empty() && !l.outputs.empty() &&
        tensorPrecision(l.inputs[0]) != tensorPrecision(l.outputs[0]))
      reformats->insert(i);
    if (down) {
      for (const ReportTensor& t : l.outputs)
        if (auto c = edges.consumers.find(t.name); c != edges.consumers.end())
          for (size_t next : c->second) push(next, true);
    } else {
      for (const ReportTensor& t : l.inputs)
        if (auto p = edges.producer.find(t.name); p != edges.producer.end()) push(p->second, false);
    }
  }
}

// The type a layer's weights are stored in, in TensorRT's capitals ("FP32"), and their
// element count: TensorRT exports' "Weights" ({"Type": "Float", "Count": 864}), Kiln
// plans' "weights NAME" parameters ("float32 x 655360"). "" when none is recorded.
std::vector<std::pair<std::string, int64_t>> storedWeights(const ReportLayer& l) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& [key, value] : l.parameters) {
    if (key == "Weights") {
      const auto doc = nlohmann::json::parse(value, nullptr, false);
      if (doc.is_object() && doc.contains("Type") && doc["Type"].is_string())
        out.push_back(
            {precisionOfFormat(doc["Type"].get<std::string>()), doc.value("Count", int64_t{0})});
    } else if (key.rfind("weights ", 0) == 0) {
      const size_t x = value.find(" x ");
      const std::string type = value.substr(0, x);
      const std::string spelled = type == "float32"    ? "FP32"
                                  : type == "float16"  ? "FP16"
                                  : type == "bfloat16" ? "BF16"
                                  : type == "int8"     ? "INT8"
                                                       : "";
      int64_t count = 0;
      if (x != std::string::npos) count = std::atoll(value.c_str() + x + 3);
      out.push_back({spelled, count});
    }
  }
  return out;
}

}  // namespace

void precisionIslands(const EngineReport& report, std::vector<Finding>* out) {
  const TensorEdges edges(report);
  for (size_t i = 0; i < report.layers.size(); ++i) {
    const ReportLayer& l = report.layers[i];
    if (!computes(l)) continue;
    std::set<size_t> upstream, downstream, reformats;
    neighbours(report, edges, i, &upstream, &downstream, &reformats);
    // Both sides, or a graph's first or last layer would be an "island" of its neighbour.
    if (upstream.empty() || downstream.empty() || reformats.empty()) continue;
    std::set<size_t> compute = upstream;
    compute.insert(downstream.begin(), downstream.end());
    const std::string around = report.layers[*compute.begin()].precision;
    const bool island = around != l.precision &&
                        std::all_of(compute.begin(), compute.end(),
                                    [&](size_t n) { return report.layers[n].precision == around; });
    if (!island) continue;
    std::vector<size_t> hit(reformats.begin(), reformats.end());
    Finding f = finding(
        report, "precision-island", AdviceSeverity::kWarning,
        "'" + l.name + "' computes in " + l.precision + " between " + around +
            " layers: " + counted(reformats.size(), "reformat converts", "reformats convert") +
            " its tensors at the boundary",
        hit,
        report.backend == "tensorrt" || report.origin == "trtexec export"
            ? "if it need not stay " + l.precision + ": trtexec --layerPrecisions='" + l.name +
                  "':" + asciiLower(around) +
                  " (TensorRT 10), or the ONNX's Casts moved (TensorRT 11: "
                  "kiln export-onnx --constraints F)"
            : "if it need not stay " + l.precision +
                  " (kiln debug precision MODEL.onnx tells): "
                  "--layer-precisions '" +
                  l.name + ":" + asciiLower(around) + "'");
    f.layers.insert(f.layers.begin(), l.name);  // the island first, then its reformats
    if (report.backend != "tensorrt" && report.origin != "trtexec export")
      for (const std::string& node :
           l.sourceNodes.empty() ? std::vector<std::string>{l.name} : l.sourceNodes)
        f.applyLayerPrecisions[node] = asciiLower(around);
    out->push_back(std::move(f));
  }
}

void weightsWiderThanCompute(const EngineReport& report, std::vector<Finding>* out) {
  std::vector<size_t> hits;
  int64_t extraBytes = 0;
  std::map<std::string, int> pairs;
  for (size_t i = 0; i < report.layers.size(); ++i) {
    const ReportLayer& l = report.layers[i];
    const int64_t computeBytes = elementBytes(l.precision);
    if (computeBytes == 0) continue;
    bool wider = false;
    for (const auto& [type, count] : storedWeights(l)) {
      const int64_t stored = elementBytes(type);
      if (stored <= computeBytes) continue;
      wider = true;
      extraBytes += count * (stored - computeBytes);
      ++pairs[type + " weights, " + l.precision + " layer"];
    }
    if (wider) hits.push_back(i);
  }
  if (hits.empty()) return;
  std::string kinds;
  for (const auto& [pair, count] : pairs)
    kinds += (kinds.empty() ? "" : ", ") + std::to_string(count) + " " + pair;
  char saved[64];
  std::snprintf(saved, sizeof(saved), "%.2f MiB", static_cast<double>(extraBytes) / (1 << 20));
  Finding f =
      finding(report, "weights-wider-than-compute", AdviceSeverity::kInfo,
              counted(hits.size(), "layer stores", "layers store") +
                  " weights in a wider type than it computes in (" + kinds + "): " + saved +
                  " more in the engine, converted to the compute type when it loads or runs",
              hits,
              "store the initializers in the compute type: kiln export-onnx MODEL.onnx "
              "--from PLAN -o TYPED.onnx, then build TYPED.onnx --strongly-typed");
  f.costMs = -1;  // a size, not a time
  out->push_back(std::move(f));
}

}  // namespace kiln::inspector::advice
