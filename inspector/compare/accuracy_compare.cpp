#include "compare/accuracy_compare.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace kiln::compare {
namespace {

std::vector<std::string> outputNames(const ModelRunner& side) {
  std::vector<std::string> names;
  for (const ValueInfo& v : side.network().graph.outputs) names.push_back(v.name);
  return names;
}

Status checkSameOutputs(const ModelRunner& a, const ModelRunner& b) {
  const std::vector<std::string> namesA = outputNames(a), namesB = outputNames(b);
  const std::set<std::string> setB(namesB.begin(), namesB.end());
  for (const std::string& name : namesA) {
    if (!setB.count(name))
      return invalidArgument("output '" + name + "' of A is not an output of B (" +
                             b.description() + ")");
  }
  if (namesA.size() != namesB.size())
    return invalidArgument("B has " + std::to_string(namesB.size()) + " outputs, A has " +
                           std::to_string(namesA.size()));
  return Status::ok();
}

std::map<std::string, const ExposedTensor*> byName(const std::vector<ExposedTensor>& tensors) {
  std::map<std::string, const ExposedTensor*> index;
  for (const ExposedTensor& t : tensors) index[t.name] = &t;
  return index;
}

// Tensors of `from` that `other` lacks, with the layer of `other` that holds the
// ONNX nodes of their producer.
void listFusedAway(const std::vector<ExposedTensor>& from, const std::string& side,
                   const std::map<std::string, const ExposedTensor*>& other,
                   const std::map<std::string, std::string>& otherLayerOfNode,
                   std::vector<FusedAwayTensor>* out) {
  for (const ExposedTensor& t : from) {
    if (other.count(t.name)) continue;
    std::string fusedInto;
    for (const std::string& node : t.sourceNodes) {
      auto it = otherLayerOfNode.find(node);
      if (it != otherLayerOfNode.end()) {
        fusedInto = it->second;
        break;
      }
    }
    out->push_back({t.name, side, t.layer, fusedInto});
  }
}

std::map<std::string, Tensor> toMap(std::vector<NamedTensor>& tensors) {
  std::map<std::string, Tensor> map;
  for (NamedTensor& t : tensors) map[t.name] = std::move(t.tensor);
  return map;
}

}  // namespace

Result<AccuracyReport> compareAccuracy(ModelRunner& a, ModelRunner& b,
                                       const std::vector<std::map<std::string, Tensor>>& inputSets,
                                       const CompareOptions& options) {
  if (inputSets.empty()) return invalidArgument("no input sets to compare on");
  KILN_RETURN_IF_ERROR(checkSameOutputs(a, b));
  AccuracyReport report;
  report.sideA = a.description();
  report.sideB = b.description();
  report.tolerance = options.tolerance;
  report.runs = static_cast<int>(inputSets.size());
  report.perTensor = options.perTensor;

  const std::vector<ExposedTensor> exposedA = a.intermediates(), exposedB = b.intermediates();
  const auto indexA = byName(exposedA), indexB = byName(exposedB);
  std::vector<const ExposedTensor*> common;  // A's order
  if (options.perTensor) {
    if (exposedA.empty() || exposedB.empty()) {
      report.perTensorNote = std::string(exposedA.empty() ? "A" : "B") +
                             " exposes no intermediate tensors (" +
                             (exposedA.empty() ? report.sideA : report.sideB) + ")";
    } else {
      for (const ExposedTensor& t : exposedA)
        if (indexB.count(t.name)) common.push_back(&t);
      listFusedAway(exposedA, "A", indexB, b.layerOfNode(), &report.fusedAway);
      listFusedAway(exposedB, "B", indexA, a.layerOfNode(), &report.fusedAway);
    }
  }
  std::vector<std::string> extra;
  for (const ExposedTensor* t : common) extra.push_back(t->name);

  const std::vector<std::string> outputs = outputNames(a);
  std::vector<ErrorAccumulator> outputStats, tensorStats;
  for (const std::string& name : outputs)
    outputStats.emplace_back(name, options.tolerance, options.topK);
  for (const std::string& name : extra) tensorStats.emplace_back(name, options.tolerance, 0);

  for (size_t run = 0; run < inputSets.size(); ++run) {
    if (options.onProgress) options.onProgress(static_cast<int>(run), report.runs);
    std::vector<NamedTensor> rawA, rawB;
    KILN_RETURN_IF_ERROR(a.run(inputSets[run], extra, &rawA));
    KILN_RETURN_IF_ERROR(b.run(inputSets[run], extra, &rawB));
    std::map<std::string, Tensor> valuesA = toMap(rawA), valuesB = toMap(rawB);
    for (size_t i = 0; i < outputs.size(); ++i)
      outputStats[i].add(valuesA.at(outputs[i]), valuesB.at(outputs[i]));
    for (size_t i = 0; i < extra.size(); ++i)
      tensorStats[i].add(valuesA.at(extra[i]), valuesB.at(extra[i]));
  }

  for (ErrorAccumulator& acc : outputStats) {
    report.outputs.push_back(acc.finish());
    report.pass = report.pass && report.outputs.back().pass;
  }
  for (size_t i = 0; i < common.size(); ++i) {
    ComparedTensor compared;
    compared.stats = tensorStats[i].finish();
    const ExposedTensor& inB = *indexB.at(common[i]->name);
    compared.layerA = common[i]->layer;
    compared.layerB = inB.layer;
    compared.sourceNodes = common[i]->sourceNodes;
    for (const std::string& node : inB.sourceNodes)
      if (std::find(compared.sourceNodes.begin(), compared.sourceNodes.end(), node) ==
          compared.sourceNodes.end())
        compared.sourceNodes.push_back(node);
    if (report.firstDivergent < 0 && !compared.stats.pass)
      report.firstDivergent = static_cast<int>(report.intermediates.size());
    report.intermediates.push_back(std::move(compared));
  }
  return report;
}

nlohmann::json accuracyReportJson(const AccuracyReport& r, bool withPlots) {
  nlohmann::json j = {{"a", r.sideA},
                      {"b", r.sideB},
                      {"tolerance", {{"atol", r.tolerance.atol}, {"rtol", r.tolerance.rtol}}},
                      {"runs", r.runs},
                      {"pass", r.pass}};
  j["outputs"] = nlohmann::json::array();
  for (const ErrorStats& s : r.outputs) j["outputs"].push_back(errorStatsJson(s, withPlots));
  if (!r.perTensor) return j;
  j["intermediates"] = nlohmann::json::array();
  for (const ComparedTensor& t : r.intermediates) {
    nlohmann::json entry = errorStatsJson(t.stats, false);
    entry["layer_a"] = t.layerA;
    entry["layer_b"] = t.layerB;
    entry["onnx_nodes"] = t.sourceNodes;
    j["intermediates"].push_back(entry);
  }
  if (r.firstDivergent >= 0) {
    const ComparedTensor& t = r.intermediates[r.firstDivergent];
    j["first_divergence"] = {{"tensor", t.stats.name},
                             {"layer_a", t.layerA},
                             {"layer_b", t.layerB},
                             {"onnx_nodes", t.sourceNodes},
                             {"max_abs", t.stats.maxAbs}};
  } else {
    j["first_divergence"] = nullptr;
  }
  j["fused_away"] = nlohmann::json::array();
  for (const FusedAwayTensor& f : r.fusedAway)
    j["fused_away"].push_back({{"tensor", f.tensor},
                               {"present_in", f.presentIn},
                               {"producer", f.producer},
                               {"fused_into", f.fusedInto}});
  if (!r.perTensorNote.empty()) j["per_tensor_note"] = r.perTensorNote;
  return j;
}

std::string formatAccuracyReport(const AccuracyReport& r) {
  std::string text = "A: " + r.sideA + "\nB: " + r.sideB + " (expected)\n";
  char buf[200];
  std::snprintf(buf, sizeof buf, "tolerance: atol %g, rtol %g; %d input set%s\n", r.tolerance.atol,
                r.tolerance.rtol, r.runs, r.runs == 1 ? "" : "s");
  text += buf;
  size_t width = 8;
  for (const ErrorStats& s : r.outputs) width = std::max(width, s.name.size());
  text += "outputs:\n";
  for (const ErrorStats& s : r.outputs) {
    text += "  " + formatErrorStatsLine(s, width) + "\n";
    if (!s.pass) text += "    " + s.reason + "\n";
  }
  if (r.perTensor) {
    if (!r.perTensorNote.empty()) text += "intermediates: " + r.perTensorNote + "\n";
    size_t failing = 0, nameWidth = 8;
    for (const ComparedTensor& t : r.intermediates) {
      failing += !t.stats.pass;
      nameWidth = std::max(nameWidth, std::min<size_t>(t.stats.name.size(), 40));
    }
    std::snprintf(buf, sizeof buf, "intermediates: %zu compared, %zu outside the tolerance\n",
                  r.intermediates.size(), failing);
    if (r.perTensorNote.empty()) text += buf;
    for (const ComparedTensor& t : r.intermediates)
      text += "  " + formatErrorStatsLine(t.stats, nameWidth) + "  [" + t.layerA + "]\n";
    if (r.firstDivergent >= 0) {
      const ComparedTensor& t = r.intermediates[r.firstDivergent];
      std::string nodes;
      for (const std::string& n : t.sourceNodes) nodes += (nodes.empty() ? "" : ", ") + n;
      text += "first divergence: tensor '" + t.stats.name + "' written by layer '" + t.layerA +
              "' (A) / '" + t.layerB + "' (B); ONNX nodes: " + nodes + "\n";
    }
    if (!r.fusedAway.empty()) {
      text += "not compared (fused away on one side): " + std::to_string(r.fusedAway.size()) +
              " tensors\n";
      constexpr size_t kShown = 20;  // the JSON report lists every one
      for (size_t i = 0; i < r.fusedAway.size() && i < kShown; ++i) {
        const FusedAwayTensor& f = r.fusedAway[i];
        text += "  " + f.tensor + ": only in " + f.presentIn + " (layer '" + f.producer + "')";
        if (!f.fusedInto.empty()) text += ", fused into '" + f.fusedInto + "'";
        text += "\n";
      }
      if (r.fusedAway.size() > kShown)
        text +=
            "  ... " + std::to_string(r.fusedAway.size() - kShown) + " more (--json lists all)\n";
    }
  }
  text += std::string("result: ") + (r.pass ? "PASS" : "FAIL") + " (every output " +
          (r.pass ? "within" : "must be within") + " the tolerance)\n";
  return text;
}

}  // namespace kiln::compare
