#include "cli/debug_report.h"

#include <cstdio>

namespace kiln::cli {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

nlohmann::json trialJson(const compare::TacticTrial& t) {
  return {{"layer", t.layer},         {"onnx_nodes", t.sourceNodes},  {"tactic", t.tactic},
          {"precision", t.precision}, {"baseline", t.baseline},       {"pass", t.pass},
          {"max_abs", t.maxAbs},      {"worst_output", t.worstOutput}};
}

}  // namespace

std::string formatPrecisionStep(const compare::PrecisionDebugStep& step) {
  char buf[400];
  std::snprintf(buf, sizeof buf, "build %d: %s -> %s (max abs %.3g on '%s')", step.build,
                step.description.c_str(), step.pass ? "pass" : "FAIL", step.maxAbs,
                step.worstOutput.c_str());
  return buf;
}

std::string formatPrecisionDebug(const compare::PrecisionDebugResult& r, const std::string& model,
                                 const std::string& constraintsPath,
                                 const std::string& appliedPlan) {
  std::string text;
  char buf[300];
  std::snprintf(buf, sizeof buf, "%s: %d builds over %zu candidate layers\n", model.c_str(),
                r.builds, r.candidates.size());
  text += buf;
  if (r.reducedPasses) {
    text += "every float layer in reduced precision already meets the tolerance: keep none\n";
  } else {
    text += "keep in fp32 (" + std::to_string(r.keep.size()) + " layer" +
            (r.keep.size() == 1 ? "" : "s") + "):\n";
    for (const compare::DebugLayer& l : r.keep)
      text += "  " + l.name + "  (ONNX nodes: " + joined(l.sourceNodes) + ")\n";
    text += "ONNX nodes: " + joined(r.onnxNodes) + "\n";
  }
  text += "constraints: " + std::string(constraintModeName(r.constraints.mode)) + " " +
          layerPrecisionSpecToString(r.constraints.layerPrecisions) + "\n";
  if (!constraintsPath.empty())
    text += "written: " + constraintsPath + " (kiln build " + model + " --constraints " +
            constraintsPath + " -o PLAN.kiln)\n";
  if (!appliedPlan.empty()) text += "plan built with them: " + appliedPlan + "\n";
  return text;
}

nlohmann::json precisionDebugJson(const compare::PrecisionDebugResult& r,
                                  const std::string& model) {
  nlohmann::json candidates = nlohmann::json::array(), keep = nlohmann::json::array(),
                 steps = nlohmann::json::array(), outputs = nlohmann::json::array();
  for (const auto& l : r.candidates) candidates.push_back(l.name);
  for (const auto& l : r.keep) keep.push_back({{"layer", l.name}, {"onnx_nodes", l.sourceNodes}});
  for (const auto& s : r.steps)
    steps.push_back({{"build", s.build},
                     {"description", s.description},
                     {"fp32_layers", s.fp32Layers},
                     {"pass", s.pass},
                     {"max_abs", s.maxAbs},
                     {"worst_output", s.worstOutput}});
  for (const auto& o : r.outputs) outputs.push_back(compare::errorStatsJson(o, false));
  nlohmann::json rules = nlohmann::json::array();
  for (const LayerPrecisionRule& rule : r.constraints.layerPrecisions)
    rules.push_back({{"layer", rule.pattern}, {"precision", precisionSpelling(rule.precision)}});
  return {{"model", model},
          {"builds", r.builds},
          {"reduced_passes", r.reducedPasses},
          {"candidates", candidates},
          {"keep", keep},
          {"onnx_nodes", r.onnxNodes},
          {"steps", steps},
          {"constraints",
           {{"precision_constraints", constraintModeName(r.constraints.mode)},
            {"layer_precisions", rules}}},
          {"outputs", outputs}};
}

std::string formatTacticDebug(const compare::TacticDebugResult& r, const std::string& model) {
  std::string text;
  char buf[400];
  std::snprintf(buf, sizeof buf, "%s: %d builds; baseline %s (max abs %.3g)\n", model.c_str(),
                r.builds, r.baselinePass ? "passes" : "FAILS", r.baselineMaxAbs);
  text += buf;
  if (!r.trials.empty()) text += "forced tactics:\n";
  for (const compare::TacticTrial& t : r.trials) {
    std::snprintf(buf, sizeof buf, "  %-4s %-36.36s %-26s %s max abs %.3g%s\n",
                  t.pass ? "ok" : "BAD", t.layer.c_str(), t.tactic.c_str(), t.precision.c_str(),
                  t.maxAbs, t.baseline ? " (baseline)" : "");
    text += buf;
  }
  for (const compare::RebuildOutcome& b : r.rebuilds) {
    std::snprintf(buf, sizeof buf, "rebuild %d: %s, max abs %.3g, from the first %.3g\n",
                  b.index + 1, b.pass ? "pass" : "FAIL", b.maxAbs, b.maxAbsFromFirst);
    text += buf;
    for (const std::string& c : b.changedLayers) text += "    " + c + "\n";
  }
  if (!r.flakyLayers.empty())
    text += "tactic changed between builds: " + joined(r.flakyLayers) + "\n";
  text += r.bad.empty() ? std::string("no tactic misses the tolerance\n")
                        : std::to_string(r.bad.size()) + " tactic(s) miss the tolerance\n";
  return text;
}

nlohmann::json tacticDebugJson(const compare::TacticDebugResult& r, const std::string& model) {
  nlohmann::json trials = nlohmann::json::array(), bad = nlohmann::json::array(),
                 rebuilds = nlohmann::json::array();
  for (const auto& t : r.trials) trials.push_back(trialJson(t));
  for (const auto& t : r.bad) bad.push_back(trialJson(t));
  for (const auto& b : r.rebuilds)
    rebuilds.push_back({{"index", b.index},
                        {"pass", b.pass},
                        {"max_abs", b.maxAbs},
                        {"max_abs_from_first", b.maxAbsFromFirst},
                        {"changed_layers", b.changedLayers}});
  return {{"model", model},
          {"builds", r.builds},
          {"baseline", {{"pass", r.baselinePass}, {"max_abs", r.baselineMaxAbs}}},
          {"trials", trials},
          {"bad", bad},
          {"rebuilds", rebuilds},
          {"flaky_layers", r.flakyLayers}};
}

}  // namespace kiln::cli
